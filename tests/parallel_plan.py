"""How a parallel run (``python -m pytest -q -n 2 --dist loadfile``, README's test command) splits the suite
between pytest-xdist's workers.

The unit of work a worker takes is a whole test file, as ``--dist loadfile`` says: a file's module-scoped
fixtures (a fitted model, a built program) are built once, and its tests run in their written order, as
tests/test_readme.py's commands must (one writes the file the next reads). Two refinements:

* the files that drive Chromium (their names contain ``browser``) are **one** unit, so one worker serves
  the dashboard and runs Chromium once for all of them (their fixtures are session-scoped), and two
  browser tests never compete for the two cores;
* the units go out **largest first** (a longest-processing-time-first packing): the workers send their
  collection in the order of :func:`plan_order` — the browser unit, then the files with the most tests
  marked ``slow`` (a second or more of CPU each) — and the scheduler keeps that order, where
  ``loadfile`` alone would sort by the number of tests (many quick ones first, the slow browser files
  last, leaving one worker idle at the end).

pytest-xdist's own ``--dist loadgroup`` (the ``xdist_group`` mark) would say the same, but with pytest
9.2 its groups are silently ignored: it writes the group into ``item._nodeid``, which pytest no longer
reads (reported upstream as pytest-xdist #1386), and the tests go out one by one. The file is the one
scope a nodeid still carries.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

BROWSER_UNIT = "browser"


def is_browser_file(path: str) -> bool:
    """A test file that drives Chromium (the naming rule tests/conftest.py checks)."""
    return "browser" in PurePosixPath(path).name


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: its file, or :data:`BROWSER_UNIT`."""
    path = nodeid.split("::", 1)[0]
    return BROWSER_UNIT if is_browser_file(path) else path


def plan_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """*items* with the units largest first: the browser unit, then by the number of ``slow`` tests (the
    file order otherwise kept); within a file the written order. The same on every worker."""
    slow: dict[str, int] = {}
    for item in items:
        unit = unit_of(item.nodeid)
        slow[unit] = slow.get(unit, 0) + (item.get_closest_marker("slow") is not None)
    first = {unit: i for i, unit in enumerate(dict.fromkeys(unit_of(item.nodeid) for item in items))}

    def key(unit: str) -> tuple:
        return (unit != BROWSER_UNIT, -slow[unit], first[unit])

    return sorted(items, key=lambda item: key(unit_of(item.nodeid)))


def make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` with the browser files as one unit, in the order the workers send."""
    from xdist.scheduler import LoadFileScheduling

    class PlannedFiles(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def schedule(self) -> None:
            # keep the workers' (plan_order's) order instead of sorting the units by their number of tests
            self.config.option.loadscopereorder = False
            super().schedule()

    return PlannedFiles(config, log)
