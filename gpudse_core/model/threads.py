"""How many threads native libraries (OpenBLAS, OpenMP) may use while gpudse fits a model.

OpenBLAS and OpenMP workers spin while they wait for work. When they outnumber the cores that are
free — two threads on a 2-core machine where anything else runs, the usual case in a dashboard with
several sessions or a campaign beside it — each product waits for a descheduled thread. Measured on
the 2-core machine with one other busy process: the 40 × 20,000 stepwise search took 48.9 s with
OpenBLAS's default two threads and 6.6 s with one; one 300-row histogram-boosting fit 7.5 s instead of
0.4 s. On the same machine idle, two threads took 4.6 s and one 5.3 s: a 15 % gain when nothing else
runs against a 7× loss when anything does. So a fit uses at most half of the usable cores (at least one,
at most eight): on a laptop or a small server one thread, on a cluster node several, never all of them.
"""

from __future__ import annotations

import os
from typing import Any

MAX_THREADS = 8


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def fit_threads() -> int:
    """Threads a fit's linear algebra may use: half the usable cores, from 1 to MAX_THREADS."""
    return max(1, min(MAX_THREADS, usable_cores() // 2))


_controllers: dict[frozenset, Any] = {}


def _controller() -> Any:
    """threadpoolctl's view of the loaded native libraries, found once per set of loaded modules
    (finding them costs ~3 ms, a fifth of a 300-row stepwise fit; using a found one ~0.05 ms)."""
    import sys

    from threadpoolctl import ThreadpoolController

    # the modules whose import loads a native thread pool (histogram boosting's Cython code loads
    # OpenMP, only when sklearn.ensemble is imported: a controller found before it misses OpenMP and
    # left the first boosting fit of a process with spinning threads, 28 s instead of 1.6 s)
    key = frozenset(m for m in ("numpy", "scipy.linalg", "sklearn", "sklearn.ensemble", "interpret",
                                "interpret.glassbox") if m in sys.modules)
    if key not in _controllers:
        _controllers[key] = ThreadpoolController()
    return _controllers[key]


def limited(threads: int | None = None) -> Any:
    """A context in which OpenBLAS/OpenMP use at most *threads* (default :func:`fit_threads`)."""
    return _controller().limit(limits=threads or fit_threads())


def one_thread() -> Any:
    """Native thread pools single-threaded (the learners' OpenMP: see the module docstring)."""
    return limited(1)
