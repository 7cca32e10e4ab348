"""Simulation campaigns recorded in the workspace's own database file.

A campaign launched from the command line on a cluster's login node (``gpudse simulate … --workspace
ID``) or from the dashboard is a :class:`~gpudse_core.sim.store.CampaignStore` named ``<id>/<name>``
inside the workspace's SQLite file, so the dashboard shows its progress live from the store (every
finished point is committed as it arrives), can stop it (the CLI polls the workspace's stop flag), and,
by an explicit action, makes its results the workspace's results stage (a new version, labelled
partial while points remain).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import GpudseError
from ..fmt import fmt_rate
from .db import ReadOnly
from .jobs import JobContext, JobInfo, begin_job, end_job, list_jobs, opener, start_job
from .stages import StageError

STATUS_COLUMNS = ("status", "attempts", "error")


@dataclass(frozen=True)
class CampaignInfo:
    name: str
    store_name: str
    created: float
    origin: str
    spec: dict | None
    progress: Any  # sim.store.Progress: pending, running, done, failed, total, remaining
    job: JobInfo | None  # the latest job that ran it (None: never run from a workspace-aware process)

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.active


def _store(ws: Any, store_name: str) -> Any:
    from ..sim.store import CampaignStore

    return CampaignStore(ws.path, name=store_name, readonly=not ws.writable)


def record_campaign(ws: Any, name: str, origin: str = "") -> str:
    """Register campaign *name* in the workspace; returns its name inside the store (``<id>/<name>``)."""
    name = str(name).strip()
    if not name or len(name) > 100 or "/" in name:
        raise GpudseError(f"campaign name {name!r}: give 1–100 characters without '/'")
    from .db import transaction

    store_name = f"{ws.id}/{name}"
    with ws._lock, transaction(ws._db):
        ws._db.execute("INSERT INTO ws_campaign (name, store_name, created, origin) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT(name) DO NOTHING", (name, store_name, time.time(), origin[:500]))
    return store_name


def list_campaigns(ws: Any) -> list[CampaignInfo]:
    """The workspace's campaigns with live progress read from the store, newest first."""
    with ws._lock:
        rows = ws._db.execute("SELECT name, store_name, created, origin FROM ws_campaign ORDER BY created DESC"
                              ).fetchall()
    jobs: dict[str, JobInfo] = {}
    for j in reversed(list_jobs(ws, limit=200)):
        if j.campaign:
            jobs[j.campaign] = j
    out = []
    for name, store_name, created, origin in rows:
        with _store(ws, store_name) as st:
            out.append(CampaignInfo(name, store_name, created, origin, st.spec(), st.progress(), jobs.get(name)))
    return out


def campaign(ws: Any, name: str) -> CampaignInfo:
    for c in list_campaigns(ws):
        if c.name == name:
            return c
    raise GpudseError(f"no campaign {name!r} in this workspace")


def _finished(ws: Any, info: Any, name: str) -> tuple[Any, Any]:
    """The campaign's finished points (without the store's status columns) and its progress."""
    with _store(ws, info.store_name) as st:
        table = st.table()
        prog = st.progress()
    if not len(table):
        raise GpudseError(f"campaign {name!r} has no finished points yet")
    return table.drop(columns=[c for c in STATUS_COLUMNS if c in table.columns]), prog


def adopt_campaign(ws: Any, name: str, response: str | None = None, app_column: str | None = "auto") -> Any:
    """Make the campaign's finished points the workspace's results (a new version). When its points
    are the workspace's current samples, the results are recorded as computed from them."""
    from ..sim.campaign import points_spec

    info = campaign(ws, name)
    table, prog = _finished(ws, info, name)
    spec = info.spec or {}
    space = ws.get("space")
    if space.value is None:
        raise StageError("choose the design space before using campaign results")
    missing = [p for p in space.value.parameter_names if p not in table.columns]
    if missing:
        raise GpudseError(f"campaign {name!r} ran points without {', '.join(missing[:5])}: they are not of the "
                          f"current design space {space.value.name!r}")
    if response is None:
        numeric = [c for c in table.columns if c not in space.value.parameter_names and table[c].dtype.kind in "iuf"]
        if not numeric:
            raise GpudseError(f"campaign {name!r}: its results have no numeric column to model")
        response = "cycles" if "cycles" in numeric else numeric[0]
    inputs: list[Any] = [space]
    samples = ws.get("samples")
    if (samples.value is not None
            and points_spec(samples.value.table()).get("points_sha256") == spec.get("points_sha256")):
        inputs.append(samples)
    partial = prog.remaining > 0
    note = f"{prog.done:,} of {prog.total:,} points done, {prog.failed:,} failed" if partial or prog.failed else ""
    return ws.set_results(table, response, f"campaign {name} ({spec.get('backend', 'simulator')})",
                          app_column=app_column, inputs=inputs, partial=partial, note=note)


