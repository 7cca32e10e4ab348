"""A stage's kept versions on a page: what a replacement would change, and restoring an earlier one.

The workspace keeps the last few versions of every stage (``limits.workspace_history``);
:meth:`Workspace.restore` makes one current again as a new version with the same content, so what
was computed from that content (a model, an analysis) is current again. A careless upload must
never be the only copy: the page asks before replacing (:func:`replacement`) and offers the way
back (:func:`versions_expander`).
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from dashboard import frame as ui


def _when(created: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(created)) if created else "unknown time"


def replacement(current: Any, table: Any, response: str, source: str) -> str:
    """What replacing the results *current* (a StageValue) with *table* from *source* changes, in words."""
    old = current.value.table
    added = [c for c in table.columns if c not in old.columns]
    dropped = [c for c in old.columns if c not in table.columns]
    text = (f"This replaces the results in use — **version {current.version}**, from {ui.plain(current.origin)}: "
            f"{ui.fmt_count(len(old), 'rows')} × {ui.fmt_count(len(old.columns), 'columns')}, response "
            f"**{ui.plain(current.value.response)}** — with {ui.fmt_count(len(table), 'rows')} × "
            f"{ui.fmt_count(len(table.columns), 'columns')} of {ui.plain(source)}, response **{ui.plain(response)}**.")
    if added:
        text += " Columns added: " + ", ".join(ui.plain(c) for c in added) + "."
    if dropped:
        text += " Columns dropped: " + ", ".join(ui.plain(c) for c in dropped) + "."
    return text + " The version replaced stays kept: restore it under **Versions** below."


def versions_expander(w: Any, stage: str) -> None:
    """A "Versions" expander listing the kept versions of *stage* (newest first) with a Restore button each."""
    kept = [v for v in reversed(w.history(stage)) if not v.removed]
    if len(kept) < 2 and all(v.head for v in kept):
        return  # nothing to go back to
    with st.expander(f"Versions ({len(kept)} kept)", icon=":material/history:"):
        st.caption(f"The workspace keeps the last versions of the {stage}; restoring one makes it the current "
                   "version again (what was computed from it is current again).")
        for v in kept:
            a, b = st.columns([5, 1], vertical_alignment="center")
            a.markdown(f"**v{v.version}** · {ui.plain(v.origin) or 'unknown origin'} · {_when(v.created)}"
                       + (" · *partial*" if v.partial else ""))
            if v.head:
                b.caption(":material/check: current")
            elif b.button("Restore", key=f"restore_{stage}_{v.version}", disabled=not w.writable) and ui.guarded(
                    lambda v=v: w.restore(stage, v.version), f"Version {v.version} of the {stage} is current again."):
                st.rerun()
