"""Benchmark: an external-command campaign on one and on two Dask workers (docs/simulations.md "Running on a cluster").

Run: python benchmarks/bench_dask.py

200 runs of a command that sleeps 0.2 s (a stand-in simulator printing GPGPU-Sim statistics) through
a Dask LocalCluster with one worker, then two (required: two workers take at most 0.6x the time of one).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.sim.campaign import CommandBackend, run_campaign  # noqa: E402
from gpudse_core.sim.store import CampaignStore  # noqa: E402

# the external command: sleep 0.2 s, then print GPGPU-Sim-style statistics
COMMAND = ["/bin/sh", "-c", "sleep 0.2; printf 'kernel_name = k\\ngpu_sim_cycle = 1000\\ngpu_tot_sim_cycle = 1000\\n'"]


def main() -> None:
    pts = sample(load_preset("stargazer"), 200, seed=1).points
    times = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / "sim.toml").write_text(f"command = {json.dumps(COMMAND)}\n"  # JSON strings are TOML strings
                                        'workdir = "runs"\nmetrics = ["gpu_tot_sim_cycle"]\n')
            backend = CommandBackend.from_file(d / "sim.toml")
            with CampaignStore(d / "c.db") as store:
                store.open(backend.spec(), pts)
                t = time.perf_counter()
                final = run_campaign(store, backend, workers=workers, scheduler="local")
                times[workers] = time.perf_counter() - t
            assert final.done == 200, final
        print(f"200 runs of a 0.2 s command, {workers} Dask worker(s): {times[workers]:.1f} s")
    print(f"two workers / one worker = {times[2] / times[1]:.2f} (required ≤ 0.60)")


if __name__ == "__main__":
    main()
