"""Showing long work on a page: a running job's progress bar, running indicator and Stop.

A page shows a running job of its workspace (:mod:`gpudse_core.workspace.jobs`) with
:func:`job_panel`, a fragment that polls the workspace's database twice a second, so a reloaded page
(or a second browser on the same link) re-attaches to it; Stop ends the work after its current unit
and keeps what was done, labelled partial. What each job computes is in :mod:`dashboard.work`.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import streamlit as st

from gpudse_core import GpudseError

from . import frame
from .work import POLL_S


# ---- showing jobs ----------------------------------------------------------------------------------
def active(ws: Any, kind: str):
    """The running job of *kind* in the workspace (the newest), or None."""
    return next((j for j in ws.jobs(active=True) if j.kind == kind), None)


def last(ws: Any, kind: str):
    return next((j for j in ws.jobs() if j.kind == kind), None)


def progress_text(job: Any) -> str:
    done = f"{job.done:,.0f}"
    if job.message and job.message.startswith(done):  # the message counts already ("5 of 9 cells scanned")
        return f"{job.message} · {frame.fmt_duration(job.elapsed)}"
    total = f" of {job.total:,.0f}" if job.total else ""
    msg = f" — {job.message}" if job.message else ""
    return f"{done}{total}{msg} · {frame.fmt_duration(job.elapsed)}"


@st.fragment(run_every=POLL_S)
def _poll(job_id: str, label: str) -> None:
    ws = frame.ws()
    try:
        job = ws.job(job_id)
    except GpudseError:
        st.rerun(scope="app")
    if not job.active:
        st.rerun(scope="app")  # the result is stored: the whole page redraws with it
    with st.container(border=True):
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        with c1:
            st.markdown(f":material/progress_activity: **{label}** is running"
                        + (" — stopping…" if job.stop_requested else ""))
            st.progress(job.fraction or 0.0, text=progress_text(job))
        if c2.button("Stop", key=f"stop_{job_id}", icon=":material/stop:", disabled=not ws.writable
                     or job.stop_requested, help="ends the work after the current unit and keeps what was done",
                     width="stretch"):
            ws.stop_job(job_id)  # the work ends after its current unit; the next poll shows it


def interrupted_text(job: Any, label: str, now: float | None = None) -> str:
    """What to say about a job whose process ended while it ran (a server killed or restarted)."""
    ago = frame.fmt_duration(max(0.0, (now or time.time()) - (job.finished or job.heartbeat)))
    total = f" of {job.total:,.0f}" if job.total else ""
    return (f"{label} was interrupted {ago} ago: the process running it ended (the server was stopped or "
            f"restarted) after {job.done:,.0f}{total} units of work, and it stored no result. Run it again.")


LATER = "later"  # job_panel(rerun=LATER): the page starts the job again itself, where its settings are known
_WANT = "_gpudse_rerun"


def job_panel(ws: Any, kind: str, label: str, rerun: Callable[[], Any] | str | None = None,
              rerun_label: str = "Run it again with the settings below") -> bool:
    """Show the running job of *kind* (progress bar, running indicator, Stop), polling until it
    ends; True while one runs. Also says how the last one ended if it failed or was stopped
    recently, and, whenever the last one was interrupted (its process died: it never finished, so
    it has no end time), says so and offers to run it again: *rerun* is called when pressed, or,
    with ``rerun=LATER`` (settings chosen further down the page), the page's own start is asked for
    with :func:`rerun_wanted` where those settings are known."""
    want = st.session_state.get(_WANT)
    if want is not None and want[:2] == (ws.id, kind):
        if want[2]:  # asked for on the run before this one (which then reran): the page may still take it up
            st.session_state[_WANT] = (ws.id, kind, False)
        else:  # asked for earlier and not taken up: void
            del st.session_state[_WANT]
    job = active(ws, kind)
    if job is not None:
        _poll(job.id, label)
        return True
    prev = last(ws, kind)
    if prev is None:
        return False
    if prev.state == "interrupted":
        with st.container(border=True):
            st.warning(interrupted_text(prev, label), icon=":material/warning:")
            if rerun is not None and st.button(rerun_label, key=f"rerun_{prev.id}", icon=":material/replay:",
                                               disabled=not ws.writable):
                if rerun == LATER:
                    # the page's own start may come before this panel on the page: run the page again, where
                    # it is taken up whatever the order
                    st.session_state[_WANT] = (ws.id, kind, True)
                    st.rerun()
                elif frame.guarded(rerun):
                    st.rerun()
    elif prev.state == "failed" and prev.finished and time.time() - prev.finished < 600:
        st.error(f"{label} failed: {frame.plain(prev.error)}")
    return False


def rerun_wanted(ws: Any, kind: str) -> bool:
    """True once after "Run it again" was pressed on an interrupted job of *kind* shown with
    ``rerun=LATER``: the page then starts the job as its own start button would."""
    want = st.session_state.get(_WANT)
    if want is not None and want[:2] == (ws.id, kind):
        del st.session_state[_WANT]
        return True
    return False
