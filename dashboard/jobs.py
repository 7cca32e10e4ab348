"""Showing long work on a page: a running job's progress bar, running indicator and Stop.

A page shows a running job of its workspace (:mod:`gpudse_core.workspace.jobs`) with
:func:`job_panel`, a fragment that polls the workspace's database twice a second, so a reloaded page
(or a second browser on the same link) re-attaches to it; Stop ends the work after its current unit
and keeps what was done, labelled partial. What each job computes is in :mod:`dashboard.work`.
"""

from __future__ import annotations

import time
from typing import Any

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


def job_panel(ws: Any, kind: str, label: str) -> bool:
    """Show the running job of *kind* (progress bar, running indicator, Stop), polling until it
    ends; True while one runs. Also says how the last one ended if it failed or was stopped."""
    job = active(ws, kind)
    if job is not None:
        _poll(job.id, label)
        return True
    prev = last(ws, kind)
    if prev is not None and prev.finished and time.time() - prev.finished < 600:
        if prev.state == "failed":
            st.error(f"{label} failed: {frame.plain(prev.error)}")
        elif prev.state == "interrupted":
            st.warning(f"{label} was interrupted (its process ended); start it again.")
    return False
