"""Benchmark: a campaign end to end (simulation-campaigns issue).

Run: python benchmarks/bench_campaign.py

10,000 Stargazer design points through the local runner with the analytical backend and the SQLite
store (required: at least 2,000 points per second end to end, store writes included).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.sim.campaign import AnalyticalBackend, points_spec, run_campaign  # noqa: E402
from gpudse_core.sim.store import CampaignStore  # noqa: E402


def main() -> None:
    pts = sample(load_preset("stargazer"), 10_000, seed=1).points
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            with CampaignStore(Path(d) / "c.db") as store:
                backend = AnalyticalBackend("matMul", noise=0.02, seed=1)
                store.open({**backend.spec(), **points_spec(pts)}, pts)
                final = run_campaign(store, backend, workers=workers)
                table = store.table()
            dt = time.perf_counter() - t
        assert final.done == len(table) == 10_000
        print(f"10,000 points, analytical backend, local runner with {workers} worker(s), SQLite store: "
              f"{dt:.2f} s = {10_000 / dt:,.0f} points/s (required ≥ 2,000)")


if __name__ == "__main__":
    main()
