"""Coverage of the intervals of recommended designs on real tuning spaces, calibrated against the model's own.

What an architect does: fit the default model on the designs simulated so far, ask ``explore`` for the 10
best predictions, and read each row's 95 % interval. Here the spaces are the three benchmark_hub
convolution tables in ../shared (every configuration measured on a real GPU), so every recommended
design's true time is known and each interval can be checked. Two ways to have simulated designs:

* ``uniform``: 100 designs drawn uniformly from the table's configurations (failed ones give no row);
* ``search`` (with ``--history``): the 100 designs a ``gpudse search`` simulated (``--batch 5``), and
  ``explore --exclude-simulated``, what to simulate next.

For each recommended design whose configuration ran (a failed one has no time to cover), the truth is
compared with the model's own interval (``gpudse_core.model.intervals``: the OLS formula) and with the
calibrated one explore now shows (``gpudse_core.model.calibration``: refits on 5 folds, the residuals of
the held-out rows the refits ranked best). Printed: coverage per space and pooled, the share of rows
whose prediction was below the truth, the rows held at the model's bound and the median width (upper /
lower). Fits and search histories are cached in ``--cache`` (delete it to refit).

With ``--proposals`` it measures instead the intervals a search puts on its proposals
(``gpudse_core.search.intervals``: the predicted value and its 95 % interval, recorded before each design
is simulated): ``gpudse search`` on each table (``--batch 5``, 100 simulations, seeds 0 to ``--seeds`` − 1),
every proposal made by a model whose configuration ran, its interval against the time it simulated at.

    python benchmarks/bench_intervals.py                      # 8 seeds per table, uniform designs
    python benchmarks/bench_intervals.py --seeds 4 --history  # also fits from search histories
    python benchmarks/bench_intervals.py --proposals --seeds 10  # the search's proposals
    python benchmarks/bench_intervals.py --proposals --seeds 2 --spaces "LPS×area,BFS×area,AES×area,matMul×area"
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HUB = ROOT.parent / "shared" / "data" / "benchmark_hub"
if not HUB.is_dir():
    HUB = Path("/work/shared/data/benchmark_hub")
GPUS = ("A100", "A4000", "MI250X")
N_FIT = 100
TOP = 10
LEVEL = 0.95


def load_table(gpu: str):
    from gpudse_core.sim.lookup import LookupTable

    frame = pd.read_csv(HUB / f"convolution_{gpu}.csv")
    table = LookupTable.from_frame(frame, "time_ms", status_column="status", source=gpu)
    params = [c for c in frame.columns if c not in ("time_ms", "status")]
    truth = {tuple(r): (v if s == "ok" else np.nan)
             for r, v, s in zip(frame[params].itertuples(index=False), frame.time_ms, frame.status)}
    return frame, table, params, truth


def uniform_rows(frame: pd.DataFrame, params: list[str], seed: int) -> pd.DataFrame:
    """N_FIT configurations drawn uniformly (without replacement); the ones that failed give no row."""
    pick = frame.iloc[np.random.default_rng(seed).choice(len(frame), N_FIT, replace=False)]
    return pick[pick.status == "ok"][params + ["time_ms"]].reset_index(drop=True)


def history_rows(gpu: str, seed: int, cache: Path, params: list[str]) -> pd.DataFrame:
    """The designs a 100-simulation ``gpudse search`` (batch 5) simulated, cached."""
    path = cache / f"history_{gpu}_{seed}.csv"
    if not path.is_file():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_search import make_truth, run_gpudse

        res = run_gpudse(make_truth(f"conv-{gpu}" if gpu in GPUS else gpu, {}), N_FIT, seed, 5)
        pd.DataFrame([dict(t.design, time_ms=t.value, status=t.status) for t in res.trials]).to_csv(path, index=False)
    h = pd.read_csv(path)
    return h[h.status == "ok"][params + ["time_ms"]].reset_index(drop=True)


def fitted(rows: pd.DataFrame, params: list[str], path: Path):
    from gpudse_core.model.registry import fit_model, load_model, model_to_dict

    if path.is_file():
        return load_model(path)
    model = fit_model("stepwise", rows, "time_ms", params, transform=None)  # the default: gpudse fit
    path.write_text(json.dumps(model_to_dict(model)))
    return model


def one(gpu: str, how: str, seed: int, cache: Path, tables: dict) -> list[dict]:
    from gpudse_core.explore.designs import best_designs
    from gpudse_core.model.intervals import predict_interval

    frame, table, params, truth = tables[gpu]
    rows = uniform_rows(frame, params, seed) if how == "uniform" else history_rows(gpu, seed, cache, params)
    model = fitted(rows, params, cache / f"model_{how}_{gpu}_{seed}.json")
    found = best_designs(model, table.space, top=TOP, results=rows, exclude_simulated=how == "search", level=LEVEL)
    best = found.rows
    X = best[params]
    own = predict_interval(model, X, LEVEL)
    clamped = model.bound(model.linear_predictor(X))[1]
    out = []
    for i in range(len(best)):
        t = truth.get(tuple(X.iloc[i]), np.nan)
        if not np.isfinite(t):
            continue  # a configuration that failed (or is not in the table): no time to cover
        out.append(dict(space=gpu, how=how, seed=seed, truth=t, predicted=float(best.predicted.iloc[i]),
                        own_lo=float(own.lower.iloc[i]), own_hi=float(own.upper.iloc[i]),
                        cal_lo=float(best.lower.iloc[i]), cal_hi=float(best.upper.iloc[i]), clamped=bool(clamped[i])))
    return out


def summary(d: pd.DataFrame) -> pd.DataFrame:
    def stats(g: pd.DataFrame) -> pd.Series:
        own = (g.truth >= g.own_lo) & (g.truth <= g.own_hi)
        cal = (g.truth >= g.cal_lo) & (g.truth <= g.cal_hi)
        return pd.Series({"rows": len(g), "own %": 100 * own.mean(), "calibrated %": 100 * cal.mean(),
                          "below truth %": 100 * (g.predicted < g.truth).mean(), "clamped": int(g.clamped.sum()),
                          "clamped cal %": 100 * cal[g.clamped].mean() if g.clamped.any() else np.nan,
                          "own width ×": float(np.median(g.own_hi / g.own_lo)),
                          "cal width ×": float(np.median(g.cal_hi / g.cal_lo)),
                          "cal lower > 0": bool((g.cal_lo > 0).all()),
                          "cal zero width": int((g.cal_hi <= g.cal_lo).sum())})

    per = d.groupby(["how", "space"]).apply(stats, include_groups=False)
    pooled = d.groupby("how").apply(stats, include_groups=False)
    pooled.index = pd.MultiIndex.from_tuples([(h, "pooled") for h in pooled.index], names=["how", "space"])
    return pd.concat([per, pooled]).sort_index(level=0, sort_remaining=False)


def proposal_rows(gpu: str, seed: int) -> tuple[list[dict], float, int]:
    """Every proposal of a 100-simulation search (batch 5) that carried an interval and simulated, with the
    search's propose seconds and rounds."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_search import make_truth, run_gpudse

    res = run_gpudse(make_truth(f"conv-{gpu}" if gpu in GPUS else gpu, {}), N_FIT, seed, 5)
    rows = [dict(space=gpu, seed=seed, model=t.surrogate, truth=t.value, predicted=t.predicted, lower=t.lower,
                 upper=t.upper) for t in res.trials if t.status == "ok" and t.lower is not None]
    return rows, sum(res.propose_seconds), len(res.rounds)


