"""Benchmark: the default model against the random forest on every real table, several draws.

Run: python benchmarks/bench_tables.py [--seeds 1000,1001,1002 or 1000-1009]
     [--tables A100,A4000,MI250X,kmeans,kmeans-watt,matrix] [--train 300] [--test 1000] [--models stepwise,forest]

The real tables of ``../shared/data`` (not shipped; skipped with a note when absent):

* ``benchmark_hub/convolution_{A100,A4000,MI250X}.csv``, ``time_ms`` of the rows whose status is ``ok``:
  per seed, 300 random rows fit and 1,000 of the rest are predicted;
* ``starchart/kmeans.csv``, ``runtime`` and ``wattage`` (500 rows): 300 fit, the other 200 predicted;
* ``stargazer/matrix-training.csv``, ``runtime`` (the authors' 300 GPGPU-Sim runs): 3-fold
  cross-validation per seed (200 fit, 100 predicted, each row predicted once a seed).

Every prediction goes through the model's guarded ``predict_details``, as ``gpudse predict`` and
``gpudse validate`` show them; the models are fitted as ``gpudse fit`` fits them (``transform`` auto:
the stepwise model chooses its scale, the forest uses log). The seeds default to draws no other
benchmark uses. Printed per table: each model's mean and max relative error (%) pooled over the seeds,
the ratios default/forest (targets: mean ≤ 1.25, max ≤ 3), the worst seed's mean ratio, and how many
default predictions were bounded (held at the bound) and flagged as extrapolated.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core.model.metrics import relative_errors  # noqa: E402
from gpudse_core.model.registry import fit_model  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
TABLES = {  # name: (file, response, columns left out, draw: "split" or "cv")
    "A100": ("benchmark_hub/convolution_A100.csv", "time_ms", ("status",), "split"),
    "A4000": ("benchmark_hub/convolution_A4000.csv", "time_ms", ("status",), "split"),
    "MI250X": ("benchmark_hub/convolution_MI250X.csv", "time_ms", ("status",), "split"),
    "kmeans": ("starchart/kmeans.csv", "runtime", ("wattage",), "split"),
    "kmeans-watt": ("starchart/kmeans.csv", "wattage", ("runtime",), "split"),
    "matrix": ("stargazer/matrix-training.csv", "runtime", (), "cv"),
}


def load(name: str) -> tuple[pd.DataFrame, str] | None:
    file, response, drop, _ = TABLES[name]
    path = SHARED / file
    if not path.is_file():
        return None
    d = pd.read_csv(path)
    if "status" in d.columns:
        d = d[d["status"] == "ok"]
    d = d.drop(columns=[c for c in drop if c in d.columns]).dropna(subset=[response]).reset_index(drop=True)
    return d, response


def draws(name: str, n: int, seed: int, train: int, test: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(training rows, test rows) of one seed: one split, or 3 folds for the cross-validated table."""
    order = np.random.default_rng(seed).permutation(n)
    if TABLES[name][3] == "cv":
        folds = np.array_split(order, 3)
        return [(np.concatenate([f for j, f in enumerate(folds) if j != i]), folds[i]) for i in range(3)]
    return [(order[:train], order[train:train + test])]


def errors(data: pd.DataFrame, response: str, fit_rows: np.ndarray, test_rows: np.ndarray, kind: str,
           seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    train, test = data.iloc[fit_rows].reset_index(drop=True), data.iloc[test_rows].reset_index(drop=True)
    params = [c for c in data.columns if c != response]
    model = fit_model(kind, train, response, params, transform=None, seed=seed)
    det = model.predict_details(test[params])
    err = relative_errors(test[response].to_numpy(float), det["predicted"].to_numpy(float))
    return err, det["bounded"].to_numpy(bool), det["extrapolation"].to_numpy(dtype=str) != ""


def run(name: str, args: argparse.Namespace) -> dict | None:
    loaded = load(name)
    if loaded is None:
        print(f"note: {TABLES[name][0]} not found under {SHARED}; {name} skipped", file=sys.stderr)
        return None
    data, response = loaded
    t0 = time.perf_counter()
    pooled: dict[str, list[np.ndarray]] = {m: [] for m in args.models}
    per_seed: dict[str, list[float]] = {m: [] for m in args.models}
    bounded = extrapolated = 0
    for seed in args.seeds:
        seed_err = {m: [] for m in args.models}
        for fit_rows, test_rows in draws(name, len(data), seed, args.train, args.test):
            for m in args.models:
                e, b, x = errors(data, response, fit_rows, test_rows, m, seed)
                seed_err[m].append(e)
                if m == args.models[0]:
                    bounded += int(b.sum())
                    extrapolated += int(x.sum())
        for m in args.models:
            e = np.concatenate(seed_err[m])
            pooled[m].append(e)
            per_seed[m].append(float(e.mean()))
    row: dict = {"table": name}
    for m in args.models:
        e = np.concatenate(pooled[m])
        row[f"{m} mean"], row[f"{m} max"] = 100 * e.mean(), 100 * e.max()
    a, b = args.models[0], args.models[-1]
    if a != b:
        row["mean ratio"] = row[f"{a} mean"] / row[f"{b} mean"]
        row["max ratio"] = row[f"{a} max"] / row[f"{b} max"]
        row["worst seed"] = max(x / y for x, y in zip(per_seed[a], per_seed[b]))
    row["bounded"], row["extrap"] = bounded, extrapolated
    row["s"] = time.perf_counter() - t0
    print(f"  {name}: {row['s']:.0f} s; per-seed {a} mean %: "
          + " ".join(f"{100 * v:.1f}" for v in per_seed[a])
          + (f"; {b}: " + " ".join(f"{100 * v:.1f}" for v in per_seed[b]) if a != b else ""),
          file=sys.stderr, flush=True)
    return row


def _seed_range(text: str) -> range:
    """``"1000"`` or ``"1000-1009"`` (both ends included)."""
    lo, _, hi = text.strip().partition("-")
    return range(int(lo), int(hi or lo) + 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1000,1001,1002", help="comma-separated seeds or ranges (1000-1009)")
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--models", default="stepwise,forest", help="the first is compared with the last")
    ap.add_argument("--train", type=int, default=300)
    ap.add_argument("--test", type=int, default=1000)
    args = ap.parse_args()
    args.seeds = [seed for part in args.seeds.split(",") if part.strip() for seed in _seed_range(part)]
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    t0 = time.perf_counter()
    rows = [r for r in (run(t.strip(), args) for t in args.tables.split(",") if t.strip()) if r]
    if not rows:
        print("no table found", file=sys.stderr)
        return
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 100)
    print(f"relative error (%) pooled over seeds {', '.join(map(str, args.seeds))}; ratios {args.models[0]} / "
          f"{args.models[-1]} (targets: mean <= 1.25, max <= 3); total {time.perf_counter() - t0:.0f} s")
    print(pd.DataFrame(rows).set_index("table").to_string(float_format=lambda v: f"{v:.2f}"))


if __name__ == "__main__":
    main()