def campaign_table(ws: Any, name: str, include_failed: bool = False) -> Any:
    """The finished points of campaign *name* (parameters and result columns; with *include_failed*
    also the failed ones, with their status and error)."""
    info = campaign(ws, name)
    with _store(ws, info.store_name) as st:
        return st.table(include_failed=include_failed)


def failed_points(ws: Any, params: list[str]) -> Any:
    """Every point of the workspace's campaigns that failed to simulate and has all of *params*: those
    columns, ``status`` (``failed``) and ``error``, newest campaign first; None when there is none. A
    scan given these beside the results never recommends a design group that holds one."""
    import pandas as pd

    frames = []
    for c in list_campaigns(ws):
        if not c.progress.failed:
            continue
        with _store(ws, c.store_name) as st:
            table = st.table(include_failed=True)
        if not len(table) or any(p not in table.columns for p in params):
            continue
        frames.append(table.loc[table["status"] == "failed", [*params, "status", "error"]])
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else None


def record_failures(ws: Any, source: str, space: str, failures: Any) -> str:
    """Keep an uploaded table's failed configurations (parameters, ``status``, ``error``, as
    :func:`gpudse_core.sim.upload.validate_results` gives them) as a campaign of failed points, so that
    :func:`failed_points` finds them as it finds a simulator's failures: the fit never sees them and a
    scan never recommends a design group holding one. The same failures recorded again (the page drawn
    again, the file uploaded again) are not recorded twice. Returns the campaign's name."""
    import pandas as pd

    params = [c for c in failures.columns if c not in ("status", "error")]
    digest = hashlib.sha256(pd.util.hash_pandas_object(failures.astype(str), index=False).to_numpy().tobytes()
                            ).hexdigest()
    camps = list_campaigns(ws)
    for c in camps:
        if (c.spec or {}).get("failures_sha256") == digest and (c.spec or {}).get("space") == space:
            return c.name
    taken = {c.name for c in camps}
    base = f"failures of {str(source)[:80]}"
    name = next(n for n in (base if i == 1 else f"{base} ({i})" for i in range(1, len(taken) + 2)) if n not in taken)
    store_name = record_campaign(ws, name, origin=f"upload {str(source)[:200]}")
    with _store(ws, store_name) as st:
        st.import_results({"backend": "upload", "source": str(source), "space": space, "failures_sha256": digest},
                          failures[params].iloc[:0], [], failures)
    return name


def append_campaign(ws: Any, name: str) -> Any:
    """Add the campaign's finished points to the current results (a new version of the results
    stage): designs chosen from a model's predictions, simulated to check them."""
    info = campaign(ws, name)
    (results,) = ws.require("results")
    old = results.value
    table, prog = _finished(ws, info, name)
    if old.response not in table.columns:
        raise GpudseError(f"campaign {name!r}: its results lack the response {old.response!r} of the current results")
    import pandas as pd

    merged = pd.concat([old.table, table[[c for c in table.columns if c in old.table.columns]]], ignore_index=True)
    spec = info.spec or {}
    note = f"{len(table):,} simulated designs added" + (f", {prog.failed:,} failed" if prog.failed else "")
    return ws.set_results(merged, old.response, f"{results.origin} + campaign {name} "
                                                f"({spec.get('backend', 'simulator')})",
                          app_column=old.app_column, inputs=("space",), note=note)


