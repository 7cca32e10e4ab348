"""Simulation campaigns: run sampled design points through a backend, in parallel, resumably.

Stargazer's sampled simulations have no feedback loop, so they all run in parallel (§2.2, §8.1).

Backends:

* :class:`AnalyticalBackend` (default) — the built-in simulator (:mod:`gpudse_core.sim.simulator`),
  evaluated a batch at a time (vectorised). Optional noise is drawn per point from (seed, point
  number), so results do not depend on batching or on which worker ran them.
* :class:`~gpudse_core.sim.command.CommandBackend` — an external simulator described by a server-side
  file; every attempt in its own run directory, supervised (see :mod:`gpudse_core.sim.command`).

Runners: :func:`run_campaign` keeps the workers busy with batches from the
:class:`~gpudse_core.sim.store.CampaignStore` and commits each batch's results, and every attempt the
workers report, as they arrive; the executor is a local process pool (``workers`` processes, default:
the machine's cores) whose workers die with the runner (``PR_SET_PDEATHSIG`` on Linux; killed on any
abnormal exit; a pool that breaks is rebuilt and its runs recorded as lost), or a Dask distributed
client — ``scheduler`` is a scheduler address (e.g. one started by dask-jobqueue on a SLURM/PBS
cluster) or ``"local"`` for a ``LocalCluster`` of ``workers`` processes (started with
``allowed-failures = 0``: gpudse, not Dask, retries a point whose worker died, as a recorded attempt).
A store error (damaged file, full disk, lease lost) stops the run cleanly: nothing more is claimed,
the workers are stopped, what was committed stays.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import limits
from ..errors import GpudseError
from .command import BackendError, CommandBackend, worker_id
from .simulator import KERNELS, MAX_NOISE, PARAMETERS, simulate
from .store import Attempt, CampaignStore, Outcome, Progress

__all__ = ["AnalyticalBackend", "BackendError", "CommandBackend", "check_workers", "kill_pool", "local_pool",
           "points_spec", "run_batch", "run_campaign"]


@dataclass
class AnalyticalBackend:
    kernel: str = "matMul"
    noise: float = 0.0
    seed: int = 0
    batch_size: int = 500
    name: str = "analytical"

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise BackendError(f"unknown kernel {self.kernel!r}; built-in kernels: {', '.join(KERNELS)}")
        if isinstance(self.noise, bool) or not isinstance(self.noise, (int, float)) or not math.isfinite(self.noise) \
                or not 0 <= self.noise <= MAX_NOISE:
            raise BackendError(f"noise {self.noise!r}: give σ of the log-normal measurement noise, from 0 to "
                               f"{MAX_NOISE:g} (0.01 is 1 % noise)")

    def check_table(self, points: pd.DataFrame, source: str = "design points") -> None:
        """Refuse, before anything runs, points the built-in simulator does not model: it is defined on
        Stargazer's space (Table 2), so every point needs its ten parameters at values of that space."""
        from ..space.presets import load_preset

        missing = [p for p in PARAMETERS if p not in points.columns]
        if missing:
            raise BackendError(f"{source}: the points lack column(s) {', '.join(missing)}; the built-in simulator "
                               f"needs Stargazer's parameters {', '.join(PARAMETERS)} (sample them with "
                               f"gpudse sample stargazer)")
        space = load_preset("stargazer")
        for p in PARAMETERS:
            allowed = np.asarray(space.parameter(p).values, dtype=float)
            col = pd.to_numeric(points[p], errors="coerce").to_numpy(float)
            bad = np.flatnonzero(~np.isin(col, allowed))
            if bad.size:
                rows = ", ".join(f"row {i + 1} ({str(points[p].iloc[i])[:20]})" for i in bad[:3])
                raise BackendError(f"{source}: {p} takes values outside Stargazer's space at {rows}"
                                   f"{f' and {bad.size - 3:,} more' if bad.size > 3 else ''}; the built-in simulator "
                                   f"models {p} = {', '.join(f'{v:g}' for v in allowed)}")

    def spec(self) -> dict:
        return {"backend": "analytical", "kernel": self.kernel, "noise": self.noise, "seed": self.seed}

    def run_batch(self, batch: list[tuple[int, dict, int]], ctx: dict | None = None) -> list[Outcome]:
        who, started = worker_id(), time.time()

        def attempts(a: int, ok: bool, error: str = "") -> list[Attempt]:
            return [Attempt(a, "done" if ok else "failed", who, "", started, time.time(), error)]

        try:
            frame = pd.DataFrame([p for _, p, _ in batch])
            res = simulate(frame, self.kernel)
        except GpudseError as e:
            return [Outcome(idx, False, {}, str(e), "", attempts(a, False, str(e))) for idx, _, a in batch]
        if self.noise > 0:
            factor = np.array([np.exp(np.random.default_rng([self.seed, idx]).normal(0.0, self.noise))
                               for idx, _, _ in batch])
            for col in ("cycles", "cycles_trimmed"):
                res[col] = res[col] * factor
            res["ipc"] = res["ipc"] / factor
        records = res.to_dict(orient="records")
        return [Outcome(idx, True, {k: float(v) for k, v in rec.items()}, "", "", attempts(a, True))
                for (idx, _, a), rec in zip(batch, records)]


