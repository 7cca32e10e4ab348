"""A tab learns that another tab or session changed its workspace.

Every change of a workspace raises its revision counter (SQLite, :attr:`Workspace.revision`), and a
handle knows the revisions it made itself, and the jobs it started (:meth:`Workspace.changes_since`).
The session remembers the revision each page run drew (:func:`note`, at the top of every page):

* on the next run, changes another tab, session or the CLI stored meanwhile are named at the top of the
  page, which now shows them; an action pressed on the older view writes nothing (:func:`acted_on`, the
  handle's ``guard`` while ``frame.guarded`` runs it), so one tab never silently overwrites another's change;
* between runs, a cheap poll (:func:`watch`, a fragment reading one row every few seconds) shows the
  same notice on a page left open, with a Reload button.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from gpudse_core import GpudseError
from gpudse_core.fmt import fmt_duration
from gpudse_core.report import plaintext
from gpudse_core.workspace import stages

from . import state as ui_state

SEEN = "_gpudse_seen"  # session_state: {workspace id: the revision the last page run drew}
FRESH = "_gpudse_changed"  # session_state: (workspace id, revision drawn before, changes) found by this run
POLL_S = 5.0  # the poll's interval: one small read, not a rerun of the page
SHOWN = 4  # changes named in a notice; more are counted


def note(w: Any) -> list:
    """At the top of a page run: what other handles changed since this session last drew *w*; from
    now on the page draws the current revision."""
    ss = st.session_state
    seen = ss.setdefault(SEEN, {})
    ss[FRESH] = None  # an earlier run's finding never guards this run's actions
    try:
        now = w.revision
        before = seen.get(w.id)
        changes = w.changes_since(before) if before is not None and before < now else []
    except GpudseError:  # deleted meanwhile: bind() says so on the next run
        return []
    seen[w.id] = now
    ss[FRESH] = (w.id, before, changes)
    return changes


def describe(changes: list, now: float | None = None) -> str:
    """The changes in words, as Markdown (origins are user text): 'the model (v5, stepwise …, 12 s ago)'."""
    now = time.time() if now is None else now
    parts = []
    for c in changes[:SHOWN]:
        if c.version is None:
            parts.append("a kept version made current again")
            continue
        origin = plaintext.markdown(c.origin[:80] + ("…" if len(c.origin) > 80 else "")) if c.origin else ""
        ago = f"{fmt_duration(max(0.0, now - c.created))} ago" if c.created is not None else ""
        detail = ", ".join(x for x in (f"v{c.version}", origin, ago) if x)
        parts.append(f"the {stages.noun(c.stage)} ({detail})")
    more = len(changes) - SHOWN
    return "; ".join(parts) + (f"; and {more:,} more change{'s' if more > 1 else ''}" if more > 0 else "")


def notice(changes: list) -> None:
    """The notice at the top of a run that found other changes: what changed; the page shows it now."""
    if changes:
        st.warning(f"**This workspace was changed in another tab or session** since this page was last drawn: "
                   f"{describe(changes)}. The page below shows the workspace as it is now.",
                   icon=":material/sync_problem:")


def acted_on() -> int | None:
    """The revision the view an action was pressed on showed, when other sessions changed the workspace
    after it (found at the top of this run), else None: ``frame.guarded`` sets it as the handle's guard, so
    the action's writes are refused once (pressed again on the page as it is now, it goes ahead)."""
    ss = st.session_state
    fresh = ss.get(FRESH)
    if not fresh or not fresh[2] or _in_fragment():
        return None
    ws_id, before, _ = fresh
    ss[FRESH] = (ws_id, before, [])
    try:
        return before if ui_state.current().id == ws_id else None
    except KeyError:
        return None


def _in_fragment() -> bool:
    """True while a fragment reruns alone (its view was drawn by the last full run, after the check)."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return bool(ctx is not None and getattr(ctx, "current_fragment_id", None))
    except Exception:  # noqa: BLE001 - no script run (bare mode)
        return False


@st.fragment(run_every=POLL_S)
def watch() -> None:
    """Between runs: a page left open names other sessions' changes and offers to reload."""
    try:
        w = ui_state.current()
        seen = st.session_state.get(SEEN, {}).get(w.id)
        changes = w.changes_since(seen) if seen is not None and w.revision > seen else []
    except (GpudseError, KeyError):
        return
    if not changes:
        return
    c1, c2 = st.columns([5, 1], vertical_alignment="center")
    c1.warning(f"**This workspace changed in another tab or session**: {describe(changes)}. This page still "
               f"shows it as it was; reload to see the change before you change anything.",
               icon=":material/sync_problem:")
    if c2.button("Reload", icon=":material/refresh:", type="primary", key="reload_changed", width="stretch"):
        st.session_state.setdefault(SEEN, {})[w.id] = w.revision  # the reloaded page draws it: no second notice
        st.rerun(scope="app")
