"""Benchmark: MGPUSim (Sun et al., ISCA 2019) in the loop — simulation speed and a model fitted on its data.

Run: python benchmarks/bench_mgpusim.py [--benchmark matmul] [--size N] [--timing-points 20]
     [--campaign-points 100] [--workers 2] [--seed 1] [--out DIR]

1. Seconds per simulation: a uniform sample of ``--timing-points`` points of the ``mgpusim`` preset, each run
   alone (one at a time) with the built binary at the benchmark's default size: wall and CPU seconds per point
   (min, median, 90th percentile, max) and how they grow with the number of CUs.
2. A campaign: ``--campaign-points`` other uniform points through ``gpudse simulate --backend mgpusim
   --workers 2`` (the CLI, its SQLite store and local process pool): wall time and points per minute.
3. A model: the default model of ``gpudse fit`` (robust stepwise regression, scales from the preset) fitted on
   80 % of the campaign's points, its relative error on the other 20 % for the kernel time and the cycles.

The load average is printed beside the timings: the machine is shared, so wall time includes waiting.
Results (JSON and the campaign's table) go to ``--out`` (default ``benchmarks/results/mgpusim``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.choices import MGPUSIM_BENCHMARKS, MGPUSIM_PARAMETERS  # noqa: E402
from gpudse_core.sim import mgpusim  # noqa: E402


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timing(binary: Path, points: pd.DataFrame, bench: str, size: int) -> pd.DataFrame:
    rows = []
    for i, rec in enumerate(points.to_dict(orient="records")):
        flags = [f for k, v in rec.items() for f in (f"-{k.replace('_', '-')}", str(int(v)))]
        argv = [str(binary), "-benchmark", bench, "-count-insts=true", *flags] + (["-size", str(size)] if size else [])
        cpu0, t0 = child_cpu(), time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        wall, cpu = time.perf_counter() - t0, child_cpu() - cpu0
        if out.returncode != 0:
            raise SystemExit(f"point {i + 1} {rec} failed: {out.stderr.strip()[-400:]}")
        m = json.loads(out.stdout)
        rows.append({**rec, "cus": m["cus"], "wall_s": wall, "cpu_s": cpu, "kernel_cycles": m["kernel_cycles"]})
        print(f"  {i + 1:>3}/{len(points)} {m['cus']:>3} CUs: {wall:5.1f} s wall, {cpu:5.1f} s CPU  ({load()})",
              flush=True)
    return pd.DataFrame(rows)


def spread(x: pd.Series) -> dict:
    return {"min": float(x.min()), "median": float(x.median()), "p90": float(x.quantile(0.9)), "max": float(x.max()),
            "mean": float(x.mean())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--benchmark", default="matmul", choices=MGPUSIM_BENCHMARKS)
    ap.add_argument("--size", type=int, default=0, help="problem size (0: the benchmark's default)")
    ap.add_argument("--timing-points", type=int, default=20)
    ap.add_argument("--campaign-points", type=int, default=100, help="shrink for a quick run (at least 10)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "mgpusim")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict = {"mgpusim": f"{mgpusim.MODULE} {mgpusim.VERSION}", "benchmark": args.benchmark,
                    "size": args.size or "default", "cpus": os.cpu_count()}

    t0 = time.perf_counter()
    binary = mgpusim.build(progress=lambda line: None)
    print(f"binary ready in {time.perf_counter() - t0:.1f} s: {binary}")
    space = load_preset("mgpusim")

    if args.timing_points:
        print(f"1. seconds per simulation, {args.timing_points} uniform points run one at a time ({load()})")
        pts = sample(space, args.timing_points, seed=args.seed).points
        t = timing(binary, pts, args.benchmark, args.size)
        t.to_csv(args.out / "timing.csv", index=False)
        report["per_point_wall_s"], report["per_point_cpu_s"] = spread(t.wall_s), spread(t.cpu_s)
        report["cpu_s_by_cus"] = {int(k): float(v) for k, v in t.groupby("cus").cpu_s.median().items()}
        report["timing_load"] = load()
        print(f"   wall s: {report['per_point_wall_s']}\n   CPU s:  {report['per_point_cpu_s']}\n"
              f"   median CPU s by CUs: {report['cpu_s_by_cus']}  ({load()})")

    n = args.campaign_points
    if n:
        print(f"2. {n}-point campaign on {args.workers} workers through gpudse simulate ({load()})")
        pts = sample(space, n, seed=args.seed + 1).points
        pts.to_csv(args.out / "points.csv", index=False)
        for f in ("campaign.db", "campaign.db-wal", "campaign.db-shm"):
            (args.out / f).unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "gpudse_core", "simulate", "points.csv", "--backend", "mgpusim", "--benchmark",
               args.benchmark, "--workers", str(args.workers), "--store", "campaign.db", "-o", "results.csv"]
        if args.size:
            cmd += ["--size", str(args.size)]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, cwd=args.out, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                             capture_output=True)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            raise SystemExit(f"the campaign failed: {out.stderr[-1500:]}")
        res = pd.read_csv(args.out / "results.csv")
        report["campaign"] = {"points": len(res), "workers": args.workers, "wall_s": wall,
                              "points_per_min": 60 * len(res) / wall, "load": load(),
                              "per_point_wall_s": spread(res.wall_seconds)}
        print(f"   {len(res)} points in {wall:.0f} s ({60 * len(res) / wall:.1f} points/min; {load()})")

        from gpudse_core.model.encoding import scales_from_space
        from gpudse_core.model.stepwise import fit_stepwise

        rng = np.random.default_rng(args.seed)
        order = rng.permutation(len(res))
        n_train = int(round(0.8 * len(res)))
        train, test = res.iloc[order[:n_train]], res.iloc[order[n_train:]]
        scales, _ = scales_from_space(space)
        report["model"] = {}
        for response in ("kernel_time_s", "kernel_cycles"):
            model = fit_stepwise(train, response, params=list(MGPUSIM_PARAMETERS),
                                 scale={"__default__": "auto", **scales})
            err = np.abs(model.predict(test) - test[response].to_numpy()) / test[response].to_numpy()
            report["model"][response] = {"train": len(train), "test": len(test), "terms": model.terms,
                                         "r2": model.r2, "mean_rel_err_pct": 100 * float(err.mean()),
                                         "median_rel_err_pct": 100 * float(np.median(err)),
                                         "max_rel_err_pct": 100 * float(err.max())}
            print(f"3. {response}: fitted on {len(train)}, R² {model.r2:.3f}; held-out {len(test)} points: mean "
                  f"{100 * err.mean():.1f} %, median {100 * np.median(err):.1f} %, max {100 * err.max():.1f} % "
                  f"error; terms {' + '.join(model.terms)}")
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
