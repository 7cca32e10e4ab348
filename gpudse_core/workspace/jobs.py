"""Long work that is visible and stoppable: validation, campaigns, whole-space scans, ray casting.

A job runs a *work* function in a background thread of this process::

    def work(ctx):                       # ctx: JobContext
        for i, unit in enumerate(units):
            if ctx.stopped():            # checked between units: Stop acts within one unit
                raise Stopped(partial=so_far)
            so_far = step(so_far, unit)
            ctx.progress(i + 1, len(units), f"unit {i + 1}")
        return so_far

``ctx.progress(done, total, message)`` returns False once a stop was asked for, so it plugs straight
into the core's own callbacks (``validate(progress=…)``, ``predict_space(progress=…)``);
``ctx.stopped`` fits ``run_campaign(should_stop=…)``. The value returned (or carried by
:class:`Stopped`) is stored as the job's stage, labelled partial when the job was stopped.

Job state lives in the workspace's database (``ws_job``), so a reloaded page, another browser or
another process sees it: one monitor thread per process writes each job's progress and a heartbeat
every 0.2 s from the moment it starts, and reads Stop requests made elsewhere (a second browser, the
dashboard stopping a CLI campaign). A job whose heartbeat is older than ten seconds — its process
died — reads as ``interrupted``; what it had stored (campaign points) is kept.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import limits
from ..errors import GpudseError
from . import db as dbm
from .db import ReadOnly
from .stages import StageValue, Status, check_stage

log = logging.getLogger(__name__)

JOB_STATES = ("running", "finished", "stopped", "failed", "interrupted")
FLUSH_S = 0.2  # progress and heartbeat written, stop requests read, this often
LOST_AFTER_S = 10.0  # a running job whose heartbeat is older than this has lost its process
_COLUMNS = ("id, kind, state, done, total, message, started, heartbeat, finished, stop_requested, error, stage, "
            "result_version, partial, campaign, pid, host")


class Stopped(GpudseError):
    """Raised by work that saw a stop request; *partial* (if any) is stored as a partial result."""

    def __init__(self, message: str = "stopped", partial: Any = None):
        super().__init__(message)
        self.partial = partial


@dataclass(frozen=True)
class JobInfo:
    id: str
    kind: str
    state: str  # running | finished | stopped | failed | interrupted
    done: float
    total: float | None
    message: str
    started: float
    heartbeat: float
    finished: float | None
    stop_requested: bool
    error: str | None
    stage: str | None  # where the result is stored
    result_version: int | None
    partial: bool
    campaign: str | None
    pid: int | None
    host: str | None

    @property
    def active(self) -> bool:
        return self.state == "running"

    @property
    def fraction(self) -> float | None:
        """Done as a fraction of the total (None while the total is unknown)."""
        return min(1.0, self.done / self.total) if self.total else None

    @property
    def elapsed(self) -> float:
        return (self.finished or time.time()) - self.started


class JobContext:
    """Handed to a job's work function: report progress, see a stop request."""

    def __init__(self, job_id: str, path: Path):
        self.id = job_id
        self.path = path
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.done, self.total, self.message = 0.0, None, "starting"

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> bool:
        """Record progress (cheap: kept in memory, written by the monitor); False once stopped."""
        with self._lock:
            self.done = float(done)
            if total is not None:
                self.total = float(total)
            if message is not None:
                self.message = str(message)[:500]
        return not self._stop.is_set()

    def stopped(self) -> bool:
        return self._stop.is_set()

    def check(self, partial: Any = None) -> None:
        """Raise :class:`Stopped` (carrying *partial*) if a stop was asked for."""
        if self._stop.is_set():
            raise Stopped(partial=partial)

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> tuple[float, float | None, str]:
        with self._lock:
            return self.done, self.total, self.message


class _Monitor:
    """One thread per process: flushes running jobs' progress and heartbeat, picks up stop requests."""

    def __init__(self) -> None:
        self._jobs: dict[str, JobContext] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, ctx: JobContext) -> None:
        with self._lock:
            self._jobs[ctx.id] = ctx
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gpudse-job-monitor", daemon=True)
                self._thread.start()

    def remove(self, ctx: JobContext) -> None:
        with self._lock:
            self._jobs.pop(ctx.id, None)

    def get(self, job_id: str) -> JobContext | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _run(self) -> None:
        conns: dict[Path, sqlite3.Connection] = {}
        try:
            while True:
                with self._lock:
                    jobs = list(self._jobs.values())
                    if not jobs:
                        self._thread = None
                        return
                for ctx in jobs:
                    try:
                        if ctx.path not in conns:
                            conns[ctx.path] = dbm.connect(ctx.path, schema=False)
                            conns[ctx.path].execute("PRAGMA busy_timeout = 5000")
                        con = conns[ctx.path]
                        flush(con, ctx)
                    except (sqlite3.Error, dbm.NotFound) as e:  # busy or deleted: retry next round, stop if gone
                        log.debug("job %s: cannot write progress: %s", ctx.id, e)
                        if not ctx.path.exists():
                            ctx.stop()
                time.sleep(FLUSH_S)
        finally:
            for con in conns.values():
                con.close()


