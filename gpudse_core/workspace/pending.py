"""Workspace copies being written: named so that they can be recognised, counted and cleaned.

A fork (a first visit's copy of the example, "Make my own copy") or a new workspace is written to a
temporary file and renamed into place. A process killed mid-copy leaves that file behind — 6 MB a
kill for a copy of the example — so its name says what it is and whose it is::

    workspaces/<new id>.<fork|new>.<host>.<pid>.<client>.tmp

*host* is a short hash of the machine's name, *pid* the writing process, *client* a short hash of the
client the copy is counted against (:mod:`visitors`; ``-`` for none). Such a file

* is counted against its client's hourly budget (:func:`pending_copies`) and the server's
  ``workspaces`` limit while it exists, so repeated kills cannot fill the disk unseen;
* is removed at the next open or listing (:func:`sweep`) once its process is gone from this host,
  without waiting for a server restart (another host's files are left to the age-based
  :func:`upkeep.clean`).

The built-in example's template is built in a workspace of its own; its marker
(``$GPUDSE_HOME/templates/<id>``) says ``building <host> <pid>`` until the build finishes and
``built`` after. A template still building is never listed, and one whose builder is gone is deleted
at the next listing (:func:`dead_templates`).

``GPUDSE_TEST_PAUSE_AT=fork-copy`` (tests only, with ``GPUDSE_TEST_PAUSE_WRITE``, see
:mod:`gpudse_core.atomicfile`) pauses a fork half-way through its copy so that a test can kill it there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import time
from pathlib import Path

from .db import home, workspaces_dir

TEMPLATES = "templates"  # $GPUDSE_HOME/templates/<id>: every template workspace ever started
SWEEP_EVERY_S = 1.0  # an open or listing sweeps a folder at most this often (per process)
_swept: dict[str, float] = {}


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


HOST = _short(socket.gethostname())


def client_tag(client: str | None) -> str:
    return _short(client) if client else "-"


def tmp_path(directory: Path, ws_id: str, kind: str, client: str | None = None) -> Path:
    """Where a new workspace file is written before it is renamed to ``<id>.db``."""
    return directory / f"{ws_id}.{kind}.{HOST}.{os.getpid()}.{client_tag(client)}.tmp"


def _parts(p: Path) -> tuple[str, int, str] | None:
    """(host, pid, client tag) of a temporary workspace file (any of its SQLite side files), or None
    for a name of another form (an older ``<id>.tmp``)."""
    bits = p.name.split(".")
    if len(bits) < 6 or not bits[5].startswith("tmp") or bits[1] not in ("fork", "new") or not bits[3].isdigit():
        return None
    return bits[2], int(bits[3]), bits[4]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _gone(host: str, pid: int) -> bool:
    return host == HOST and pid != os.getpid() and not alive(pid)


def sweep(root: str | Path | None = None, force: bool = False) -> list[str]:
    """Remove temporary workspace files whose writing process is gone from this host; returns their names."""
    d = workspaces_dir(root)
    now = time.monotonic()
    if not force and now - _swept.get(str(d), -1e9) < SWEEP_EVERY_S:
        return []
    _swept[str(d)] = now
    removed = []
    for p in (d.glob("*.tmp*") if d.is_dir() else []):
        parts = _parts(p)
        if parts and _gone(parts[0], parts[1]):
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p.name)
    return removed


def pending_copies(client: str | None = None, root: str | Path | None = None) -> int:
    """Temporary workspace files (of *client*, or of everyone) that exist now: copies being written,
    or left by a killed process and not yet swept."""
    d = workspaces_dir(root)
    if not d.is_dir():
        return 0
    tag = client_tag(client) if client is not None else None
    n = 0
    for p in d.glob("*.tmp"):
        parts = _parts(p)
        if parts and (tag is None or parts[2] == tag):
            n += 1
    return n


# ---- template builds ------------------------------------------------------------------------------
def mark_template(ws_id: str, root: str | Path | None = None) -> None:
    """Note that workspace *ws_id* is being built as a template (by this process)."""
    d = home(root) / TEMPLATES
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    (d / ws_id).write_text(f"building {HOST} {os.getpid()}")


def template_built(ws_id: str, root: str | Path | None = None) -> None:
    """The template *ws_id* is complete: it may be listed (and is kept while in use)."""
    (home(root) / TEMPLATES / ws_id).write_text("built")


def building_templates(root: str | Path | None = None) -> dict[str, bool]:
    """{id: its builder is gone from this host} for templates whose build has not finished."""
    t = home(root) / TEMPLATES
    out = {}
    for marker in (t.iterdir() if t.is_dir() else []):
        try:
            words = marker.read_text()[:200].split()
        except OSError:
            continue
        if words[:1] == ["building"]:
            gone = len(words) == 3 and words[2].isdigit() and _gone(words[1], int(words[2]))
            out[marker.name] = gone
    return out


def forget_template(ws_id: str, root: str | Path | None = None) -> None:
    with contextlib.suppress(OSError):
        os.unlink(home(root) / TEMPLATES / ws_id)
