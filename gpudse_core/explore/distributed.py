"""The exploration scan split over a Dask cluster.

The blocks of a scan (:mod:`.stream`) are cut into consecutive runs — ranges of design indices for a
scan of every point, runs of the best-bounded blocks for the exact method — and each run is a task.
A task starts from the client's current pools (so it skips what is already ruled out) and returns
its own top-k and Pareto pools; the client merges them exactly (:meth:`TopK.merge`,
:meth:`Front.merge`) and skips, before submitting, the runs whose every block the merged pools
rule out. ``scheduler`` is what campaigns accept (:func:`gpudse_core.sim.campaign.run_campaign`): a
scheduler address (e.g. one started by dask-jobqueue on SLURM) or ``"local"`` for a LocalCluster.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Callable

import numpy as np

from ..errors import GpudseError
from .pool import Front, TopK, run_blocks

TASKS_PER_WORKER = 32  # runs per worker: enough to balance uneven blocks and to stop quickly


def scan_task(ev: Any, blocks: np.ndarray, bounds: tuple | None, topk: TopK | None, front: Front | None,
              ascending: bool) -> tuple[TopK | None, Front | None, int, int]:
    """One task on a worker: scan *blocks* into copies of the given pools."""
    evaluated, _, _, seen = run_blocks(ev, blocks, topk, front, bounds, ascending=ascending)
    return topk, front, evaluated, seen


# Dask's defaults cost a NumPy scan up to 2x on a worker: the statistical profiler samples the task
# thread every 10 ms, and MALLOC_TRIM_THRESHOLD_=65536 in the worker's environment makes glibc map and
# unmap every array of 128 KiB or more. A local cluster started here runs without both (measured on
# 600 blocks of a constrained Lee & Brooks scan: 1.30 s in-process, 2.43 s on a default worker,
# 1.36 s on one started here). Clusters started elsewhere can set the same two options.
WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                 "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 1 << 30}


def local_cluster(workers: int | None = None) -> Any:
    """A LocalCluster of *workers* single-threaded processes (default: one per core) set up for scans."""
    import dask
    from distributed import LocalCluster

    from .. import limits

    limits.check("local_workers", workers or 0, f"{workers or 0:,} worker processes on this machine",
                 "ask for fewer (one per core is the default)")
    with dask.config.set(WORKER_CONFIG):
        return LocalCluster(n_workers=local_scan_workers(workers), threads_per_worker=1, processes=True,
                            dashboard_address=None)


def local_scan_workers(workers: int | None) -> int:
    """The processes a local scan cluster starts: *workers* (default one per core), never more than
    ``limits.local_worker_bytes`` holds at ``limits.WORKER_BYTES`` a process, never fewer than one —
    the bound a campaign's pool keeps (:func:`gpudse_core.sim.campaign.pool_size`)."""
    from .. import limits

    fits = limits.current().local_worker_bytes // limits.WORKER_BYTES
    return max(1, min(int(workers or os.cpu_count() or 1), fits))


def connect(scheduler: str, workers: int | None) -> tuple[Any, Any]:
    """A Dask client for *scheduler* (``"local"``: a LocalCluster of *workers* processes) and the
    cluster it started, if any."""
    try:
        from distributed import Client
    except ImportError:
        raise GpudseError("running on Dask needs the 'distributed' package: pip install distributed") from None
    try:
        if scheduler == "local":
            cluster = local_cluster(workers)
            return Client(cluster), cluster
        return Client(scheduler, timeout=30), None
    except OSError as e:
        raise GpudseError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None


def run_on_dask(ev: Any, order: np.ndarray, bounds: tuple | None, topk: TopK | None, front: Front | None,
                scheduler: str, workers: int | None = None, *, stop: Callable[[], bool] | None = None,
                tick: Callable[[int], None] | None = None, client: Any = None) -> tuple[int, bool, int, int]:
    """Scan *order* (block numbers) of *ev* on Dask into *topk* / *front* (merged in place).

    Returns (cells evaluated, finished, feasible cells seen, workers)."""
    from distributed import wait

    own = client is None
    cluster = None
    if own:
        client, cluster = connect(scheduler, workers)
    try:
        n_workers = max(1, sum(client.nthreads().values()))
        runs = max(1, min(len(order), n_workers * TASKS_PER_WORKER))
        cuts = np.linspace(0, len(order), runs + 1).astype(np.int64)
        ascending = bounds is not None
        [ev_future] = client.scatter([ev], broadcast=True)
        evaluated = seen = 0
        finished = True
        pending = list(range(runs))
        running: dict[Any, int] = {}

        def submit_next() -> None:
            while pending and len(running) < 2 * n_workers:
                r = pending.pop(0)
                lo, hi = int(cuts[r]), int(cuts[r + 1])
                blocks = order[lo:hi]
                sub = None if bounds is None else tuple(None if a is None else a[lo:hi] for a in bounds)
                if sub is not None and _ruled_out(sub, topk, front):
                    if tick is not None:
                        tick(sum(ev.block_size(int(b)) for b in blocks.tolist()))
                    continue
                fut = client.submit(scan_task, ev_future, blocks, sub, copy.deepcopy(topk), copy.deepcopy(front),
                                    ascending, pure=False)
                running[fut] = r

        submit_next()
        while running:
            if stop is not None and stop():
                finished = False
                for fut in list(running):
                    fut.cancel()
                break
            try:
                done, _ = wait(list(running), timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:  # distributed's TimeoutError is the builtin one
                continue
            for fut in done:
                r = running.pop(fut)
                t, f, n_eval, n_seen = fut.result()
                if topk is not None:
                    topk.merge(t)
                if front is not None:
                    front.merge(f)
                evaluated += n_eval
                seen += n_seen
                if tick is not None:
                    tick(sum(ev.block_size(int(b)) for b in order[int(cuts[r]):int(cuts[r + 1])].tolist()))
            submit_next()
        return evaluated, finished and not pending, seen, n_workers
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()


def _ruled_out(bounds: tuple, topk: TopK | None, front: Front | None) -> bool:
    lb, lc, wmin = bounds
    for i in range(len(lb)):
        if (topk is None or topk.prunable(lb[i], wmin[i])) and (front is None or front.prunable(lb[i], lc[i], wmin[i])):
            continue
        return False
    return True
