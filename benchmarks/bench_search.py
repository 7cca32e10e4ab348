"""Benchmark: how close to the true best design a budget of B simulations gets (regret).

One command (optuna is a benchmark-only dependency: benchmarks/requirements.txt)::

    python benchmarks/bench_search.py                  # the full run: 10 seeds, B = 50/100/200, 7 spaces
    python benchmarks/bench_search.py --quick          # 3 seeds, two spaces, while developing

Spaces with exhaustive truth: the three benchmark_hub convolution tables in ../shared (real GPU
measurements; every configuration's time known; failed configurations cost budget) and the built-in
simulator on four kernels over Stargazer's 933,120-point space (all simulated once). Regret = value of
the best design found / true best − 1, median over seeds. Methods, side by side at the same budgets:

* ``gpudse``  — gpudse_core.search (random-forest EI, one proposal per round unless --batch);
* ``random``  — random search, the exact expectation over draws without replacement;
* ``one-shot``— sample B−10 designs uniformly, fit the default model (stepwise), simulate its
  predicted 10 best (distinct designs not yet simulated);
* ``tpe``     — optuna's TPE sampler (categorical parameters; a failed design is a failed trial).

``--accuracy`` also compares ``--goal accuracy`` with uniform sampling: the forest surrogate's mean
relative error over the whole space after N simulations.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HUB = ROOT.parent / "shared" / "data" / "benchmark_hub"
if not HUB.is_dir():
    HUB = Path("/work/shared/data/benchmark_hub")
KERNELS = ("LPS", "BFS", "AES", "matMul")  # the four with the fewest ties for the best design
BUDGETS = (50, 100, 200)


class Truth:
    """A space with every design's value known: digits of the feasible designs, value (NaN = failed)."""

    def __init__(self, name, space, digits, values, response):
        self.name, self.space, self.digits, self.values, self.response = name, space, digits, values, response
        ok = np.isfinite(values)
        self.best = float(values[ok].min())
        self.radices = np.array(space.radices, dtype=np.int64)

    def lookup(self, digits):
        raise NotImplementedError


class TableTruth(Truth):
    def __init__(self, path):
        from gpudse_core.sim.lookup import LookupTable

        t = LookupTable.from_frame(pd.read_csv(path), "time_ms", status_column="status", source=path.name)
        super().__init__(path.stem.replace("convolution_", "conv-"), t.space, t.digits, t.values, "time_ms")
        self.table = t
        self.index = {k: i for i, k in enumerate(map(tuple, t.digits.tolist()))}

    def lookup(self, digits):
        out = np.full(len(digits), np.nan)
        for j, k in enumerate(map(tuple, np.asarray(digits).tolist())):
            i = self.index.get(k)
            if i is not None:
                out[j] = self.values[i]
        return out


class KernelTruth(Truth):
    def __init__(self, kernel):
        from gpudse_core.sim.simulator import simulate
        from gpudse_core.space.presets import load_preset

        space = load_preset("stargazer")
        values = np.empty(space.size)
        step = 1 << 17
        for start in range(0, space.size, step):
            d = space.decode_range(start, min(step, space.size - start))
            values[start:start + len(d)] = simulate(space.frame(d), kernel)["cycles"].to_numpy(float)
        super().__init__(f"{kernel}", space, None, values, "cycles")

    def lookup(self, digits):
        return self.values[self.space.encode(np.asarray(digits, dtype=np.int64))]


AREA = "40 + simd + (cc + tc) / 2 + 4 * (smp + ccp) + 2 * blk + mshr + dramq / 8 + intra + inter"


class PerAreaTruth(Truth):
    """A kernel's cycles × a die-area expression of the parameters (performance per area), through the
    same ``--objective`` function ``gpudse search`` uses; ``raw`` is the simulated response (cycles)."""

    def __init__(self, kernel: KernelTruth, area: str = AREA):
        from gpudse_core.cli.search_cmds import objective_function

        self.kernel = kernel
        self.objective = objective_function(f"cycles * ({area})", kernel.space, "cycles")
        space = kernel.space
        values = np.empty(space.size)
        step = 1 << 17
        for start in range(0, space.size, step):
            d = space.decode_range(start, min(step, space.size - start))
            values[start:start + len(d)] = self.objective(d, kernel.values[start:start + len(d)])
        super().__init__(f"{kernel.name}×area", space, None, values, "cycles")

    def lookup(self, digits):
        return self.values[self.space.encode(np.asarray(digits, dtype=np.int64))]

    def raw(self, digits):
        return self.kernel.lookup(digits)


