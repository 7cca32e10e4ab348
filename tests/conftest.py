"""Shared fixtures. Tests that read ../shared skip with a reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

if os.environ.get("PYTEST_XDIST_WORKER"):
    # One native thread per pytest-xdist worker (and its subprocesses), set before numpy loads OpenBLAS: two
    # workers on two cores each spinning a second OpenBLAS/OpenMP thread wait on descheduled threads
    # (gpudse_core/model/threads.py). Measured, the fast loop on two workers: 188 s of wall time and 197 s of
    # CPU with the libraries' default two threads each, 86 s and 157 s with one (serially: 158 s and 147 s).
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest
from hypothesis import settings

# the real-browser tests' session fixtures: one served dashboard and one Chromium for all of them
from browser_support import backends, browser, home, server  # noqa: F401
import parallel_plan

# No per-example deadlines: they are timing assertions, flaky on shared 2-core CI machines.
settings.register_profile("gpudse", deadline=None, print_blob=True)
settings.load_profile("gpudse")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared (papers and real data) is not present beside this checkout")
    return SHARED


# fixtures that make a test slow (CONTRIBUTING.md's fast loop leaves it out); the first two make it a browser test
SLOW_FIXTURES = {"server": "a served dashboard", "browser": "headless Chromium",
                 "binary": "the MGPUSim program, built with Go on first use", "cluster": "a Dask cluster"}
BROWSER_FIXTURES = {"server", "browser"}


@pytest.hookimpl(tryfirst=True)  # before pytest's -m deselects by the marks given here
def pytest_collection_modifyitems(config, items):
    """A test that uses a fixture of :data:`SLOW_FIXTURES` is marked ``slow`` (and ``browser`` if it drives
    Chromium or serves the dashboard), so no file has to remember to. On a pytest-xdist worker the tests
    are then put in :func:`parallel_plan.plan_order`."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
            if not parallel_plan.is_browser_file(str(item.path)):
                raise pytest.UsageError(f"{item.nodeid} drives Chromium: move it to a test file whose name contains "
                                        f"'browser' (a parallel run gives those files to one worker together)")
        if used & set(SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):
        items[:] = parallel_plan.plan_order(items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: how the controller hands out the tests
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return parallel_plan.make_scheduler(config, log)
    return None
