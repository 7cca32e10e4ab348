"""Whole-process start-up of the command line: what a user on a cluster waits for.

    python benchmarks/bench_cli.py [--repeats 5]

Each command runs as its own process (`python -m gpudse_core …`, imports included), in a temporary
folder, repeated; the minimum wall time is printed (the usual figure for start-up: the other runs
only add noise from the machine). Targets: `gpudse --help` ≤ 0.3 s, a 300-point `sample` ≤ 0.6 s,
`gpudse predict` of 1,000 points with a saved model of every kind ≤ 1 s (the learners' files hold
their fitted trees / EBM tables, evaluated with NumPy: no refit, no scikit-learn). The models are
fitted once, untimed, on the 300-point workflow's results. The other commands are printed for
reference; the child processes' CPU seconds (user + system) are shown beside the wall time, since
on a shared machine the wall time also counts waiting for a core.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARAMS = "blk,cc,tc,smp,ccp,simd,mshr,dramq,intra,inter"
COMMANDS = [  # (label, argv, target seconds or None)
    ("gpudse --help", ["--help"], 0.3),
    ("gpudse sample stargazer -n 300", ["sample", "stargazer", "-n", "300", "--seed", "1", "-o", "samples.csv"], 0.6),
    ("gpudse simulate (300 points, matMul)", ["simulate", "samples.csv", "--kernel", "matMul", "--noise", "0.01",
                                              "--seed", "1", "--workers", "1", "-o", "results.csv"], None),
    ("gpudse fit (300 rows)", ["fit", "results.csv", "--response", "cycles", "--params", PARAMS, "--transform", "log",
                               "-o", "model.json", "--json"], None),
    ("gpudse predict (300 points)", ["predict", "model.json", "samples.csv", "-o", "pred.csv"], None),
]
KINDS = ("stepwise", "forest", "boosting", "hybrid", "ebm")
SETUP = [["sample", "stargazer", "-n", "1000", "--seed", "2", "-o", "points1k.csv"]] + [
    ["fit", "results.csv", "--response", "cycles", "--params", PARAMS, "--model", k, "--transform", "log",
     "-o", f"{k}.json"] for k in KINDS]
PREDICT = [(f"gpudse predict, {k} (1,000 points)", ["predict", f"{k}.json", "points1k.csv", "-o", f"pred_{k}.csv"], 1.0)
           for k in KINDS]


def run(argv: list[str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one whole process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = os.times()
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "gpudse_core", *argv], cwd=cwd, env=env, capture_output=True,
                       text=True)
    dt = time.perf_counter() - t0
    after = os.times()
    if r.returncode != 0:
        raise SystemExit(f"gpudse {' '.join(argv)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return dt, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"whole-process wall time, min of {args.repeats} (python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f})")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, argv, target) in enumerate(COMMANDS + PREDICT):
            if i == len(COMMANDS):
                for setup in SETUP:
                    run(setup, tmp)
            runs = [run(argv, tmp) for _ in range(args.repeats)]
            times = sorted(w for w, _ in runs)
            best = times[0]
            cpu = min(c for _, c in runs)
            verdict = "" if target is None else (f"  target ≤ {target:g} s: " + ("met" if best <= target else "MISSED"))
            print(f"{label:44s} {best:6.3f} s  (median {times[len(times) // 2]:.3f} s, CPU {cpu:.3f} s){verdict}")


if __name__ == "__main__":
    main()
