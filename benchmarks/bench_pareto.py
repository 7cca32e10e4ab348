"""Benchmark: a Pareto search against a *measured* second objective — how much of the true front's
hypervolume ``gpudse search --goal pareto --cost-column COL`` covers at a budget, side by side with
random search, in one run.

One command::

    python benchmarks/bench_pareto.py              # 10 seeds, budgets 25 / 50 / 100
    python benchmarks/bench_pareto.py --quick      # 3 seeds

The space: Starchart's k-means measurements (../shared/data/starchart/kmeans.csv; Jia et al., PACT 2013):
500 measured configurations of three tuning parameters (``ppb``, ``tpp``, ``consec``) with both
``runtime`` (s) and ``wattage`` (W). The table is not complete (11,648 combinations of the distinct
values, 500 measured), so the candidates are the table's rows, as ``gpudse search --table`` makes them.
The true front is that of all 500 rows; hypervolumes are of (log runtime, wattage) — runtimes span
0.05–6.3 s, and on a linear scale the fastest point alone decides the area — against the reference
point (the largest log runtime, the largest wattage) of the table. Covered = hypervolume of the front
found / the true front's, median and worst over seeds. ``gpudse`` runs the search as the CLI does (its
defaults; batches of --batch, a second random forest for the measured cost); ``random`` is a uniform
draw of the same number of rows. Also printed: how many of the true front's designs each simulated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TABLE = ROOT.parent / "shared" / "data" / "starchart" / "kmeans.csv"


def lookup(table):
    """The table as the search's simulator: (runtime, "", wattage) per design."""
    from gpudse_core.search.pool import row_keys

    keys = {k.tobytes(): i for i, k in enumerate(row_keys(table.digits))}
    watts = [table.measures[tuple(d)]["wattage"] for d in table.digits.tolist()]

    def evaluate(digits, designs):
        out = []
        for k in row_keys(digits):
            i = keys[k.tobytes()]
            out.append((float(table.values[i]), "", float(watts[i])))
        return out
    return evaluate, np.asarray(watts, dtype=float)


def covered(y, c, ref, true_hv):
    from gpudse_core.search.acquisition import hypervolume

    return hypervolume(np.asarray(y, float), np.asarray(c, float), ref) / true_hv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds")
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    if not TABLE.is_file():
        print(f"needs {TABLE} (the project's ../shared data)", file=sys.stderr)
        return 2
    from gpudse_core.dataio import read_table
    from gpudse_core.search.acquisition import hypervolume
    from gpudse_core.search.pool import make_pool
    from gpudse_core.search.study import run_search
    from gpudse_core.sim.lookup import LookupTable

    table = LookupTable.from_frame(read_table(TABLE), "runtime", ["ppb", "tpp", "consec"], extra=["wattage"],
                                   source=TABLE.name)
    evaluate, watts = lookup(table)
    y = np.log(table.values)  # runtimes span 0.05–6.3 s: the area on a log scale, or one point decides it
    ref = (float(y.max()), float(watts.max()))
    true_hv = hypervolume(y, watts, ref)
    seeds = range(3 if args.quick else 10)
    budgets = (25, 50, 100)
    got = {m: {b: [] for b in budgets} for m in ("gpudse", "random")}
    found = {m: {b: [] for b in budgets} for m in got}  # how many of the true front's designs were simulated
    from gpudse_core.search.acquisition import pareto_mask

    front = set(np.flatnonzero(pareto_mask(y, watts)).tolist())
    row_of = {tuple(d): i for i, d in enumerate(table.digits.tolist())}
    for seed in seeds:
        res = run_search(make_pool(table.space, table.digits), evaluate, goal="pareto", budget=max(budgets),
                         batch=args.batch, seed=seed, response="runtime", cost_column="wattage")
        ok = [t for t in res.trials if t.status == "ok"]
        rng = np.random.default_rng(1000 + seed)
        order = rng.permutation(len(y))
        for b in budgets:
            first = [t for t in ok if t.number < b]
            got["gpudse"][b].append(covered(np.log([t.value for t in first]), [t.cost for t in first], ref, true_hv))
            got["random"][b].append(covered(y[order[:b]], watts[order[:b]], ref, true_hv))
            rows = {row_of[tuple(table.space.digits_of_point(t.design))] for t in first}
            found["gpudse"][b].append(len(rows & front))
            found["random"][b].append(len(set(order[:b].tolist()) & front))
    print(f"Pareto front of runtime against measured wattage, Starchart k-means ({len(y)} measured rows; "
          f"{len(list(seeds))} seeds, batch {args.batch})")
    print("hypervolume covered (median / worst seed):")
    print(f"{'method':8s}" + "".join(f"{'B=' + str(b):>18s}" for b in budgets))
    for m in got:
        print(f"{m:8s}" + "".join(f"{np.median(got[m][b]) * 100:10.1f} % / {min(got[m][b]) * 100:4.1f}"
                                   for b in budgets))
    print(f"designs of the true front ({len(front)}) simulated (median / worst seed):")
    for m in found:
        print(f"{m:8s}" + "".join(f"{np.median(found[m][b]):10.1f}   / {min(found[m][b]):4d}" for b in budgets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
