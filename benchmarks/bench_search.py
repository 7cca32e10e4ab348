"""Benchmark: how close to the true best design a budget of B simulations gets (regret), and how good a
model --goal accuracy builds — every space and method side by side, in one run.

One command (optuna is a benchmark-only dependency: benchmarks/requirements.txt)::

    python benchmarks/bench_search.py --jobs 2         # full run: 10 seeds (accuracy 20), B = 50/100/200, all spaces
    python benchmarks/bench_search.py --quick          # 3 seeds, conv-A100 and matMul, while developing

Spaces with exhaustive truth: the three benchmark_hub convolution tables in ../shared (real GPU
measurements; every configuration's time known; failed configurations cost budget) and the built-in
simulator on four kernels over Stargazer's 933,120-point space (all simulated once, ~0.5 s a kernel).

**The kernels' objective.** On raw cycles hundreds to thousands of designs tie for the best (the
largest design is the fastest: LPS 864, BFS 6,912, AES 4,860, matMul 1,296), so several methods reach
0.0 % regret and "below TPE" cannot be shown or refuted. What an architect optimises on such a space is
performance per area, so each kernel is also searched for the least ``cycles × AREA`` — a relative
die-area expression of the parameters (a fixed core of 40, one per SIMD lane, half a unit per KB of
constant and texture cache, 4 per cache or shared-memory port, 2 per block slot, one per MSHR, an
eighth per DRAM queue entry, one per coalescing unit; illustrative, not a published area model),
which has exactly one best design on every kernel (the second best is 0.3–0.4 % worse). gpudse runs it
as users do, ``gpudse search … --goal min --objective "cycles * (AREA)"`` (the same expression
function); random search, the one-shot workflow and TPE optimise the same product. The raw-cycles
rows are printed too, labelled as ties. Regret = the best design found / the true best − 1, median
over seeds. Methods, side by side at the same budgets:

* ``gpudse``  — gpudse_core.search with its defaults, as ``gpudse search`` runs it (30-tree random-forest
  EI; ``--surrogate auto``: the stepwise model proposes half of each batch while its cross-validated
  error is significantly below the forest's; batches of --batch). The line after each space gives the
  designs the stepwise model chose per run;
* ``gpudse-forest`` — the same with ``--surrogate forest`` (the forest alone; not in the default methods);
* ``gpudse-share`` / ``gpudse-stalled`` — the same with a fifth of the proposals uniform draws
  (``random_share=0.2``), or half of those made once the best has stalled for 20 simulations
  (``stalled_share=0.5``); not in the default methods (docs/search.md, "Exploration");
* ``random``  — random search, the exact expectation over draws without replacement;
* ``one-shot``— sample B−10 designs uniformly, fit the default model (stepwise) of the response,
  simulate the 10 designs whose predicted objective is best (not yet simulated; one fit per kernel
  serves its cycles and cycles × area rows);
* ``tpe``     — optuna's TPE sampler (categorical parameters; a failed design is a failed trial).

``--goal accuracy`` against uniform sampling at N = 50 … 300 simulations on the tables and the
kernels' cycles: the error is that of the search's own model, the random-forest surrogate (30 trees,
fitted to the N designs), as its mean relative error over the whole space (every row of a table;
20,000 fixed designs of a kernel) — the model the goal is for. Uniform sampling is the same draw the
search starts from (``pool.initial(300, default_rng(seed))``).
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
    """A benchmark_hub table (conv-GPU), or another table given as a frame, its response and parameters."""

    def __init__(self, path, frame=None, response="time_ms", params=None, name=None):
        from gpudse_core.sim.lookup import LookupTable

        frame = pd.read_csv(path) if frame is None else frame
        t = LookupTable.from_frame(frame, response, params=params, status_column="status" if params is None else None,
                                   source=path.name)
        super().__init__(name or path.stem.replace("convolution_", "conv-"), t.space, t.digits, t.values, response)
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


MGPUSIM_STUDY = ROOT / "data" / "mgpusim_study.csv"
STUDY_PARAMS = ["cu_per_sa", "sa", "l2_kb", "mem_banks", "line", "freq_mhz"]
STUDY_RESPONSE = "geomean_kernel_exec_s"


def study_truth(path: Path = MGPUSIM_STUDY) -> TableTruth:
    """The MGPUSim study's table restricted to its simulated designs (docs/mgpusim-study.md): 82 distinct
    designs of the ``mgpusim`` preset (83 rows; one design simulated twice, its two geometric means
    averaged — they differ by 0.02 %), the geometric mean of fir's and aes's kernel times. The candidates
    are these rows only, so a search here chooses among what MGPUSim actually ran."""
    frame = pd.read_csv(path).groupby(STUDY_PARAMS, as_index=False)[STUDY_RESPONSE].mean()
    return TableTruth(path, frame, STUDY_RESPONSE, STUDY_PARAMS, name="mgpusim-study")


# budgets each space is read at: 82 designs make 50 / 100 / 200 meaningless there; at 10 the search is its
# initial sample, uniform draws, so it is read at a quarter, three eighths and a half of the designs
STUDY_BUDGETS = (20, 30, 40)


def budgets_of(name: str) -> tuple:
    return STUDY_BUDGETS if name == "mgpusim-study" else BUDGETS


AREA = "40 + simd + (cc + tc) / 2 + 4 * (smp + ccp) + 2 * blk + mshr + dramq / 8 + intra + inter"


class PerAreaTruth(Truth):
    """A kernel's cycles × a die-area expression of the parameters (performance per area), through the
    same ``--objective`` function ``gpudse search`` uses; ``raw`` is the simulated response (cycles)."""

    def __init__(self, kernel: KernelTruth, area: str = AREA):
        from gpudse_core.search.expressions import objective_function

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
    if name == "mgpusim-study":
        t = study_truth()
    elif name.startswith("conv-"):
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


# the search with settings other than its defaults, as methods of their own (none is in the default methods)
VARIANTS = {
    "gpudse-forest": dict(surrogate="forest"),  # the forest alone
    "gpudse-share": dict(random_share=0.2),  # a fifth of the proposals uniform draws (docs/search.md, "Exploration")
    "gpudse-stalled": dict(stalled_share=0.5, local_share=0.0),  # half drawn uniformly once stalled, no region
    "gpudse-models": dict(local_share=0.0),  # the models alone: no trust region once stalled
}


def run_gpudse(truth: Truth, B: int, seed: int, batch: int, goal: str = "min", **settings) -> list:
    """gpudse's search on *truth* with its defaults, or the given *settings* of run_search (a VARIANT's)."""
    from gpudse_core.search.study import run_search

    raw = getattr(truth, "raw", truth.lookup)  # the simulator's response; the objective is the search's

    def evaluate(digits, designs):
        v = raw(digits)
        return [(None, "failed") if not math.isfinite(x) else (float(x), "") for x in v]

    return run_search(pool_for(truth), evaluate, goal=goal, budget=B, batch=batch, seed=seed,
                      objective=getattr(truth, "objective", None), **settings)


def best_curve(values: list[float], budgets) -> dict:
    cur, out = math.inf, {}
    for i, v in enumerate(values, 1):
        if v is not None and math.isfinite(v):
            cur = min(cur, v)
        if i in budgets:
            out[i] = cur
    return out


def run_oneshot(truths: list, B: int, seed: int) -> list[float]:
    """One-shot regret for each of *truths* — the same space and response (a kernel's cycles and its
    cycles × area): one sample, one fit of the response, one prediction of every design, ranked by
    each truth's objective of the predicted response (the fit is shared, not repeated)."""
    from gpudse_core.model.registry import fit_model

    base = truths[0]
    rng = np.random.default_rng(seed)
    pool = pool_for(base)
    first = pool.initial(B - 10, rng)
    raw = getattr(base, "raw", base.lookup)  # the model is of the response; an objective is applied to it
    y = raw(first)
    ok = np.isfinite(y)
    data = base.space.frame(first[ok])
    data[base.response] = y[ok]
    try:
        model = fit_model("stepwise", data, base.response, list(base.space.parameter_names))
    except Exception:  # noqa: BLE001 - a fit that fails leaves the sample's best
        return [float(np.nanmin(t.lookup(first))) / t.best - 1 for t in truths]
    pool.mark(first)
    space = base.space
    if base.digits is not None:
        cand = pool.all[pool.left]
        pred = np.asarray(model.predict(space.frame(cand)), dtype=float)
    else:  # 933,120 points: predict them all, in parts
        step, parts = 1 << 17, []
        for start in range(0, space.size, step):
            d = space.decode_range(start, min(step, space.size - start))
            parts.append(np.asarray(model.predict(space.frame(d)), dtype=float))
        pred = np.concatenate(parts)
        cand = None
    out = []
    for t in truths:
        objective = getattr(t, "objective", None)
        if cand is not None:
            score = pred if objective is None else objective(cand, pred)
            top = cand[np.argsort(score, kind="stable")[:10]]
        else:
            score = pred if objective is None else np.concatenate([
                objective(space.decode_range(a, min(1 << 17, space.size - a)), pred[a:a + (1 << 17)])
                for a in range(0, space.size, 1 << 17)])
            order = np.argsort(score, kind="stable")
            done = set(space.encode(first).tolist())
            idx = [i for i in order[:10 + len(done)] if i not in done][:10]
            top = space.decode(np.array(idx))
        out.append(float(np.nanmin(np.concatenate([t.lookup(first), t.lookup(top)]))) / t.best - 1)
    return out