def start_campaign(ws: Any, backend: Any, *, name: str | None = None, workers: int | None = None,
                   scheduler: str | None = None, adopt: bool = False, points: Any = None,
                   extra: dict | None = None, append: bool = False, origin: str = "dashboard",
                   stage: str | None = None, inputs: Sequence[Any] = (),
                   result: Callable[[Any, str], Any] | None = None) -> Any:
    """Run the workspace's current samples (or the given *points*) through *backend* as a background
    job (resumable: a campaign of the same points and backend picks up where it stopped). Returns
    the job. *extra* is recorded in the campaign's spec (e.g. the predictions the points were chosen by).

    With *adopt* the campaign's results become the results stage as soon as it ends (finished or
    stopped; a stopped one labelled partial), as the dashboard does: results are used as soon as
    they are simulated, and what was fitted on the old ones turns stale at once. With *append* they
    are added to the current results instead (:func:`append_campaign`: a new version). With *result*
    (a function of the workspace, opened again in the job's thread, and the campaign's name), what it
    returns once the campaign ends is stored as analysis *stage* computed from *inputs* (partial when
    stopped): how a "Simulate these" check is kept without touching the results."""
    from ..sim.campaign import points_spec, run_campaign

    if not ws.writable:  # the connection would refuse the writes anyway (query_only): say why first
        raise ReadOnly("this workspace is shared with you read-only; to run a campaign, make your own copy first "
                       "(fork)")
    if points is None:
        (samples,) = ws.require("samples")
        points = samples.value.table()
    spec = {**backend.spec(), **points_spec(points), **(extra or {})}
    name = name or hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]
    store_name = record_campaign(ws, name, origin=f"{origin}, {backend.spec().get('backend', '')}")
    store = _store(ws, store_name)
    try:
        store.open(spec, points)
    except BaseException:
        store.close()
        raise
    open_ws = opener(ws)

    def work(ctx: JobContext) -> Any:
        try:
            final = run_campaign(store, backend, workers=workers, scheduler=scheduler, progress=_reporter(ctx),
                                 should_stop=ctx.stopped)
        finally:
            store.close()
        if (adopt or append) and final.done:
            with open_ws(True) as own:
                (append_campaign if append else adopt_campaign)(own, name)
        if result is not None:
            with open_ws(False) as own:
                return result(own, name)
        return None

    return start_job(ws, "campaign", work, campaign=name, stage=stage, inputs=inputs,
                     origin=f"campaign {name} ({spec.get('backend', 'simulator')})")


def _reporter(ctx: JobContext, then: Callable | None = None) -> Callable:
    def report(prog: Any, rate: float) -> None:
        ctx.progress(prog.done + prog.failed, prog.total, f"{prog.done:,} done, {prog.failed:,} failed, "
                     f"{fmt_rate(rate, remaining=prog.remaining)}")
        if then is not None:
            then(prog, rate)
    return report


class CliCampaign:
    """``gpudse simulate … --workspace ID``: the campaign goes into the workspace's file, a job row
    shows it running (and interrupted if this process dies), and a Stop from the dashboard stops it."""

    def __init__(self, ws: Any, name: str):
        self.ws = ws  # opened by the command line, whose user owns the files (trusted)
        self.name = name
        self.store_path = self.ws.path
        self.store_name = record_campaign(self.ws, name, origin="command line")
        self.ctx = begin_job(self.ws, "campaign", campaign=name)
        self._open = True
        atexit.register(self._abandon)

    def progress(self, then: Callable | None = None) -> Callable:
        """A ``run_campaign`` progress callback that also reports to the workspace."""
        return _reporter(self.ctx, then)

    def should_stop(self) -> bool:
        return self.ctx.stopped()

    def finish(self, final: Any) -> None:
        self.ctx.progress(final.done + final.failed, final.total)
        end_job(self.ws, self.ctx, "stopped" if self.ctx.stopped() and final.remaining else "finished")
        self._close()

    def _abandon(self) -> None:  # the command failed or was interrupted before finish(); also at exit
        if self._open:
            try:
                end_job(self.ws, self.ctx, "interrupted", "the command ended before the campaign finished")
            except (GpudseError, OSError, sqlite3.Error) as e:  # a full disk at exit: one line, no traceback
                print(f"gpudse: note: could not record in the workspace that the campaign ended ({e}); it reads "
                      f"as interrupted once its heartbeat stops", file=sys.stderr)
            finally:
                try:
                    self._close()
                except (GpudseError, OSError, sqlite3.Error):
                    pass

    def _close(self) -> None:
        if self._open:
            self._open = False
            self.ws.close()
            atexit.unregister(self._abandon)