def make_truth(name: str, cache: dict) -> Truth:
    """conv-GPU (a benchmark_hub table), KERNEL (cycles) or KERNEL×area (cycles × AREA)."""
    if name in cache:
        return cache[name]
    if name.startswith("conv-"):
        t = TableTruth(HUB / f"convolution_{name[5:]}.csv")
    elif name.endswith("×area"):
        t = PerAreaTruth(make_truth(name[: -len("×area")], cache))
    else:
        t = KernelTruth(name)
    cache[name] = t
    return t


def random_expectation(truth: Truth, B: int) -> float:
    """Expected regret of the best of B designs drawn without replacement from the feasible designs."""
    from scipy.special import gammaln

    N = len(truth.values)
    v = np.sort(truth.values[np.isfinite(truth.values)])
    k = np.arange(1, len(v) + 1, dtype=float)

    def lc(n, r):
        return np.where(n >= r, gammaln(n + 1) - gammaln(r + 1) - gammaln(np.maximum(n - r, 0) + 1), -np.inf)

    ge = np.exp(lc(N - k + 1, B) - lc(N, B))  # P(best ≥ v_k): none of the k−1 better ones drawn
    p = ge - np.append(ge[1:], 0.0)
    return float((p * v).sum() / p.sum() / truth.best - 1)


def pool_for(truth: Truth):
    from gpudse_core.search.pool import make_pool

    return make_pool(truth.space, truth.digits)


def run_gpudse(truth: Truth, B: int, seed: int, batch: int, goal: str = "min") -> list:
    from gpudse_core.search.study import run_search

    raw = getattr(truth, "raw", truth.lookup)  # the simulator's response; the objective is the search's

    def evaluate(digits, designs):
        v = raw(digits)
        return [(None, "failed") if not math.isfinite(x) else (float(x), "") for x in v]

    return run_search(pool_for(truth), evaluate, goal=goal, budget=B, batch=batch, seed=seed,
                      objective=getattr(truth, "objective", None))


def best_curve(values: list[float], budgets) -> dict:
    cur, out = math.inf, {}
    for i, v in enumerate(values, 1):
        if v is not None and math.isfinite(v):
            cur = min(cur, v)
        if i in budgets:
            out[i] = cur
    return out


def run_oneshot(truth: Truth, B: int, seed: int) -> float:
    from gpudse_core.model.registry import fit_model

    rng = np.random.default_rng(seed)
    pool = pool_for(truth)
    first = pool.initial(B - 10, rng)
    raw = getattr(truth, "raw", truth.lookup)  # the model is of the response; an objective is applied to it
    objective = getattr(truth, "objective", None)
    y = truth.lookup(first)
    ok = np.isfinite(y)
    names = list(truth.space.parameter_names)
    data = truth.space.frame(first[ok])
    data[truth.response] = raw(first[ok])
    try:
        model = fit_model("stepwise", data, truth.response, names)
    except Exception:  # noqa: BLE001 - a fit that fails leaves the sample's best
        return float(np.nanmin(y)) / truth.best - 1
    pool.mark(first)
    if truth.digits is not None:
        cand = pool.all[pool.left]
    else:  # 933,120 points: predict them all, in parts
        cand = None
    best_idx, best_pred = [], []
    def predicted(d):
        p = np.asarray(model.predict(truth.space.frame(d)), dtype=float)
        return p if objective is None else objective(d, p)

    if cand is not None:
        pred = predicted(cand)
        top = cand[np.argsort(pred)[:10]]
    else:
        step, keep = 1 << 17, []
        space = truth.space
        for start in range(0, space.size, step):
            d = space.decode_range(start, min(step, space.size - start))
            keep.append((predicted(d), d))
        pred = np.concatenate([p for p, _ in keep])
        order = np.argsort(pred)
        done = set(truth.space.encode(first).tolist())
        idx = [i for i in order[:10 + len(done)] if i not in done][:10]
        top = truth.space.decode(np.array(idx))
    y2 = truth.lookup(top)
    return float(np.nanmin(np.concatenate([y, y2]))) / truth.best - 1


