"""Benchmark: the built-in simulator over the entire Stargazer space.

Run: python benchmarks/bench_simulator.py

Prints design points per second for each of the eleven Table 4 kernels over all 933,120 points
(required: at least 10^6 per second on one core), and the whole-space time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core import load_preset  # noqa: E402
from gpudse_core.sim.simulator import KERNELS, simulate  # noqa: E402


def main() -> None:
    space = load_preset("stargazer")
    every = pd.concat([f for _, f in space.iter_chunks(chunk_size=1 << 20)], ignore_index=True)
    print(f"built-in simulator over all {len(every):,} Stargazer design points (best of 3)")
    rates = []
    for name in KERNELS:
        best = min(_time(lambda: simulate(every, name)) for _ in range(3))
        rates.append(len(every) / best)
        print(f"  {name:9s} {best * 1e3:7.0f} ms  {len(every) / best / 1e6:5.2f} M points/s")
    print(f"slowest {min(rates) / 1e6:.2f} M points/s (required ≥ 1.00)")


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