def proposal_summary(d: pd.DataFrame) -> pd.DataFrame:
    def stats(g: pd.DataFrame) -> pd.Series:
        hit = (g.truth >= g.lower) & (g.truth <= g.upper)
        return pd.Series({"proposals": len(g), "covered %": 100 * hit.mean(),
                          "below truth %": 100 * (g.predicted < g.truth).mean(),
                          "above upper %": 100 * (g.truth > g.upper).mean(),
                          "width ×": float(np.median(g.upper / g.lower)), "lower > 0": bool((g.lower > 0).all()),
                          "zero width": int((g.upper <= g.lower).sum())})

    per = d.groupby("space").apply(stats, include_groups=False)
    by_model = d.groupby("model").apply(stats, include_groups=False)
    by_model.index = [f"{m} proposals" for m in by_model.index]
    pooled = stats(d).to_frame("pooled").T
    return pd.concat([per, by_model, pooled])


def _timed_annotation() -> list[float]:
    """Seconds spent putting intervals on proposals (the search's ``_Loop._annotate``), appended per round."""
    from gpudse_core.search import study

    spent: list[float] = []
    annotate = study._Loop._annotate

    def timed(self, *a):
        t = time.perf_counter()
        out = annotate(self, *a)
        spent.append(time.perf_counter() - t)
        return out

    study._Loop._annotate = timed
    return spent