def run_tpe(truth: Truth, B: int, seed: int) -> dict:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = truth.space
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed), direction="minimize")
    vals = []
    for _ in range(B):
        trial = study.ask()
        digits = np.array([[trial.suggest_categorical(d.name, list(range(d.size))) for d in space.dimensions]])
        v = float(truth.lookup(digits)[0])
        vals.append(v if math.isfinite(v) else None)
        if math.isfinite(v):
            study.tell(trial, v)
        else:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return best_curve(vals, BUDGETS)


def accuracy_error(truth: Truth, digits: np.ndarray, seed: int, eval_idx) -> float:
    from gpudse_core.search.pool import rank_tables
    from gpudse_core.search.surrogate import Forest

    ranks = rank_tables(truth.space)

    def feats(d):
        return np.column_stack([ranks[j][d[:, j]] for j in range(d.shape[1])]).astype(float)

    y = truth.lookup(digits)
    ok = np.isfinite(y)
    f = Forest(seed=seed).fit(feats(digits[ok]), y[ok])
    ev = eval_idx
    yt = truth.lookup(ev)
    m = np.isfinite(yt)
    pred = f.predict_values(feats(ev[m]))
    return float(np.mean(np.abs(pred - yt[m]) / yt[m]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, conv-A100 and matMul only")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--spaces", default=None, help="comma list: conv-A100,conv-A4000,conv-MI250X,LPS,BFS,AES,matMul")
    ap.add_argument("--methods", default="gpudse,random,one-shot,tpe")
    ap.add_argument("--batch", type=int, default=2, help="gpudse proposals per round (default 2: `gpudse search` proposes one per worker, and this machine has 2 cores)")
    ap.add_argument("--accuracy", action="store_true", help="also --goal accuracy against uniform sampling")
    ap.add_argument("--json", metavar="FILE", help="write every run's numbers")
    ap.add_argument("--huge", action="store_true", help="only: the search's own time per batch over 200 rounds "
                    "on a 1e9-point space")
    ap.add_argument("--accuracy-only", action="store_true", help="only the --goal accuracy comparison")
    args = ap.parse_args(argv)
    if args.huge:
        return huge_run(args.batch)
    seeds = args.seeds or (3 if args.quick else 10)
    names = args.spaces.split(",") if args.spaces else (["conv-A100", "matMul"] if args.quick else
                                                        ["conv-A100", "conv-A4000", "conv-MI250X", *KERNELS])
    methods = args.methods.split(",")
    cache: dict = {}
    if args.accuracy_only:
        print(f"bench_search --accuracy-only: {seeds} seeds, load average {os.getloadavg()[0]:.1f}", flush=True)
        for name in names:
            truth = make_truth(name, cache)
            accuracy_run(truth, seeds)
        return 0
    print(f"bench_search: {seeds} seeds, budgets {BUDGETS}, load average {os.getloadavg()[0]:.1f}", flush=True)
    rows, raw = [], {}
    for name in names:
        t0 = time.time()
        truth = make_truth(name, cache)
        res: dict = {m: {b: [] for b in BUDGETS} for m in methods}
        own = []
        for seed in range(seeds):
            if "gpudse" in methods:
                r = run_gpudse(truth, max(BUDGETS), seed, args.batch)
                own += r.propose_seconds
                curve = best_curve([t.value for t in r.trials], BUDGETS)
                for b in BUDGETS:
                    res["gpudse"][b].append(curve[b] / truth.best - 1)
            if "tpe" in methods:
                curve = run_tpe(truth, max(BUDGETS), seed)
                for b in BUDGETS:
                    res["tpe"][b].append(curve[b] / truth.best - 1)
            if "one-shot" in methods:
                for b in BUDGETS:
                    res["one-shot"][b].append(run_oneshot(truth, b, seed))
            if args.json:  # after every seed: a run cut short still leaves its numbers
                raw[name] = {m: {str(b): res[m][b] for b in BUDGETS} for m in methods}
                Path(args.json).write_text(json.dumps({"rows": rows, "raw": raw, "seeds_done": {name: seed + 1}},
                                                      indent=1, default=float))
        if "random" in methods:
            for b in BUDGETS:
                res["random"][b] = [random_expectation(truth, b)]
        for m in methods:
            rows.append({"space": name, "method": m, **{f"B={b}": 100 * float(np.median(res[m][b])) for b in BUDGETS}})
        raw[name] = {m: {str(b): res[m][b] for b in BUDGETS} for m in methods}
        line = "  ".join(f"{m} " + "/".join(f"{100 * np.median(res[m][b]):.1f}" for b in BUDGETS) for m in methods)
        extra = f"; own time per batch median {np.median(own):.3f} s, max {max(own):.3f} s" if own else ""
        print(f"{name}: regret % at B={'/'.join(map(str, BUDGETS))}: {line}  ({time.time() - t0:.0f} s{extra}, "
              f"load {os.getloadavg()[0]:.1f})", flush=True)
        if args.accuracy:
            raw[name]["accuracy"] = accuracy_run(truth, seeds)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "raw": raw}, indent=1, default=float))
    return 0


