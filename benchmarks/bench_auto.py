"""Benchmark: ``--model auto``'s rules side by side, its mean error over the forest's (target ≤ 1.05).

Run: python benchmarks/bench_auto.py [--kernels BFS,bfs] [--no-kernels] [--no-hub] [--seed 0] [--pool 4000]
     [--repeats 3] [--train 300] [--test 1000]

The draws of ``benchmarks/bench_accuracy.py`` with the same arguments (its kernel pools and benchmark_hub
tables, the same test and training rows of each repeat, the same seeds), so a row here matches that table's
``auto/forest`` column for the rule it ran with. On each training draw the candidates are cross-validated once
(:func:`gpudse_core.model.auto.cross_validate`, every fold of every candidate: no early stop) and each rule of
:data:`gpudse_core.model.auto.RULES` picks from that one table; the picks and the forest are refitted on the
whole draw and scored on the test rows, as ``gpudse validate`` scores them. Columns: the forest's mean relative
error (%) over all repeats' test points; for each rule, the ratio of its pick's mean to the forest's and the
picks (``×n`` when picked on n repeats).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_accuracy import data_sets, draw_arguments  # noqa: E402
from gpudse_core.model.auto import RULES, choose, cross_validate  # noqa: E402
from gpudse_core.model.kinds import fit_kind  # noqa: E402
from gpudse_core.model.metrics import relative_errors  # noqa: E402


def draws(data: pd.DataFrame, args: argparse.Namespace):
    """(repeat, training rows, test rows) as :func:`gpudse_core.model.validation.validate` draws them."""
    rng = np.random.default_rng(args.seed)
    for rep in range(args.repeats):
        order = rng.permutation(len(data))
        test = data.iloc[order[:args.test]].reset_index(drop=True)
        train = data.iloc[rng.choice(order[args.test:], size=args.train, replace=False)].reset_index(drop=True)
        yield rep, train, test


def run(name: str, data: pd.DataFrame, response: str, args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    params = [c for c in data.columns if c != response]
    data = data[params + [response]].reset_index(drop=True)
    errors: dict[str, list[float]] = {r: [] for r in ("forest", *RULES)}
    picks: dict[str, list[str]] = {r: [] for r in RULES}
    for rep, train, test in draws(data, args):
        seed = args.seed + rep
        table = cross_validate(train, response, params, transform="auto", seed=seed, stop_early=False)
        chosen = {r: choose(table, 5, rule=r)[0] for r in RULES}
        y = test[response].to_numpy(float)
        for kind in sorted({"forest", *chosen.values()}):
            model = fit_kind(kind, train, response, params, transform="auto", seed=seed)
            e = float(np.mean(relative_errors(y, model.predict_details(test)["predicted"].to_numpy())))
            for r in [k for k in ("forest", *RULES) if (k == "forest" and kind == "forest") or chosen.get(k) == kind]:
                errors[r].append(e)
        for r in RULES:
            picks[r].append(chosen[r])
    forest = float(np.mean(errors["forest"]))
    row: dict = {"data": name, "forest mean": 100 * forest}
    for r in RULES:
        row[f"{r}/forest"] = float(np.mean(errors[r])) / forest
    for r in RULES:
        row[f"{r} picked"] = ", ".join(f"{k}×{v}" if v > 1 else k for k, v in Counter(picks[r]).most_common())
    row["s"] = time.perf_counter() - t0
    print(f"  {name}: {row['s']:.0f} s", file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(ap)
    args = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    rows += [run(name, data, response, args) for name, data, response in data_sets(args, ap)]
    table = pd.DataFrame(rows).set_index("data")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 100)
    print(f"auto's mean relative error over the forest's, N = {args.train} training points, {args.test} test points "
          f"x {args.repeats} repeats, seed {args.seed}; rules: {', '.join(RULES)} (the default first); "
          f"total {time.perf_counter() - t0:.0f} s")
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