def proposals_main(seeds: int, cache: Path, spaces: list[str]) -> int:
    t0 = time.process_time()
    spent = _timed_annotation()
    rows, propose, rounds = [], 0.0, 0
    for gpu in spaces:
        for seed in range(seeds):
            r, p, n = proposal_rows(gpu, seed)
            rows += r
            propose, rounds = propose + p, rounds + n
    d = pd.DataFrame(rows)
    d.to_csv(cache / "proposals.csv", index=False)
    print(f"nominal {100 * LEVEL:.0f} % intervals of a search's proposals; gpudse search --batch 5, {N_FIT} "
          f"simulations, seeds 0-{seeds - 1} per table; propose {1000 * propose / max(rounds, 1):.0f} ms a round "
          f"on average, of which the intervals {1000 * sum(spent) / max(rounds, 1):.1f} ms; "
          f"{time.process_time() - t0:.0f} s of CPU")
    with pd.option_context("display.width", 200, "display.precision", 1, "display.max_columns", 20):
        print(proposal_summary(d).to_string())
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8, help="seeds per table (default 8: >= 200 recommended designs)")
    ap.add_argument("--history", action="store_true", help="also fits from 100-simulation search histories")
    ap.add_argument("--proposals", action="store_true", help="the intervals on a search's proposals instead")
    ap.add_argument("--spaces", default=",".join(GPUS), help="--proposals: the tables (A100, A4000, MI250X) or "
                    "bench_search's kernels (e.g. LPS×area, where the stepwise model proposes too)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "gpudse-bench-intervals")
    args = ap.parse_args(argv)
    if not HUB.is_dir():
        print(f"needs the benchmark_hub tables in {HUB}", file=sys.stderr)
        return 1
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.proposals:
        return proposals_main(args.seeds, args.cache, [x.strip() for x in args.spaces.split(",") if x.strip()])
    tables = {gpu: load_table(gpu) for gpu in GPUS}
    t0 = time.process_time()
    rows = []
    for how in ("uniform", "search") if args.history else ("uniform",):
        for gpu in GPUS:
            for seed in range(args.seeds):
                rows += one(gpu, how, seed, args.cache, tables)
    d = pd.DataFrame(rows)
    d.to_csv(args.cache / "rows.csv", index=False)  # every checked row, for a closer look
    print(f"nominal {100 * LEVEL:.0f} % intervals of the top {TOP} of explore; default model fitted on {N_FIT} "
          f"designs; {args.seeds} seeds per table; {time.process_time() - t0:.0f} s of CPU")
    with pd.option_context("display.width", 200, "display.precision", 1, "display.max_columns", 20):
        print(summary(d).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