def run_tpe(truth: Truth, B: int, seed: int, budgets=BUDGETS) -> dict:
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
    return best_curve(vals, budgets)


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


TABLES = ("conv-A100", "conv-A4000", "conv-MI250X")
SIZES = tuple(range(50, 301, 25))  # --goal accuracy: simulations


def is_table(group: str) -> bool:
    """A measured table (one judged space) rather than a kernel (cycles, and cycles × area)."""
    return group.startswith("conv-") or group == "mgpusim-study"


def regret_unit(group: str, seeds: int | list, batch: int, methods: list, judged_only: bool = False) -> dict:
    """Regret of every method on one table, or on one kernel's cycles (ties) and cycles × area together
    (the one-shot fit is shared between the two); *seeds*: a count (0 … seeds − 1) or the seeds themselves."""
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    cache: dict = {}
    names = [group] if is_table(group) else ([f"{group}×area"] if judged_only else [group, f"{group}×area"])
    truths = [make_truth(n, cache) for n in names]
    budgets = budgets_of(group)
    res = {n: {m: {b: [] for b in budgets} for m in methods} for n in names}
    own, own_forest, steps, local, t0 = [], [], [], [], time.time()
    for seed in seed_list:
        for t in truths:
            for m, settings in {"gpudse": {}, **VARIANTS}.items():
                if m in methods:  # the search with its defaults, or other settings (docs/search.md)
                    r = run_gpudse(t, max(budgets), seed, batch, **settings)
                    if m == "gpudse":
                        own += list(np.subtract(r.propose_seconds, r.fit_seconds))
                        steps.append(sum(x.surrogate == "stepwise" for x in r.trials))
                        local.append(sum(x.surrogate == "local" for x in r.trials))
                    if m == "gpudse-forest":
                        own_forest += list(np.subtract(r.propose_seconds, r.fit_seconds))
                    curve = best_curve([x.value for x in r.trials], budgets)
                    for b in budgets:
                        res[t.name][m][b].append(curve[b] / t.best - 1)
            if "tpe" in methods:
                curve = run_tpe(t, max(budgets), seed, budgets)
                for b in budgets:
                    res[t.name]["tpe"][b].append(curve[b] / t.best - 1)
        if "one-shot" in methods:
            for b in budgets:
                for t, v in zip(truths, run_oneshot(truths, b, seed)):
                    res[t.name]["one-shot"][b].append(v)
    if "random" in methods:
        for t in truths:
            for b in budgets:
                res[t.name]["random"][b] = [random_expectation(t, b)]
    ties = {t.name: int(np.sum(t.values[np.isfinite(t.values)] == t.best)) for t in truths}
    lines = []
    for t in truths:
        line = "  ".join(f"{m} {cell(res[t.name][m], budgets)}" for m in methods)
        lines.append(f"{t.name}: regret % at B={'/'.join(map(str, budgets))}, median (worst seed): {line}  "
                     f"({ties[t.name]:,} design(s) with the best value)")
        for m in methods:
            if m.startswith("gpudse"):
                lines.append(f"  {m} per seed: " + "  ".join(
                    f"{seed}: " + "/".join(f"{100 * res[t.name][m][b][i]:.1f}" for b in budgets)
                    for i, seed in enumerate(seed_list)))
    forest = (f"; gpudse-forest: own time per batch median {np.median(own_forest):.3f} s, max "
              f"{max(own_forest):.3f} s" if own_forest else "")
    chose = (f"designs chosen by the stepwise model per gpudse run: median {np.median(steps):.0f}, max "
             f"{max(steps)}; by the stall's trust region: median {np.median(local):.0f}, max {max(local)}; "
             if steps else "")
    lines.append(f"  ({group}: {time.time() - t0:.0f} s; {chose}gpudse's own time per batch (fits apart) median "
                 f"{np.median(own) if own else 0:.3f} s, max {max(own) if own else 0:.3f} s{forest}; "
                 f"load average {os.getloadavg()[0]:.1f})")
    return {"kind": "regret", "group": group, "res": res, "ties": ties, "lines": lines}