def run_batch(backend: Any, batch: list[tuple[int, dict, int]], ctx: dict | None = None) -> list[Outcome]:
    """Executed in a worker process (or a Dask worker): run one batch with the backend."""
    return backend.run_batch(batch, ctx)


# ---- the local pool ----------------------------------------------------------------------------------
def _pool_worker_init(parent: int) -> None:
    """In each pool worker: die with the runner; leave Ctrl-C to the runner."""
    from .supervise import die_with_parent

    die_with_parent(signal.SIGKILL)
    if parent and os.getppid() != parent:  # the runner died before prctl took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers die with this process (see :func:`_pool_worker_init`)."""
    method = multiprocessing.get_start_method(allow_none=False)
    parent = os.getpid() if method in ("fork", "spawn") else 0
    return ProcessPoolExecutor(max_workers=workers, initializer=_pool_worker_init, initargs=(parent,))


def process_bytes(backend: Any) -> int:
    """What one process running *backend* costs: a pool worker (limits.WORKER_BYTES, about 75 MB),
    plus an MGPUSim run (limits.MGPUSIM_RUN_BYTES, about 1 GiB at the largest legal point)."""
    run = limits.MGPUSIM_RUN_BYTES if getattr(backend, "name", "") == "mgpusim" else 0
    return limits.WORKER_BYTES + run


def pool_size(workers: int, points: int, batch_size: int = 1, each_bytes: int = 0) -> int:
    """The processes a pool on this machine starts for *points* design points run *batch_size* to a
    task: never more than there are tasks (a pool sized by ``--workers`` alone started 256 idle
    processes of ~75 MB for a batch of four), never more than ``limits.local_worker_bytes`` holds at
    *each_bytes* a process (the same work, in more rounds), never fewer than one."""
    tasks = math.ceil(max(int(points), 0) / max(int(batch_size or 1), 1))
    fits = limits.current().local_worker_bytes // each_bytes if each_bytes > 0 else tasks
    return max(1, min(int(workers), tasks, fits))


def kill_pool(executor: ProcessPoolExecutor) -> None:
    """Kill a pool's worker processes now (their simulators die with them) and shut it down."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    for proc in procs:
        try:
            proc.kill()
        except (OSError, AttributeError):
            pass
    executor.shutdown(wait=False, cancel_futures=True)
    for proc in procs:  # reap them (no zombies left behind)
        try:
            proc.join(5)
        except (OSError, AttributeError, AssertionError):
            pass


# ---- the runner ---------------------------------------------------------------------------------------------
def check_workers(workers: int | None, scheduler: str | None = None) -> None:
    """*workers* is a whole number ≥ 1 (or None: one per core), and at most ``limits.local_workers`` when
    the processes start on this machine (a local pool or ``scheduler="local"``)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise GpudseError(f"workers must be a whole number of at least 1 (got {workers!r}); leave it out for one per "
                          f"core")
    if workers is not None and (not scheduler or scheduler == "local"):
        limits.check("local_workers", workers, f"{workers:,} worker processes on this machine",
                     "ask for fewer (one per core is the default)")


