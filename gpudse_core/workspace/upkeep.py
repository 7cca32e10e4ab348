"""Leftovers of interrupted work on a server's workspace folder, removed when a server starts.

A fork or a new workspace is written to ``<id>.tmp`` and renamed into place, so a process killed
(or a disk that filled up) in between leaves the ``.tmp`` file; the built-in example's template is
built into a workspace of its own before the record naming it is written, so a kill there leaves a
second template workspace nobody uses. Nothing else would ever remove them: the dashboard calls
:func:`clean` once per server process, before it builds or uses the template.

Only files older than *age_s* are touched: another server process may be forking right now. (Copies
and template builds whose process is gone from this machine go sooner, at the next open or listing:
:mod:`gpudse_core.workspace.pending`.)
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from .db import WorkspaceError, home, workspaces_dir
from .pending import TEMPLATES, mark_template, template_built  # noqa: F401 - the template markers' home

AGE_S = 600.0


def clean(keep_template: str | None, root: str | Path | None = None, age_s: float = AGE_S,
          now: float | None = None) -> list[str]:
    """Remove ``.tmp`` leftovers and template workspaces other than *keep_template*, older than
    *age_s*; returns what was removed (file names and workspace ids)."""
    from .workspace import open_workspace

    now = time.time() if now is None else now
    removed: list[str] = []
    d = workspaces_dir(root)
    candidates = list(d.glob("*.tmp*")) if d.is_dir() else []
    candidates += list(home(root).glob("*.tmp"))
    for p in candidates:
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > age_s:
                p.unlink()
                removed.append(p.name)
    t = home(root) / TEMPLATES
    for marker in (list(t.iterdir()) if t.is_dir() else []):
        ws_id = marker.name
        try:
            if ws_id == keep_template or now - marker.stat().st_mtime <= age_s:
                continue
        except OSError:
            continue
        try:
            with open_workspace(ws_id, root=root, trusted=True) as ws:
                ws.delete()
            removed.append(ws_id)
        except WorkspaceError:
            pass  # already gone (or not a workspace any more): the marker goes either way
        with contextlib.suppress(OSError):
            os.unlink(marker)
    return removed