def cell(per_budget: dict, budgets) -> str:
    """Median regret % at each budget, and the worst seed's in brackets when there are several seeds."""
    med = "/".join(f"{100 * np.median(per_budget[b]):.1f}" for b in budgets)
    if len(per_budget[budgets[0]]) < 2:
        return med
    return med + " (" + "/".join(f"{100 * np.max(per_budget[b]):.1f}" for b in budgets) + ")"


def accuracy_unit(name: str, seeds: int, batch: int = 10) -> dict:
    """--goal accuracy against uniform sampling: the forest's mean relative error over the whole space
    (every row of a table; 20,000 fixed designs of a kernel's 933,120) after N simulations."""
    from gpudse_core.search.study import run_search

    t0 = time.time()
    truth = make_truth(name, {})
    rng = np.random.default_rng(12345)
    ev = truth.digits if truth.digits is not None else truth.space.decode(rng.choice(truth.space.size, 20_000,
                                                                                     replace=False))
    out = {"uniform": {n: [] for n in SIZES}, "search": {n: [] for n in SIZES}, "followed": []}
    for seed in range(seeds):
        uni = pool_for(truth).initial(max(SIZES), np.random.default_rng(seed))
        res = run_search(pool_for(truth), lambda d, _: [(None, "f") if not math.isfinite(x) else (float(x), "")
                                                         for x in truth.lookup(d)],
                         goal="accuracy", budget=max(SIZES), batch=batch, seed=seed)
        sd = np.array([truth.space.digits_of_point(t.design) for t in res.trials])
        out["followed"].append(sum(t.acquisition is not None for t in res.trials))
        for n in SIZES:
            out["uniform"][n].append(accuracy_error(truth, uni[:n], seed, ev))
            out["search"][n].append(accuracy_error(truth, sd[:n], seed, ev))
    line = "  ".join(f"N={n}: {100 * np.median(out['uniform'][n]):.2f}/{100 * np.median(out['search'][n]):.2f}"
                     for n in SIZES)
    lines = [f"{name}: accuracy, forest's mean relative error % uniform/search: {line}; designs chosen by the "
             f"spread per run: median {np.median(out['followed']):.0f} of {max(SIZES)}  ({time.time() - t0:.0f} s, "
             f"load average {os.getloadavg()[0]:.1f})"]
    return {"kind": "accuracy", "name": name, "res": out, "lines": lines}