def run_campaign(store: CampaignStore, backend: Any, *, workers: int | None = None, scheduler: str | None = None,
                 progress: Callable[[Progress, float], Any] | None = None,
                 should_stop: Callable[[], bool] | None = None, executor: Executor | None = None) -> Progress:
    """Run every pending point of *store* through *backend*; returns the final progress.

    Results are committed batch by batch as they arrive. *progress(prog, points_per_second)* is
    called after each batch; *should_stop()* (polled twice a second) returning True stops claiming new
    work and hands back points not yet started; runs in progress finish. A :class:`StoreError`
    stops the run (workers stopped, what was committed kept) and is raised.
    """
    if executor is None:
        check_workers(workers, scheduler)
    workers = workers or os.cpu_count() or 1
    check = getattr(backend, "check_points", None)
    if check is not None:
        check(store.columns())
    ctx = {"campaign": store.uid}
    own_pool = executor is None and not scheduler
    client = cluster = None
    if executor is None:
        if scheduler != "local" and scheduler:  # a remote cluster's workers are its own
            client, cluster, executor = _dask(scheduler, workers)
            workers = max(1, sum(client.nthreads().values()))
        else:  # processes on this machine: as many as the pending work can use
            workers = pool_size(workers, store.progress().pending, getattr(backend, "batch_size", 1),
                                process_bytes(backend))
            if scheduler:
                client, cluster, executor = _dask(scheduler, workers)
            else:
                executor = local_pool(workers)
    lease = limits.current().campaign_lease_s
    start, done_at_start = time.perf_counter(), store.progress().done
    in_flight: dict[Any, list] = {}
    pool_breaks = 0
    clean = False
    try:
        while True:
            stopping = should_stop is not None and should_stop()
            if stopping:
                cancelled = [f for f in in_flight if f.cancel()]
                if cancelled:
                    store.unclaim([idx for f in cancelled for idx, _, _ in in_flight.pop(f)])
            while not stopping and len(in_flight) < 2 * workers:
                claimed = store.claim(backend.batch_size)
                if not claimed:
                    break
                try:
                    in_flight[executor.submit(run_batch, backend, claimed, ctx)] = claimed
                except BrokenProcessPool:
                    store.unclaim([idx for idx, _, _ in claimed])
                    if not own_pool:
                        raise GpudseError("the process pool's workers died; the pool cannot take more work") from None
                    pool_breaks += 1
                    executor = _rebuild(executor, workers, pool_breaks)
            if not in_flight:
                break
            finished, _ = wait(list(in_flight), timeout=0.5, return_when=FIRST_COMPLETED)
            store.renew(min_interval=lease / 6)
            if not finished:
                continue
            broken = any(f.exception() is not None and isinstance(f.exception(), BrokenProcessPool)
                         for f in finished if not f.cancelled())
            if broken and own_pool:  # every run still in the broken pool fails too: collect them all now
                wait(list(in_flight), timeout=10)
                finished = [f for f in in_flight if f.done()]
            outcomes: list[Outcome] = []
            handed_back: list[int] = []
            for fut in finished:
                claimed = in_flight.pop(fut)
                if fut.cancelled():
                    handed_back += [idx for idx, _, _ in claimed]
                    continue
                outcomes += _collect(fut, claimed)
            store.unclaim(handed_back)
            store.record(outcomes)
            if any(o.ok for o in outcomes):
                pool_breaks = 0
            if broken and own_pool:
                pool_breaks += 1
                executor = _rebuild(executor, workers, pool_breaks)
            if progress is not None and finished:
                prog = store.progress()
                elapsed = max(time.perf_counter() - start, 1e-9)
                progress(prog, (prog.done - done_at_start) / elapsed)
        clean = True
    finally:
        if own_pool:
            if clean:
                executor.shutdown(wait=True, cancel_futures=True)
            else:  # an error or Ctrl-C: stop the workers (and their simulators) now
                kill_pool(executor)
        if client is not None:
            if not clean:
                try:
                    client.cancel(list(in_flight))
                except Exception:  # noqa: BLE001 - best effort while stopping
                    pass
            client.close()
        if cluster is not None:
            cluster.close()
    return store.progress()


def _collect(fut: Any, claimed: list[tuple[int, dict, int]]) -> list[Outcome]:
    """A finished future's outcomes; if its worker died, each of its runs is a lost attempt (retried)."""
    try:
        return list(fut.result())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - BrokenProcessPool, KilledWorker, a lost connection
        why = f"its worker was lost ({type(e).__name__}: {str(e)[:300]})"
        return [Outcome(idx, False, {}, why, "", [Attempt(a, "lost", error=why)]) for idx, _, a in claimed]


def _rebuild(executor: ProcessPoolExecutor, workers: int, breaks: int) -> ProcessPoolExecutor:
    kill_pool(executor)
    if breaks > max(3, workers):
        raise GpudseError(f"the worker processes died {breaks} times in a row without finishing a run (out of "
                          f"memory? see the system log); what finished is kept: run again to resume")
    return local_pool(workers)


def _dask(scheduler: str, workers: int):
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise GpudseError("the Dask runner needs the 'distributed' package: pip install distributed") from None
    cluster = None
    try:
        if scheduler == "local":  # a LocalCluster of `workers` single-threaded processes
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout=30)
    except OSError as e:
        if cluster is not None:
            cluster.close()
        raise GpudseError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
    return client, cluster, client.get_executor(pure=False)


def points_spec(points: pd.DataFrame) -> dict:
    """A fingerprint of the design points, stored with the campaign so a resume uses the same ones."""
    import hashlib

    digest = hashlib.sha256(points.to_csv(index=False).encode()).hexdigest()
    return {"points": len(points), "points_sha256": digest, "columns": list(map(str, points.columns))}
