"""Benchmark: prediction accuracy of the model kinds ("Benchmarks").

Run: python benchmarks/bench_accuracy.py [--kernels AES,matMul] [--models paper,stepwise,auto,forest]
     [--repeats 3] [--train 300] [--test 1000] [--transform auto|log] [--no-hub] [--no-kernels]

One table, one row per data set:

* the 11 built-in kernels (``gpudse_core.choices.KERNELS``): a pool of uniform samples of the
  Stargazer space simulated with 1 % log-normal noise; each repeat draws 1,000 test points and,
  from the rest, N = 300 training points (disjoint). Response scale: ``--transform auto`` (default)
  lets the robust stepwise model choose log, sqrt or none by leave-one-out error on its training
  rows (its default) while paper, forest, boosting, hybrid and EBM use log; ``--transform log``
  forces log on every model (Stargazer's "log response" read as every model's);
* ``../shared/data/benchmark_hub/*.csv`` (three real GPUs, the whole tuning space measured): rows
  whose status is not ``ok`` are dropped, the same draws, N = 300.

Each kernel's pool is drawn with ``--seed`` + 100 × its place in ``KERNELS`` (not in ``--kernels``), so a run
restricted to a few kernels reproduces their rows of the whole table; ``--place N`` draws every kernel's pool
with ``--seed`` + 100 × N instead (other draws of a kernel: ``--kernels RAY --place 1``).

Everything goes through :func:`gpudse_core.model.validation.validate`, as ``gpudse validate`` does,
so the errors are those of the guarded predictions. Columns: for each model, the mean, 98th
percentile and maximum relative error (%) over all repeats' test points; ``nf``/``bd``: non-finite
and bounded predictions over all models; ``auto/forest``: the ratio of the mean errors (target
≤ 1.05); ``sw/forest mean`` and ``sw/forest max``: the default stepwise model's mean and maximum error
over the forest's (targets ≤ 1.25 and ≤ 3, docs/models.md); ``auto picked``: the candidate chosen on each
repeat's training rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.choices import KERNELS  # noqa: E402
from gpudse_core.model.validation import validate  # noqa: E402
from gpudse_core.sim.simulator import simulate  # noqa: E402

HUB = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "benchmark_hub"


def kernel_data(kernel: str, pool: int, seed: int) -> pd.DataFrame:
    pts = sample(load_preset("stargazer"), pool, seed=seed).points
    return pts.assign(cycles=simulate(pts, kernel, noise=0.01, seed=seed + 1).cycles.to_numpy())


def kernel_pools(kernels: list[str], pool: int, seed: int, place: int | None = None):
    """(kernel, its pool) for each of *kernels*, each drawn with *seed* + 100 × its place in ``KERNELS`` (or
    × *place*, the same for all: other draws of a kernel), so a kernel's pool does not depend on which others
    run with it."""
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown:
        raise ValueError(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
    for k in kernels:
        yield k, kernel_data(k, pool, seed + 100 * (KERNELS.index(k) if place is None else place))


def hub_data(path: Path) -> pd.DataFrame:
    d = pd.read_csv(path)
    return d[d["status"] == "ok"].drop(columns="status").dropna(subset=["time_ms"]).reset_index(drop=True)


def data_sets(args: argparse.Namespace, ap: argparse.ArgumentParser):
    """(name, data, response) of each table the arguments ask for: the built-in kernels' pools (unless
    --no-kernels), then the benchmark_hub tables (unless --no-hub; a note when they are absent)."""
    if not args.no_kernels:
        kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
        try:
            for k, data in kernel_pools(kernels, args.pool, args.seed, args.place):
                yield k, data, "cycles"
        except ValueError as e:
            ap.error(str(e))
    if not args.no_hub:
        if not HUB.is_dir():
            print(f"note: {HUB} not found; benchmark_hub rows skipped", file=sys.stderr)
        for path in sorted(HUB.glob("*.csv")) if HUB.is_dir() else []:
            yield path.stem.replace("convolution_", "conv "), hub_data(path), "time_ms"


def run(name: str, data: pd.DataFrame, response: str, args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    res = validate(data, response, None, train_sizes=[args.train], test_size=args.test, repeats=args.repeats,
                   models=args.models, transform=args.transform, seed=args.seed)
    row: dict = {"data": name}
    nf = bd = 0
    for m in args.models:
        c = res.cell(m, args.train)
        row[f"{m} mean"], row[f"{m} p98"], row[f"{m} max"] = 100 * c["mean"], 100 * c["p98"], 100 * c["max"]
        nf += c["nonfinite"]
        bd += c["bounded"]
    row["nf"], row["bd"] = nf, bd
    if "auto" in args.models and "forest" in args.models:
        row["auto/forest"] = row["auto mean"] / row["forest mean"]
    if "stepwise" in args.models and "forest" in args.models:
        row["sw/forest mean"] = row["stepwise mean"] / row["forest mean"]
        row["sw/forest max"] = row["stepwise max"] / row["forest max"]
    if res.chosen:
        row["auto picked"] = ", ".join(f"{k}×{v}" if v > 1 else k
                                       for k, v in Counter(res.chosen[args.train]).most_common())
    row["s"] = time.perf_counter() - t0
    print(f"  {name}: {row['s']:.0f} s", file=sys.stderr, flush=True)
    return row


def draw_arguments(ap: argparse.ArgumentParser) -> None:
    """The arguments that choose the draws (:func:`data_sets`), shared with ``bench_auto.py``."""
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train", type=int, default=300)
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--pool", type=int, default=4000, help="simulated points per kernel to draw from")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--place", type=int, default=None, metavar="N",
                    help="seed every kernel's pool with --seed + 100 × N instead of its place in the kernel list "
                         "(other draws of the same kernels)")
    ap.add_argument("--no-hub", action="store_true", help="skip the benchmark_hub GPUs")
    ap.add_argument("--no-kernels", action="store_true", help="skip the built-in kernels")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(ap)
    ap.add_argument("--models", default="paper,stepwise,auto,forest")
    ap.add_argument("--transform", choices=("auto", "log", "sqrt", "none"), default="auto",
                    help="auto: every model on its default scale (stepwise chooses; the others log); log: forced")
    args = ap.parse_args()
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    rows = []
    t0 = time.perf_counter()
    rows += [run(name, data, response, args) for name, data, response in data_sets(args, ap)]
    table = pd.DataFrame(rows).set_index("data")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 100)
    print(f"relative error (%), N = {args.train} training points, {args.test} test points x {args.repeats} repeats, "
          f"{args.transform} response scale, 1 % noise on the built-in kernels; total {time.perf_counter() - t0:.0f} s")
    print(table.to_string(float_format=lambda v: f"{v:.2f}"))


if __name__ == "__main__":
    main()