def _run_unit(args: tuple) -> dict:
    kind, *rest = args
    return regret_unit(*rest) if kind == "regret" else accuracy_unit(*rest)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, conv-A100 and matMul only")
    ap.add_argument("--seeds", type=int, default=None, help="regret: seeds (default 10; --quick 3)")
    ap.add_argument("--seed-list", default=None, help="regret: these seeds only, e.g. 2,7 (the runs that stall); "
                    "instead of --seeds")
    ap.add_argument("--accuracy-seeds", type=int, default=None, help="--goal accuracy: seeds (default 20, --quick 3: "
                    "with 10 the medians of the two curves moved by ±0.05 points between settings, as much as "
                    "the differences judged)")
    ap.add_argument("--spaces", default=None, help="comma list of tables and kernels: conv-A100,conv-A4000,"
                    "conv-MI250X,mgpusim-study,LPS,BFS,AES,matMul (a kernel runs as cycles and as cycles × area; "
                    "mgpusim-study, the MGPUSim study's 82 simulated designs, at B = 20/30/40)")
    ap.add_argument("--methods", default="gpudse,random,one-shot,tpe")
    ap.add_argument("--batch", type=int, default=2, help="gpudse proposals per round (default 2: `gpudse search` "
                    "proposes one per worker, and this machine has 2 cores)")
    ap.add_argument("--judged-only", action="store_true", help="kernels: only cycles × area, not the raw cycles "
                    "(whose best is tied)")
    ap.add_argument("--no-accuracy", action="store_true", help="skip the --goal accuracy comparison")
    ap.add_argument("--accuracy-only", action="store_true", help="only the --goal accuracy comparison")
    ap.add_argument("--jobs", type=int, default=1, help="spaces run in this many processes at once")
    ap.add_argument("--json", metavar="FILE", help="write every run's numbers")
    ap.add_argument("--huge", action="store_true", help="only: the search's own time per batch over 200 rounds "
                    "on a 1e9-point space")
    args = ap.parse_args(argv)
    if args.huge:
        return huge_run(args.batch)
    seeds = args.seeds or (3 if args.quick else 10)
    if args.seed_list:
        try:
            seeds = [int(x) for x in args.seed_list.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--seed-list {args.seed_list!r}: give whole numbers separated by commas, e.g. 2,7")
        if not seeds or min(seeds) < 0:
            ap.error(f"--seed-list {args.seed_list!r}: give seeds from 0 up, e.g. 2,7")
    groups = args.spaces.split(",") if args.spaces else (["conv-A100", "matMul"] if args.quick else
                                                         [*TABLES, "mgpusim-study", *KERNELS])
    methods = args.methods.split(",")
    units = [] if args.accuracy_only else [("regret", g, seeds, args.batch, methods, args.judged_only) for g in groups]
    if not args.no_accuracy:
        acc_seeds = args.accuracy_seeds or (3 if args.quick else 20)
        units += [("accuracy", g, acc_seeds) for g in groups if g != "mgpusim-study"]  # 82 designs: no N = 300
    t0 = time.time()
    which = "seeds " + ",".join(map(str, seeds)) if isinstance(seeds, list) else f"{seeds} seeds"
    print(f"bench_search: {which}, budgets {BUDGETS}, accuracy at N = {SIZES} "
          f"({args.accuracy_seeds or (3 if args.quick else 20)} seeds), {args.jobs} process(es), "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    done = []
    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(args.jobs) as ex:
            for f in as_completed([ex.submit(_run_unit, u) for u in units]):
                done.append(f.result())
                print("\n".join(done[-1]["lines"]), flush=True)
    else:
        for u in units:
            done.append(_run_unit(u))
            print("\n".join(done[-1]["lines"]), flush=True)
    summary(done, groups, methods, args.judged_only)
    print(f"total {time.time() - t0:.0f} s, load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(done, indent=1, default=float))
    return 0


def summary(done: list, groups: list, methods: list, judged_only: bool = False) -> None:
    """The side-by-side tables: regret (judged spaces, then the kernels' raw cycles, where the best is
    tied), and --goal accuracy against uniform sampling."""
    reg = {u["group"]: u for u in done if u["kind"] == "regret"}
    acc = {u["name"]: u for u in done if u["kind"] == "accuracy"}

    def med(xs):
        return 100 * float(np.median(xs))

    b_s = "/".join(map(str, BUDGETS))
    if reg:
        judged = ([(g, g) for g in groups if is_table(g)]
                  + [(g, f"{g}×area") for g in groups if not is_table(g)])
        tied = [] if judged_only else [(g, g) for g in groups if not is_table(g)]
        for unique, rows in ((True, judged), (False, tied)):
            if not rows:
                continue
            print(f"\nmedian regret % (worst seed), B = {b_s} (mgpusim-study: B = "
                  f"{'/'.join(map(str, STUDY_BUDGETS))}): " + ("one best design" if unique else
                  "raw cycles, where many designs TIE for the best (the largest design is fastest)"))
            print(f"{'space':<13}" + "".join(f"{m:>34}" for m in methods)
                  + ("   gpudse below all (or both 0.0), every B; at most random's, every B; gpudse/random at the "
                     "middle B" if unique else "   designs tied"))
            for g, name in rows:
                r, budgets = reg[g]["res"][name], budgets_of(g)
                cells = "".join(f"{cell(r[m], budgets):>34}" for m in methods)
                if unique and "gpudse" in methods:
                    # below every other method at every budget; where a method's median run found the
                    # true best (0.0) nothing can be below it, and gpudse must have found it too
                    below = all(med(r["gpudse"][b]) < med(r[m][b]) or med(r["gpudse"][b]) == med(r[m][b]) == 0.0
                                for m in methods if not m.startswith("gpudse") for b in budgets)
                    at_most = ("random" not in methods or all(med(r["gpudse"][b]) <= med(r["random"][b])
                                                              for b in budgets))
                    rnd = med(r["random"][budgets[1]]) if "random" in methods else 0.0
                    ratio = med(r["gpudse"][budgets[1]]) / rnd if rnd > 0 else float("nan")
                    print(f"{name:<13}{cells}   {'yes' if below else 'NO'}; {'yes' if at_most else 'NO'}; "
                          f"{ratio:.2f}")
                else:
                    print(f"{name:<13}{cells}   {'' if unique else format(reg[g]['ties'][name], ',')}")
    if acc:
        print(f"\n--goal accuracy: the forest surrogate's median mean relative error % over the whole space, "
              f"at N = {'/'.join(map(str, SIZES))}")
        w = 6 * len(SIZES) + 2
        print(f"{'space':<13}{'uniform':>{w}}{'search':>{w}}   never worse; simulations to uniform's N={max(SIZES)} "
              f"error: search, uniform")
        for g in groups:
            if g not in acc:
                continue
            r = acc[g]["res"]
            u = [med(r["uniform"][n]) for n in SIZES]
            s = [med(r["search"][n]) for n in SIZES]
            never = all(b <= a for a, b in zip(u, s))
            reach = next((n for n, v in zip(SIZES, s) if v <= u[-1]), None)
            own = next(n for n, v in zip(SIZES, u) if v <= u[-1])  # uniform's own curve is noisy too
            print(f"{g:<13}{'/'.join(f'{v:.2f}' for v in u):>{w}}{'/'.join(f'{v:.2f}' for v in s):>{w}}   "
                  f"{'yes' if never else 'NO'}; {reach if reach is not None else '>' + str(max(SIZES))}, {own}"
                  f"{' (fewer)' if reach is not None and reach < own else ''}")


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

    t0 = time.perf_counter()
    # --surrogate auto: the forest's work and the comparison with the stepwise model (identical to the
    # default search whenever the stepwise model does not win it)
    res = run_search(make_pool(space), evaluate, goal="min", budget=10 + rounds * batch, batch=batch, seed=0,
                     surrogate="auto")
    total = time.perf_counter() - t0
    own = np.array(res.propose_seconds[1:])  # the rounds after the initial sample
    fit = np.array(res.fit_seconds[1:])  # the forest's, and the stepwise model's fits and cross-validation
    n_step = sum(t.surrogate == "stepwise" for t in res.trials)
    print(f"1e9-point space, {len(own)} rounds of {batch}: own time per batch (proposal minus fits) median "
          f"{np.median(own - fit):.3f} s, max {np.max(own - fit):.3f} s; fits median "
          f"{np.median(fit):.3f} s, max {np.max(fit):.3f} s; {n_step} designs chosen by the stepwise model; "
          f"total {total:.0f} s; best {res.best().value:.3f} (optimum 1.0); "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
