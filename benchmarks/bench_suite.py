"""Benchmark: the test suite's wall time on two workers, estimated from one run's durations.

Run: python -m pytest -q --junitxml=run.xml [-n 2 --dist loadfile]   # any run of the whole suite
     python benchmarks/bench_suite.py run.xml [--serial-wall 1193] [--workers 2]

Reads the per-test seconds of *run.xml* (setup, call and teardown), sums them per unit of work of
tests/parallel_plan.py (a file; the browser files together) and packs the units onto the workers in
order, each unit to the worker that frees up first — as pytest-xdist hands them out — in three orders:

* ``plan``: README's command (``-n 2 --dist loadfile`` with tests/parallel_plan.py): the browser unit,
  then the files with most ``slow`` tests (collected here, ``-m slow``), the rest in file order;
* ``loadfile``: pytest-xdist's own ``--dist loadfile``: every file its own unit (the browser files apart:
  each worker that gets one serves the dashboard and runs Chromium), most tests first;
* ``ideal``: longest unit first by the measured seconds (the best this packing can do).

Times measured under load are scaled so that their sum is ``--serial-wall`` (the serial suite's wall
time on idle cores), and the lower bound ``max(total / workers, largest unit)`` is printed beside them.
An estimate: a test whose processes used both cores in the serial run gets one in a parallel run.
"""

from __future__ import annotations

import argparse
import heapq
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from parallel_plan import BROWSER_UNIT, is_browser_file, unit_of  # noqa: E402


def test_seconds(junit: Path) -> dict[str, float]:
    """nodeid → seconds, from a JUnit XML report of pytest."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        cls = ""
        if not Path(ROOT / f"{path}.py").exists() and "/" in path:  # tests.test_x.TestClass
            path, cls = path.rsplit("/", 1)
        out[f"{path}.py::{cls + '::' if cls else ''}{case.get('name')}"] = float(case.get("time", 0))
    return out


def slow_tests_per_unit() -> Counter:
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "slow", "-p", "no:cacheprovider"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    return Counter(unit_of(line.strip()) for line in r.stdout.splitlines() if "::" in line)


def pack(units: list[tuple[str, float]], workers: int) -> float:
    """Wall time when each unit, in order, goes to the worker that frees up first."""
    free = [0.0] * workers
    for _, seconds in units:
        heapq.heapreplace(free, free[0] + seconds)
    return max(free)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--serial-wall", type=float, help="scale the durations to this serial wall time (s)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    tests = test_seconds(a.junit)
    scale = a.serial_wall / sum(tests.values()) if a.serial_wall else 1.0
    plan, per_file, tests_per_file = Counter(), Counter(), Counter()
    for nodeid, s in tests.items():
        plan[unit_of(nodeid)] += s * scale
        per_file[nodeid.split("::", 1)[0]] += s * scale
        tests_per_file[nodeid.split("::", 1)[0]] += 1
    slow = slow_tests_per_unit()
    first = {u: i for i, u in enumerate(sorted(plan))}
    plan_order = sorted(plan.items(), key=lambda kv: (kv[0] != BROWSER_UNIT, -slow[kv[0]], first[kv[0]]))
    loadfile_order = sorted(sorted(per_file.items()), key=lambda kv: -tests_per_file[kv[0]])  # ties: file order
    ideal = sorted(plan.items(), key=lambda kv: -kv[1])
    total = sum(plan.values())
    print(f"{len(tests)} tests, {total:.0f} s in all (scaled ×{scale:.3f}); {len(plan)} units, "
          f"browser files: {sum(1 for f in per_file if is_browser_file(f))}")
    print("largest units: " + ", ".join(f"{u} {s:.0f} s" for u, s in ideal[:8]))
    print(f"{'order':<10} {'workers':>7} {'wall (s)':>9} {'vs serial':>9}")
    print(f"{'serial':<10} {1:>7} {total:9.0f} {1:9.2f}")
    for name, order in (("plan", plan_order), ("loadfile", loadfile_order), ("ideal", ideal)):
        wall = pack(order, a.workers)
        print(f"{name:<10} {a.workers:>7} {wall:9.0f} {wall / total:9.2f}")
    print(f"lower bound: {max(total / a.workers, ideal[0][1]):.0f} s")


if __name__ == "__main__":
    main()