_MONITOR = _Monitor()


def flush(con: sqlite3.Connection, ctx: JobContext) -> None:
    done, total, message = ctx.snapshot()
    con.execute("UPDATE ws_job SET done = ?, total = ?, message = ?, heartbeat = ? WHERE id = ? AND "
                "state = 'running'", (done, total, message, time.time(), ctx.id))
    row = con.execute("SELECT stop_requested, (SELECT deleted FROM ws_meta) FROM ws_job WHERE id = ?",
                      (ctx.id,)).fetchone()
    if row is None or row[0] or row[1]:  # asked to stop, or the workspace was deleted
        ctx.stop()


class Job:
    """A job started in this process: its id, Stop, and waiting for it (tests, the command line)."""

    def __init__(self, ws: Any, ctx: JobContext, thread: threading.Thread | None):
        self.id = ctx.id
        self._path = ws.path
        self._open = opener(ws)
        self.ctx = ctx
        self.thread = thread

    def stop(self) -> None:
        self.ctx.stop()
        con = dbm.connect(self._path, schema=False)
        try:
            con.execute("UPDATE ws_job SET stop_requested = 1 WHERE id = ?", (self.id,))
        finally:
            con.close()

    def wait(self, timeout: float | None = None) -> bool:
        """True when the job has ended (its result, if any, is stored)."""
        if self.thread is not None:
            self.thread.join(timeout)
            return not self.thread.is_alive()
        return True

    def info(self) -> JobInfo:
        with self._open(False) as ws:
            return job_info(ws, self.id)


def opener(ws: Any) -> Callable[[bool], Any]:
    """A function that opens *ws*'s workspace again, with or without its edit rights: what a job's
    thread uses (a connection belongs to the thread that opened it) without this module depending on
    the workspace class."""
    cls, path, ws_id = type(ws), ws.path, ws.id
    written = getattr(ws, "written", None)  # the job's changes count as its starter's (Workspace.changes_since)

    def open_again(writable: bool) -> Any:
        again = cls(path, ws_id, writable)
        if written is not None:
            again.written = written
        return again

    return open_again


def begin_job(ws: Any, kind: str, *, stage: str | None = None, campaign: str | None = None) -> JobContext:
    """Record a running job and start flushing its progress (the work runs wherever the caller runs it)."""
    if not ws.writable:
        raise ReadOnly(f"this workspace is shared with you read-only; to run {kind}, make your own copy first (fork)")
    if stage is not None:
        check_stage(stage)
    limits.check("workspace_jobs", len(list_jobs(ws, active=True)) + 1, f"workspace {ws.id[:6]}…: jobs running at once",
                 "wait for one to finish or stop it")
    ctx = JobContext(dbm.new_token()[:16], ws.path)
    now = time.time()
    with ws._write(f"start {kind}", stage):  # refused, as a write, when the view it was pressed on is out of date
        ws._db.execute("INSERT INTO ws_job (id, kind, state, done, message, started, heartbeat, pid, host, stage, "
                       "campaign) VALUES (?, ?, 'running', 0, 'starting', ?, ?, ?, ?, ?, ?)",
                       (ctx.id, str(kind)[:60], now, now, os.getpid(), socket.gethostname(), stage, campaign))
    _MONITOR.add(ctx)
    return ctx


def end_job(ws: Any, ctx: JobContext, state: str, error: str | None = None, result_version: int | None = None,
            partial: bool = False) -> None:
    """Record how a job ended (and stop flushing it)."""
    _MONITOR.remove(ctx)
    done, total, message = ctx.snapshot()
    with ws._lock, dbm.transaction(ws._db):
        ws._db.execute("UPDATE ws_job SET state = ?, done = ?, total = ?, message = ?, finished = ?, heartbeat = ?, "
                       "error = ?, result_version = ?, partial = ? WHERE id = ?",
                       (state, done, total, message, time.time(), time.time(), error, result_version, int(partial),
                        ctx.id))


