"""Benchmark: explore's best designs ranked by the equation (before) or the guarded prediction (after).

Run: python benchmarks/bench_explore_rank.py [--cases bfs:11,bfs:12,bfs:13,BFS:11,RAY:11,backprop:11]
     [--train 300] [--top 10]

For each kernel and seed: the 300 training rows ``bench_accuracy.py`` draws (uniform designs of the
Stargazer space simulated with 1 % log-normal noise; ``--draw uniform``: 300 sampled afresh), the default
stepwise model fitted on them (``gpudse fit``'s
default), then ``gpudse explore MODEL stargazer --top 10 --json --rank R`` run as a whole process for R =
equation (the scan's own order, before) and guarded (the order of the shown prediction, after). The
built-in simulator gives the truth: each recommended row's shown design is simulated without noise, and
the whole space (933,120 designs) too, for its true optimum. One line per case and ranking: the best and
mean true cycles of the 10 rows, row 1's true regret against the optimum (%), how many rows the
neighbour envelope held, the CPU seconds of the explore process (user + system), how many rows the
guarded ranking shows that the equation's does not, and whether its note says the order is not proven.
``--in-process`` computes the same rows without the process and the intervals, for many cases cheaply
(``cpu s``: the CPU of ``best_designs`` alone).
A case ``A100:S`` (A4000, MI250X) is a benchmark_hub convolution table instead, every configuration
measured: 300 random ok rows fitted, the rows' measured times (in process, ``cpu s`` of ``best_designs``
alone; regret against the table's
fastest; a configuration that failed counts in ``failed``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.model.registry import fit_model, save_model  # noqa: E402
from gpudse_core.sim.simulator import simulate  # noqa: E402
from gpudse_core.choices import KERNELS  # noqa: E402
from gpudse_core.explore.designs import best_designs  # noqa: E402

from bench_accuracy import kernel_data  # noqa: E402

RANKS = ("equation", "guarded")
HUB_GPUS = ("A100", "A4000", "MI250X")  # benchmark_hub's convolution tables: the case A100:1000 fits one of them


def optimum(kernel: str) -> float:
    """The true (noise-free) lowest cycles over every feasible design of the Stargazer space."""
    space = load_preset("stargazer")
    best = np.inf
    step = 1 << 17
    for start in range(0, space.size, step):
        digits = space.decode(np.arange(start, min(start + step, space.size), dtype=np.int64))
        digits = digits[space.feasible_mask(digits)]
        if len(digits):
            best = min(best, float(simulate(space.frame(digits), kernel, noise=0.0, seed=0).cycles.min()))
    return best


def explore(model_path: str, rank: str, top: int) -> tuple[dict, float]:
    """``gpudse explore`` as a whole process: its JSON answer and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "gpudse_core", "explore", model_path, "stargazer", "--top", str(top),
                          "--json", "--rank", rank], capture_output=True, text=True, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.stdout), cpu


def training_rows(kernel: str, seed: int, args: argparse.Namespace) -> pd.DataFrame:
    """The rows ``bench_accuracy.py --no-hub --seed S --pool 1500 --repeats 1`` fits the kernel on
    (``--draw accuracy``), or *train* uniform designs sampled with the seed (``--draw uniform``)."""
    space = load_preset("stargazer")
    if args.draw == "uniform":
        pts = sample(space, args.train, seed=seed).points
        return pts.assign(cycles=simulate(pts, kernel, noise=0.01, seed=seed + 1).cycles.to_numpy())
    pool = kernel_data(kernel, 1500, seed + 100 * KERNELS.index(kernel))
    rng = np.random.default_rng(seed)  # validate's draw: 1,000 test rows, then the training rows from the rest
    order = rng.permutation(len(pool))
    return pool.iloc[rng.choice(order[1000:], size=args.train, replace=False)].reset_index(drop=True)


def hub_table(gpu: str) -> tuple[object, pd.DataFrame, list[str], dict]:
    """A benchmark_hub convolution table (every configuration measured): its space, the ok rows, the
    parameters and each configuration's time (NaN where it failed), as ``bench_intervals.py`` reads it."""
    from bench_intervals import load_table

    frame, table, params, truth = load_table(gpu)
    ok = frame[frame.status == "ok"].dropna(subset=["time_ms"]).reset_index(drop=True)
    return table.space, ok, params, truth


