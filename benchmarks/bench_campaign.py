"""Benchmark: a campaign end to end (docs/simulations.md; hostile input for the fault-tolerance costs).

Run: python benchmarks/bench_campaign.py

1. 10,000 Stargazer design points through the local runner with the analytical backend and the SQLite
   store, attempts recorded (required: at least 2,000 points per second end to end, store writes included).
2. Opening a 50,000-point store for writing (stamp and schema checks, PRAGMA quick_check, lease) and
   reading its progress without a lease (the dashboard's progress bar).
3. The per-run cost of the command backend's supervision (run directory, supervisor process, log
   capture): 40 runs of /bin/true.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.sim.campaign import AnalyticalBackend, points_spec, run_campaign  # noqa: E402
from gpudse_core.sim.command import CommandBackend  # noqa: E402
from gpudse_core.sim.store import CampaignStore, progress_of  # noqa: E402


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

    big = sample(load_preset("stargazer"), 50_000, seed=2).points
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.db"
        with CampaignStore(path) as store:
            backend = AnalyticalBackend("BFS")
            store.open(backend.spec(), big)
            run_campaign(store, backend, workers=2)
        t = time.perf_counter()
        with CampaignStore(path) as store:
            store.open(backend.spec(), big)
        t_open = time.perf_counter() - t
        t = time.perf_counter()
        for _ in range(10):
            progress_of(path)
        t_prog = (time.perf_counter() - t) / 10
        print(f"50,000-point store ({path.stat().st_size / 2**20:.1f} MiB): open for writing (checks, quick_check, "
              f"lease) {t_open * 1000:.0f} ms; read-only progress {t_prog * 1000:.1f} ms")

    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "sim.toml").write_text('command = ["/bin/sh", "-c", "echo kernel_name = k; echo gpu_tot_sim_cycle = 1"]\n'
                                    'workdir = "runs"\nmetrics = ["gpu_tot_sim_cycle"]\n')
        be = CommandBackend.from_file(d / "sim.toml")
        t = time.perf_counter()
        for i in range(40):
            assert be.run_one(i, {}, 1).ok
        per = (time.perf_counter() - t) / 40
        print(f"command backend, supervised run of a trivial command: {per * 1000:.0f} ms per run "
              f"(run directory, supervisor, log capture, parse)")


if __name__ == "__main__":
    main()