def start_job(ws: Any, kind: str, work: Callable[[JobContext], Any], *, stage: str | None = None,
              inputs: Sequence[Any] = (), origin: str = "", campaign: str | None = None) -> Job:
    """Run ``work(ctx)`` in a background thread; store what it returns as *stage* (an analysis name or
    a pipeline stage) computed from *inputs* — the versions current now, when the job starts, so a
    result whose inputs changed meanwhile comes out stale, never current."""
    heads = ws.heads()
    refs = []
    for i in inputs:
        if isinstance(i, StageValue):
            refs.append(i)
            continue
        h = heads.get(check_stage(i))
        if h is None or h.digest is None:
            raise GpudseError(f"{kind}: needs the {i}, and there is none yet")
        refs.append(StageValue(i, None, h.version, Status(i, "current"), h.digest))
    ctx = begin_job(ws, kind, stage=stage, campaign=campaign)
    job = Job(ws, ctx, None)
    job.thread = threading.Thread(target=_run, args=(opener(ws), ctx, work, stage, refs, origin or kind),
                                  name=f"gpudse-job-{kind}", daemon=True)
    job.thread.start()
    return job


def _run(open_ws: Callable[[bool], Any], ctx: JobContext, work: Callable[[JobContext], Any], stage: str | None,
         refs: list, origin: str) -> None:
    from ..model.cancel import Interrupted, watching

    value, state, error, version = None, "finished", None, None
    try:
        with watching(ctx.stopped):  # long fits check Stop between their parts too
            value = work(ctx)
        if ctx.stopped():
            state = "stopped"
    except Stopped as e:
        value, state = e.partial, "stopped"
    except Interrupted:  # stopped inside a fit the work did not catch: nothing to keep
        state = "stopped"
    except GpudseError as e:
        state, error = "failed", str(e)
    except Exception as e:  # a bug in the work: recorded, never a dead thread that looks alive
        log.exception("job %s failed", ctx.id)
        state, error = "failed", f"internal error: {type(e).__name__}: {e}"
    try:
        ws = open_ws(True)
    except dbm.NotFound:  # the workspace was deleted while the job ran: nothing left to record
        _MONITOR.remove(ctx)
        return
    with ws:
        if value is not None and stage is not None and state != "failed":
            done, total, message = ctx.snapshot()
            note = f"stopped after {done:,.0f} of {total:,.0f} ({message})" if total else f"stopped ({message})"
            try:
                version = ws.put(stage, value, inputs=refs, origin=origin, partial=state == "stopped",
                                 note=note if state == "stopped" else "").version
            except GpudseError as e:
                state, error = "failed", f"the result could not be stored: {e}"
        end_job(ws, ctx, state, error, version, partial=state == "stopped" and version is not None)


def _row(r: tuple, local: bool) -> JobInfo:
    info = JobInfo(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10], r[11], r[12],
                   bool(r[13]), r[14], r[15], r[16])
    if info.state == "running" and not local and time.time() - info.heartbeat > LOST_AFTER_S:
        return dataclasses.replace(info, state="interrupted")
    return info


def list_jobs(ws: Any, active: bool = False, limit: int = 50) -> list[JobInfo]:
    """Jobs of the workspace, newest first (*active*: only those running)."""
    with ws._lock:
        rows = ws._db.execute(f"SELECT {_COLUMNS} FROM ws_job ORDER BY started DESC LIMIT ?", (limit,)).fetchall()
    jobs = [_row(r, _MONITOR.get(r[0]) is not None) for r in rows]
    return [j for j in jobs if j.active] if active else jobs


def job_info(ws: Any, job_id: str) -> JobInfo:
    with ws._lock:
        r = ws._db.execute(f"SELECT {_COLUMNS} FROM ws_job WHERE id = ?", (job_id,)).fetchone()
    if r is None:
        raise GpudseError(f"no job {job_id!r} in this workspace")
    return _row(r, _MONITOR.get(job_id) is not None)


def stop_job(ws: Any, job_id: str) -> None:
    """Ask a job to stop, wherever it runs: at once in this process, within 0.2 s in another."""
    if not ws.writable:
        raise ReadOnly("this workspace is shared with you read-only; only its owner can stop its work")
    ctx = _MONITOR.get(job_id)
    if ctx is not None:
        ctx.stop()
    with ws._lock, dbm.transaction(ws._db):
        ws._db.execute("UPDATE ws_job SET stop_requested = 1 WHERE id = ? AND state = 'running'", (job_id,))