def accuracy_run(truth: Truth, seeds: int, sizes=(50, 100, 200, 300)) -> dict:
    from gpudse_core.search.study import run_search

    rng = np.random.default_rng(12345)
    if truth.digits is not None:
        ev = truth.digits
    else:
        ev = truth.space.decode(rng.choice(truth.space.size, 20_000, replace=False))
    out = {"uniform": {n: [] for n in sizes}, "search": {n: [] for n in sizes}}
    for seed in range(seeds):
        pool = pool_for(truth)
        uni = pool.initial(max(sizes), np.random.default_rng(seed))
        res = run_search(pool_for(truth), lambda d, _: [(None, "f") if not math.isfinite(x) else (float(x), "")
                                                         for x in truth.lookup(d)],
                         goal="accuracy", budget=max(sizes), batch=10, seed=seed)
        sd = np.array([truth.space.digits_of_point(t.design) for t in res.trials])
        for n in sizes:
            out["uniform"][n].append(accuracy_error(truth, uni[:n], seed, ev))
            out["search"][n].append(accuracy_error(truth, sd[:n], seed, ev))
    line = "  ".join(f"N={n}: uniform {100 * np.median(out['uniform'][n]):.1f} % / search "
                     f"{100 * np.median(out['search'][n]):.1f} %" for n in sizes)
    print(f"{truth.name}: accuracy (forest's mean relative error over the space): {line}", flush=True)
    return out


def huge_run(batch: int, rounds: int = 200) -> int:
    """200 rounds on 9 parameters × 10 values (1e9 designs): the search's own time per batch, i.e.
    everything but the simulations and the model fits (candidates, prediction, acquisition, batch)."""
    from gpudse_core.search.pool import make_pool
    from gpudse_core.space.design import space_from_dict
    from gpudse_core.search.study import run_search

    space = space_from_dict({"name": "huge", "parameters": [{"name": f"p{i}", "values": list(range(1, 11))}
                                                            for i in range(9)]})
    w = np.linspace(1.0, 0.2, 9)

    def evaluate(digits, designs):
        d = np.asarray(digits, dtype=float)
        return [(float(1 + (w * (r - 3) ** 2).sum() + 0.5 * abs(r[0] - r[1])), "") for r in d]

    fits = []
    import gpudse_core.search.surrogate as sur

    orig = sur.Forest.fit

    def timed(self, X, y):
        t = time.perf_counter()
        out = orig(self, X, y)
        fits.append(time.perf_counter() - t)
        return out

    sur.Forest.fit = timed
    t0 = time.perf_counter()
    res = run_search(make_pool(space), evaluate, goal="min", budget=10 + rounds * batch, batch=batch, seed=0)
    total = time.perf_counter() - t0
    own = np.array(res.propose_seconds[1:])  # the rounds after the initial sample
    fit = np.array(fits)
    print(f"1e9-point space, {len(own)} rounds of {batch}: own time per batch (proposal minus fit) median "
          f"{np.median(own - fit[:len(own)]):.3f} s, max {np.max(own - fit[:len(own)]):.3f} s; fit median "
          f"{np.median(fit):.3f} s; total {total:.0f} s; best {res.best().value:.3f} (optimum 1.0); "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