def run_hub(gpu: str, seed: int, args: argparse.Namespace) -> list[dict]:
    """One real table: 300 random ok rows fitted (the default model), explore's rows under both rankings,
    their measured times (failed configurations counted apart)."""
    space, ok, params, truth = hub_table(gpu)
    rows = ok.iloc[np.random.default_rng(seed).choice(len(ok), args.train, replace=False)]
    model = fit_model("stepwise", rows[params + ["time_ms"]], "time_ms", params, transform=None, seed=seed)
    opt = float(ok.time_ms.min())
    out, shown_by = [], {}
    for rank in RANKS:
        t0 = time.process_time()
        found = best_designs(model, space, top=args.top, level=None, rank=rank)
        cpu = time.process_time() - t0
        X = found.rows[params]
        shown_by[rank] = set(map(tuple, X.astype(str).to_numpy().tolist()))
        true = np.array([truth.get(tuple(r), np.nan) for r in X.itertuples(index=False)], dtype=float)
        good = true[np.isfinite(true)]
        held = int(model.predict_details(X)["bounded"].sum())
        out.append({"case": f"{gpu} seed {seed}", "rank": rank, "best true": good.min() if good.size else np.nan,
                    "mean true": good.mean() if good.size else np.nan,
                    "row 1 regret %": 100 * (true[0] / opt - 1), "best regret %": 100 * (good.min() / opt - 1)
                    if good.size else np.nan, "held": held, "row 1 predicted": found.rows.predicted.iloc[0],
                    "cpu s": cpu, "new rows": len(shown_by[rank] - shown_by[RANKS[0]]),
                    "unproven": any("could rank higher" in n for n in found.notes),
                    "failed": int((~np.isfinite(true)).sum())})
    return out


def run(kernel: str, seed: int, args: argparse.Namespace, opt: float) -> list[dict]:
    space = load_preset("stargazer")
    data = training_rows(kernel, seed, args)
    model = fit_model("stepwise", data, "cycles", list(space.parameter_names), transform=None, seed=seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "model.json")
        save_model(model, path)
        shown_by = {}
        for rank in RANKS:
            if args.in_process:  # the same rows without the process or the intervals: many cases cheaply
                t0 = time.process_time()
                found = best_designs(model, space, top=args.top, level=None, rank=rank)
                doc, cpu = {"best": found.rows.to_dict("records"), "notes": found.notes}, time.process_time() - t0
            else:
                doc, cpu = explore(path, rank, args.top)
            shown = pd.DataFrame(doc["best"])[list(space.parameter_names)]
            shown_by[rank] = set(map(tuple, shown.astype(str).to_numpy().tolist()))
            true = simulate(shown, kernel, noise=0.0, seed=0).cycles.to_numpy(float)
            held = int(model.predict_details(shown)["bounded"].sum())
            rows.append({"case": f"{kernel} seed {seed}", "rank": rank, "best true": true.min(),
                         "mean true": true.mean(), "row 1 regret %": 100 * (true[0] / opt - 1),
                         "best regret %": 100 * (true.min() / opt - 1), "held": held,
                         "row 1 predicted": doc["best"][0]["predicted"], "cpu s": cpu,
                         "new rows": len(shown_by[rank] - shown_by[RANKS[0]]),
                         "unproven": any("could rank higher" in n for n in doc.get("notes", []))})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="bfs:11,bfs:12,bfs:13,BFS:11,RAY:11,backprop:11",
                    help="kernel:seed, comma-separated")
    ap.add_argument("--train", type=int, default=300)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--in-process", action="store_true",
                    help="best_designs in this process without intervals (no CPU figure): many cases cheaply")
    ap.add_argument("--draw", choices=("accuracy", "uniform"), default="accuracy",
                    help="training rows: bench_accuracy's (pool of 1,500, default) or uniform designs")
    args = ap.parse_args()
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cases.split(",")]
    optima: dict[str, float] = {}
    out = []
    for kernel, seed in cases:
        if kernel in HUB_GPUS:
            out += run_hub(kernel, seed, args)
            print(pd.DataFrame(out[-2:]).to_string(index=False, float_format=lambda v: f"{v:,.4g}"), flush=True)
            continue
        if kernel not in optima:
            optima[kernel] = optimum(kernel)
        out += run(kernel, seed, args, optima[kernel])
        print(pd.DataFrame(out[-2:]).to_string(index=False, float_format=lambda v: f"{v:,.4g}"), flush=True)
    table = pd.DataFrame(out)
    print("\nall cases (true optimum per kernel: " + ", ".join(f"{k} {v:,.0f}" for k, v in optima.items()) + ")")
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    if "failed" not in table.columns:
        table["failed"] = 0
    means = table.groupby("rank")[["row 1 regret %", "best regret %", "mean true", "cpu s", "new rows"]].mean()
    means["failed rows"] = table.groupby("rank")["failed"].sum()
    print(f"\ncases whose rows differ: {int((table['new rows'] > 0).sum())} of {len(cases)}; unproven (depth cap or a "
          f"hold improving a prediction): {int(table.unproven.sum())}")
    print("\nmean over cases (failed rows: summed; regrets over the cases whose rows were measured):\n"
          + means.to_string(float_format=lambda v: f"{v:,.3g}"))


if __name__ == "__main__":
    main()
