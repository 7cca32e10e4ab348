"""The sequential search loop and its study history.

Sequential model-based optimisation (Jones et al. 1998; Hutter et al. 2011): simulate an initial
space-filling sample (uniform or Latin hypercube), then repeat — fit the surrogate
(:class:`~.surrogate.Forest`) and the feasibility classifier on every simulated design, score every
candidate of the pool (:mod:`.pool`) with the goal's acquisition (:mod:`.acquisition`), simulate a
diverse batch of the best, record — until the budget is spent, the target is reached, ``patience``
rounds bring no improvement, or every feasible design has been simulated.

Goals: ``min`` / ``max`` (expected improvement, or a confidence bound with ``acquisition="lcb"``; of
the response or of an objective computed from it and the parameters, e.g. performance per area),
``accuracy`` (a model good everywhere: the uniform sample of the budget, of which 30 % goes to the
forest's largest spread once its out-of-bag spread ranks its out-of-bag errors — maximin space filling
gave the forest a larger mean relative error than uniform sampling on the benchmark_hub tables, and
sampling where a bootstrap ensemble disagrees most was worse than uniform on 10 of 12 real spaces,
whose errors are noise the spread cannot locate; see docs/search.md),
``pareto`` (the front of the response against a cost computed
from the parameters: hypervolume improvement).

Once the best stops improving, a share of each batch explores (:mod:`.stall`: a trust region around the
best designs, then a restart far from everything simulated).

A failed simulation (the simulator's error, or a lookup table's status other than ok) costs budget, is
recorded, is never proposed again, and teaches the feasibility classifier. Every proposal is one
:class:`Trial` of the study (like an Optuna study's trials): its round, the model version that chose
it (0 = the initial sample), its acquisition value, and its value or failure. A study resumes from
its trials: nothing simulated is simulated again.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import GpudseError
from .intervals import LEVEL
from .timing import RoundTime

GOALS = ("min", "max", "accuracy", "pareto")
ACQUISITIONS = ("ei", "lcb")
FEASIBLE = 0.5  # a design the classifier gives a lower chance of simulating is proposed only when no other is left
# accuracy: simulated designs before the spread's skill is first checked (100: worse than uniform at 125–150 on BFS)
ACCURACY_START = 150
ACCURACY_SKILL = 0.8  # accuracy: out-of-bag spread–error rank correlation from which the spread is followed
ACCURACY_SHARE = 0.3  # accuracy: the part of the simulations that follows the spread once it is skilled
ACCURACY_TREES = 30  # accuracy: trees of the forest whose spread is checked and followed
SEED_MAX = 2**32 - 1  # the largest seed: the models' generators take seeds below 2**32 (sub-seeds wrap round)
INITIAL_METHODS = ("uniform", "lhs")
# min/max/pareto, off by default: RANDOM_SHARE of the proposals after the initial sample are uniform draws of the
# designs not yet simulated (SMAC's interleaved random configurations, Hutter et al. 2011 §4.3), and STALLED_SHARE
# of those made while the best has not improved for STALL simulations. Measured on the convolution tables (docs/
# search.md, "Exploration"), both raised the median regret against the models alone (A100, batch 5, 10 seeds, at
# 100 simulations: 28.3 % with a fifth drawn, 14.7 % with half drawn once stalled, 3.7 % without), so the default
# is the models alone and the draws are a setting (random_share, stalled_share)
RANDOM_SHARE = 0.0
STALLED_SHARE = 0.0
STALL = 20
SURROGATES = ("auto", "forest")


class SearchError(GpudseError):
    """A search that cannot run as asked (bad goal, budget, response...)."""


@dataclass
class Trial:
    number: int
    round: int
    model_version: int
    design: dict
    acquisition: float | None
    value: float | None
    status: str  # "ok" or "failed"
    error: str = ""
    cost: float | None = None
    seconds: float = 0.0  # the search's own time to propose this trial's batch
    measured: float | None = None  # with an objective: the simulated response (value is then the objective)
    surrogate: str = ""  # the model that chose it: "forest", "stepwise" (see .choice); "" for the initial sample
    predicted: float | None = None  # the value the model that chose it predicted, before simulating (.intervals)
    lower: float | None = None  # the calibrated interval around predicted, at level (.intervals); None: no interval
    upper: float | None = None
    level: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict, order: Sequence[str] = ()) -> "Trial":
        """A stored trial; its design's parameters in *order* (the space's), whatever order the store kept."""
        design = dict(d.get("design") or {})
        ranked = [p for p in order if p in design]
        design = {**{p: design[p] for p in ranked}, **{k: v for k, v in design.items() if k not in ranked}}
        return cls(**{**d, "design": design})


@dataclass
class SearchResult:
    goal: str
    response: str
    trials: list[Trial]
    stopped: str  # why the loop ended: budget, target, no improvement, exhausted, stopped
    choices: list[tuple] = field(default_factory=list)  # (designs, forest's and stepwise's held-out error, p)
    rounds: list[RoundTime] = field(default_factory=list)  # each round's time (.timing), resumed ones first

    @property
    def propose_seconds(self) -> list[float]:
        """Each round's proposal (its models' fits included)."""
        return [r.propose_s for r in self.rounds]

    @property
    def fit_seconds(self) -> list[float]:
        """Each round's fits (the forest's, the feasibility classifier's, the stepwise model's)."""
        return [r.fit_s for r in self.rounds]
    not_counted: list[dict] = field(default_factory=list)  # designs whose simulation a Stop ended (NOT_RUN)

    @property
    def ok(self) -> list[Trial]:
        return [t for t in self.trials if t.status == "ok"]

    @property
    def failed(self) -> int:
        return sum(t.status != "ok" for t in self.trials)

    def best(self) -> Trial | None:
        ok = self.ok
        if not ok:
            return None
        if self.goal == "max":
            return max(ok, key=lambda t: t.value)
        return min(ok, key=lambda t: t.value)

    def front(self) -> list[Trial]:
        from .acquisition import pareto_mask

        ok = [t for t in self.ok if t.cost is not None]
        if not ok:
            return []
        m = pareto_mask(np.array([t.value for t in ok]), np.array([t.cost for t in ok]))
        return sorted((t for t, k in zip(ok, m) if k), key=lambda t: t.cost)

    def best_so_far(self) -> list[float | None]:
        out, cur = [], None
        for t in self.trials:
            if t.status == "ok":
                cur = t.value if cur is None else (max(cur, t.value) if self.goal == "max" else min(cur, t.value))
            out.append(cur)
        return out

    def to_json(self, params: Sequence[str]) -> dict:
        best = self.best() if self.goal != "accuracy" else None

        def point(t: Trial) -> dict:  # with an objective: the response and the objective side by side
            return {self.response: t.value} if t.measured is None else {self.response: t.measured, "objective": t.value}

        def entry(t: Trial) -> dict:  # the CSV history's row (search -o), the design kept as one object
            e = {"trial": t.number, "round": t.round, "model_version": t.model_version, "design": t.design,
                 "value": t.value if t.measured is None else t.measured}
            if t.measured is not None:
                e["objective"] = t.value
            e["status"] = t.status
            if t.status != "ok":
                e["error"] = t.error
            e.update({"surrogate": t.surrogate or None, "acquisition": t.acquisition, **interval_fields(t)})
            return e if t.cost is None else {**e, "cost": t.cost}

        from ..model.coverage import coverage, interval_fields
        from .timing import timing_doc

        doc: dict[str, Any] = {"goal": self.goal, "evaluated": len(self.trials), "failed": self.failed,
                               "best": None if best is None else {**best.design, **point(best)},
                               "stopped": self.stopped, "history": [entry(t) for t in self.trials],
                               "time": timing_doc(self.rounds)}
        k, n = coverage(self.trials)
        doc["intervals"] = {"level": LEVEL, "checked": n, "inside": k, "coverage": k / n if n else None}
        if self.goal == "pareto":
            doc["front"] = [{**t.design, self.response: t.value, "cost": t.cost} for t in self.front()]
        return doc


def _whole(name: str, v: Any, least: int = 1) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
        raise SearchError(f"--{name} must be a whole number of at least {least} (got {v!r})")


def check_settings(goal: str, budget: int, initial: int | None, batch: int, acquisition: str = "ei", *,
                   seed: int = 0, initial_method: str = "uniform", surrogate: str = "auto",
                   target: float | None = None, patience: int | None = None, n_trees: int | None = None) -> int:
    """Validate every setting of the loop before anything is simulated (``gpudse search`` and the
    Search page both call it: a value found wrong after the first simulations would lose them);
    returns the initial sample size."""
    from .. import limits

    if goal not in GOALS:
        raise SearchError(f"goal {goal!r}: choose one of {', '.join(GOALS)}")
    if acquisition not in ACQUISITIONS:
        raise SearchError(f"acquisition {acquisition!r}: choose one of {', '.join(ACQUISITIONS)}")
    if initial_method not in INITIAL_METHODS:
        raise SearchError(f"initial sample {initial_method!r}: choose uniform or lhs")
    if surrogate not in SURROGATES:
        raise SearchError(f"surrogate {surrogate!r}: choose auto or forest")
    for name, v in (("budget", budget), ("batch", batch)):
        _whole(name, v)
    _whole("seed", seed, 0)
    if seed > SEED_MAX:
        raise SearchError(f"--seed {seed} is too large: give a whole number from 0 to {SEED_MAX:,} (2**32 - 1, the "
                          f"largest seed the models' random generators take)")
    for name, v in (("patience", patience), ("trees", n_trees)):
        if v is not None:
            _whole(name, v)
    if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float, np.number))
                               or not math.isfinite(float(target))):
        raise SearchError(f"--target must be a finite number (got {target!r})")
    limits.check("search_budget", budget, f"a search of {budget:,} simulations", "search in stages (resume "
                 "raises the budget)")
    limits.check("search_batch", batch, f"batches of {batch:,} proposals")
    n0 = default_initial(budget) if initial is None else initial
    if isinstance(n0, bool) or not isinstance(n0, (int, np.integer)) or n0 < 1:
        raise SearchError(f"--initial must be a whole number of at least 1 (got {initial!r})")
    if n0 >= budget:
        raise SearchError(f"--budget {budget} leaves nothing for the search after --initial {n0}: give a budget "
                          f"above the initial sample (e.g. --budget {max(2 * n0, n0 + 10)}) or a smaller --initial")
    return int(n0)


def default_initial(budget: int) -> int:
    """10 space-filling points, whatever the budget (fewer for a tiny budget): a search run to budget
    200 passes through the same states as one stopped at 50."""
    return max(1, min(10, budget // 2))


def sub_seed(seed: int) -> int:
    """A model's seed derived from the search's (seed + model version): wrapped below 2**32, which is
    what the forests' generators take (unchanged for every seed up to 2**32 - 1 - the rounds run)."""
    return int(seed) % (SEED_MAX + 1)


# (digits, designs) -> [(value or None, error text), or NOT_RUN for a design whose simulation was stopped]
Evaluate = Callable[[np.ndarray, list], list]
NOT_RUN = None  # an outcome for a design not simulated (Stop): not a trial, not counted, simulated on a resume


@dataclass(frozen=True)
class SearchSettings:
    """What a search asks for: the loop's settings (see :func:`run_search`), checked together by
    :meth:`check` before anything is simulated. *cost* and *objective* are built functions
    (:mod:`.expressions`)."""

    goal: str = "min"
    budget: int = 100
    initial: int | None = None
    batch: int = 1
    seed: int = 0
    acquisition: str = "ei"
    initial_method: str = "uniform"
    cost: Callable[[np.ndarray], np.ndarray] | None = None
    target: float | None = None
    patience: int | None = None
    response: str = "value"
    n_trees: int | None = None
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    surrogate: str = "auto"
    cost_column: str | None = None  # pareto: the cost is this second measured result (the simulator returns it)
    random_share: float | None = None  # None: RANDOM_SHARE (and STALLED_SHARE when stalled); 0: the models alone
    stalled_share: float | None = None  # None: STALLED_SHARE
    local_share: float | None = None  # None: stall.LOCAL_SHARE of the proposals made while stalled (.stall); 0: none

    def check(self) -> int:
        """Every setting valid (or :class:`SearchError`); returns the initial sample size."""
        n0 = check_settings(self.goal, self.budget, self.initial, self.batch, self.acquisition, seed=self.seed,
                            initial_method=self.initial_method, surrogate=self.surrogate, target=self.target,
                            patience=self.patience, n_trees=self.n_trees)
        if self.goal == "pareto" and self.cost is None and not self.cost_column:
            raise SearchError("goal pareto needs a cost (--cost EXPR over the parameters, e.g. 'simd * smp', or "
                              "--cost-column COL, a second measured result such as wattage)")
        if self.cost is not None and self.cost_column:
            raise SearchError("give a cost expression or a measured cost column, not both")
        if self.cost_column and self.goal != "pareto":
            raise SearchError(f"a measured cost column is for goal pareto, not {self.goal}")
        if self.objective is not None and self.goal not in ("min", "max"):
            raise SearchError(f"an objective is for goal min or max, not {self.goal}")
        for name in ("random_share", "stalled_share", "local_share"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.number))
                                  or not 0.0 <= float(v) <= 1.0):
                raise SearchError(f"{name} must be a share from 0 to 1 (got {v!r})")
        return n0


@dataclass
class _Batch:
    """One round's proposals: the designs (digits), their acquisition values (NaN: none), which model
    chose each, the predicted values and their calibrated intervals (NaN: none; :mod:`.intervals`), and
    the seconds spent fitting."""

    digits: np.ndarray
    acq: np.ndarray | None = None
    chose: list = field(default_factory=list)
    predicted: np.ndarray | None = None
    fit_s: float = 0.0
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None

    def subset(self, keep: list[int]) -> "_Batch":
        """The proposals at positions *keep* (those a stopped round finished simulating)."""
        def part(a: Any) -> Any:
            return None if a is None else np.asarray(a)[keep]

        return _Batch(self.digits[keep], part(self.acq), [self.chose[i] if i < len(self.chose) else "" for i in keep],
                      part(self.predicted), self.fit_s, part(self.lower), part(self.upper))


def run_search(pool: Any, evaluate: Evaluate, *, trials: Sequence[Trial] = (), rounds: Sequence[RoundTime] = (),
               on_round: Callable[[SearchResult], Any] | None = None,
               should_stop: Callable[[], bool] | None = None, **settings: Any) -> SearchResult:
    """Run (or resume, from *trials* and their *rounds*' times) a search over *pool* with *evaluate* as
    the simulator; *settings* are the fields of :class:`SearchSettings` (goal, budget, initial, batch,
    seed, acquisition, initial_method, cost, target, patience, response, n_trees, objective, surrogate).
    Each round: check whether to stop, propose a batch, simulate it, record it (:class:`_Loop`'s steps),
    with the seconds of each step in ``res.rounds`` (:class:`~.timing.RoundTime`; its total, which
    includes *on_round*, is known once *on_round* returns).

    *objective* (``min``/``max``): the value optimised is ``objective(digits, response)`` — e.g. cycles ×
    a die-area expression of the parameters — rather than the response itself; the forest models the
    objective's values (a forest of the response whose trees' predictions were put through the
    objective measured far worse: leaves of one row predict a neighbour's cycles unchanged, so a
    larger design always looked worse by its area and the search stalled).

    *surrogate* (``min``/``max``): ``auto`` (the default) lets the stepwise model propose part of each
    batch while its held-out error is significantly below the forest's (:mod:`.choice`); ``forest``
    never fits it (with the 30-tree forest, ``auto`` was below random search, the one-shot workflow and
    TPE on every benchmark space, the forest alone was not: docs/search.md). *n_trees* overrides the
    surrogate forest's trees, not the feasibility classifier's."""
    try:
        s = SearchSettings(**settings)
    except TypeError as e:
        raise SearchError(f"a search setting that does not exist: {e}") from None
    from ..model.cancel import Interrupted

    loop = _Loop(pool, evaluate, s, s.check(), trials)
    loop.res.rounds = list(rounds)
    while True:
        why = loop.stop_reason(should_stop)
        if why is not None:
            loop.res.stopped = why
            break
        t0 = time.perf_counter()
        try:  # a Stop during the models' fits (checked between their parts) ends the search here
            batch = loop.propose()
        except Interrupted:
            loop.res.stopped = "stopped"
            break
        if should_stop is not None and should_stop():  # asked while proposing: nothing more is simulated
            loop.res.stopped = "stopped"
            break
        if batch is None:  # no candidate left
            loop.res.stopped = "exhausted"
            break
        seconds = time.perf_counter() - t0
        if not len(batch.digits):
            loop.res.stopped = "exhausted"
            break
        t1 = time.perf_counter()
        outcomes = loop.simulate(batch.digits)
        simulated = time.perf_counter() - t1
        took = RoundTime(loop.rnd, len(batch.digits), seconds, batch.fit_s, simulated, seconds + simulated)
        if any(o is NOT_RUN for o in outcomes):  # a Stop ended simulations in flight: only finished ones count
            loop.res.not_counted += [loop.space._row(d) for d, o in zip(batch.digits, outcomes) if o is NOT_RUN]
            ran = [i for i, o in enumerate(outcomes) if o is not NOT_RUN]
            if ran:
                loop.record(batch.subset(ran), [outcomes[i] for i in ran], seconds)
                took.simulations = len(ran)
                loop.res.rounds.append(took)
            loop.res.stopped = "stopped"
            if on_round is not None and ran:
                on_round(loop.res)
            break
        loop.record(batch, outcomes, seconds)
        loop.res.rounds.append(took)
        if on_round is not None:
            on_round(loop.res)
        took.total_s = time.perf_counter() - t0
    return loop.res


class _Loop:
    """The search's state between rounds and its steps: prepare (here: the trials to resume from),
    :meth:`stop_reason`, :meth:`propose`, :meth:`simulate`, :meth:`record`."""

    def __init__(self, pool: Any, evaluate: Evaluate, s: SearchSettings, n0: int, trials: Sequence[Trial]):
        self.pool, self.evaluate, self.s, self.n0 = pool, evaluate, s, n0
        self.space = pool.space
        self.rng = np.random.default_rng(s.seed)
        self.res = SearchResult(s.goal, s.response, list(trials), "budget")
        self.done_digits = [np.asarray(self.space.digits_of_point(t.design), dtype=np.int64) for t in self.res.trials]
        if self.done_digits:
            pool.mark(np.array(self.done_digits))
        self.version = max((t.model_version for t in self.res.trials), default=0)
        self.rnd = max((t.round for t in self.res.trials), default=-1) + 1
        self.sign = -1.0 if s.goal == "max" else 1.0
        self.stale, self.best_prev = 0, None
        self.stream = _UniformStream(pool, s.budget, s.seed) if s.goal == "accuracy" else None
        self.chooser: dict = {"next": 0, "winner": "forest", "model": None}
        self.stall_phase = ""  # what the stall's share of the batch explores (.stall.phase)

    # ---- stop ----------------------------------------------------------------------------------------
    def stop_reason(self, should_stop: Callable[[], bool] | None) -> str | None:
        """Why the loop ends now (stopped, budget, exhausted, target, no improvement), or None."""
        s, res = self.s, self.res
        if should_stop is not None and should_stop():
            return "stopped"
        if len(res.trials) >= s.budget:
            return "budget"
        if self.pool.remaining() <= 0:
            return "exhausted"
        ok = res.ok
        if s.target is not None and ok and any(self.sign * t.value <= self.sign * s.target for t in ok):
            return "target"
        if s.patience is not None and self.stale >= s.patience:
            return "no improvement"
        return None

    # ---- propose -------------------------------------------------------------------------------------
    def propose(self) -> _Batch | None:
        """The next batch: the accuracy goal's, the initial sample's, or the models' (None: no candidate)."""
        s, spent = self.s, len(self.res.trials)
        if s.goal == "accuracy":
            k = min(s.batch, s.budget - spent)
            digits, acq, fitted = _accuracy_batch(self.pool, self.stream, self.res, self.done_digits, k, self.rng,
                                                  sub_seed(s.seed + self.version + 1), s.n_trees or ACCURACY_TREES)
            self.version += fitted
            return _Batch(digits, acq)
        if spent < self.n0 or len(self.res.ok) < 2:
            k = min(self.n0 - spent if spent < self.n0 else s.batch, s.budget - spent)
            return _Batch(self.pool.initial(k, self.rng, s.initial_method))
        return self._propose_by_models(min(s.batch, s.budget - spent))

    def _propose_by_models(self, k: int) -> _Batch | None:
        """Fit the forest (and the feasibility classifier when designs failed), score the candidates,
        take the stepwise model's part of the batch when it leads, and a diverse batch of the rest."""
        from .choice import START
        from .surrogate import TREES, Forest

        s, res, pool = self.s, self.res, self.pool
        ok = res.ok
        X = pool.features(np.array(self.done_digits))
        status = np.array([t.status == "ok" for t in res.trials])
        self.version += 1
        cand = pool.candidates(self.rng, _incumbents(res, self.done_digits, s.goal, self.sign))
        if not len(cand):
            return None
        Xc = pool.features(cand)
        y = np.array([t.value for t in ok])
        tf = time.perf_counter()
        forest = Forest(s.n_trees or TREES, seed=sub_seed(s.seed + self.version)).fit(X[status], y)
        fit_s = time.perf_counter() - tf
        score, feasible = self._score(forest, X, status, y, cand, Xc)
        lead, lead_pred = np.zeros((0, cand.shape[1]), dtype=np.int64), np.zeros(0)
        if s.surrogate == "auto" and s.goal in ("min", "max") and len(ok) >= START:
            lead, lead_pred, chose_s = self._stepwise_part(forest, X[status], y, status, cand, k, feasible)
            fit_s += chose_s
        n_random = self._random_slots(k)
        unit = pool.unit(cand)
        local = self._local(cand, unit, score, k - n_random) if s.goal in ("min", "max") else cand[:0, 0]
        if len(local):  # stalled: the stall's part first (.stall), the models' from the other candidates
            rest = np.setdiff1d(np.arange(len(cand)), local)
            lead, lead_pred = _without(lead, lead_pred, cand[local])
            m = k - n_random - len(local)
            batch = _pick(cand[rest], unit[rest], score[rest], m, lead[:m], lead_pred[:m], fit_s)
            batch = _Batch(np.concatenate([cand[local], batch.digits]),
                           np.concatenate([score[local], np.full(len(batch.digits), np.nan) if batch.acq is None
                                           else batch.acq]),
                           [self.stall_phase] * len(local) + list(batch.chose),
                           None if batch.predicted is None else np.concatenate([np.full(len(local), np.nan),
                                                                                 batch.predicted]), fit_s)
        else:
            batch = _pick(cand, unit, score, k - n_random, lead[:k - n_random], lead_pred[:k - n_random], fit_s)
        batch = _with_random(batch, pool, n_random, self.rng) if n_random else batch
        return self._annotate(batch, forest, X[status], y)

    def _annotate(self, batch: _Batch, forest: Any, X_ok: np.ndarray, y: np.ndarray) -> _Batch:
        """Each proposal's predicted value — the stepwise model's for its designs, else the forest's (a
        uniform draw's too) — and its calibrated interval (:mod:`.intervals`: held-out residuals the round
        has, no refit)."""
        from .intervals import forest_intervals, interval, joined

        n, goal = len(batch.digits), "max" if self.s.goal == "max" else "min"  # (pareto: the response, min)
        if not n:
            return batch
        # the forest's: every out-of-bag residual, scaled by the spread (docs/search.md, "Intervals on proposals")
        pred, lo, hi = forest_intervals(forest, X_ok, y, self.pool.features(batch.digits))
        step = np.array([i < len(batch.chose) and batch.chose[i] == "stepwise" for i in range(n)], dtype=bool)
        if batch.predicted is not None:
            pred = np.where(step, batch.predicted, pred)
        if step.any():  # the stepwise model's best predictions: the held-out rows it ranked best (as explore's),
            # joined with the forest's interval there (where the two models disagree, the truth was near either)
            lo_s, hi_s = joined(pred, interval(pred, getattr(self.chooser.get("model"), "calibration", None), goal),
                                (lo, hi), bool(forest.log))
            lo, hi = np.where(step, lo_s, lo), np.where(step, hi_s, hi)
        batch.predicted, batch.lower, batch.upper = pred, lo, hi
        return batch

    def _local(self, cand: np.ndarray, unit: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
        """The candidates the stall's exploration takes from the next *k* proposals (.stall): none unless
        the best has not improved for STALL simulations; then the trust region around the best designs,
        walked by what has not been tried (``local``), or a restart far from every design simulated
        (``far``), by the stall's length — a share of the proposals that grows with it."""
        from . import stall

        share = stall.LOCAL_SHARE if self.s.local_share is None else self.s.local_share
        trials = self.res.trials
        since = stall.stalled_for([t.value for t in trials], self.sign)
        self.stall_phase = stall.phase(since)
        if share <= 0 or not self.stall_phase:
            return np.zeros(0, dtype=np.int64)
        start = stall.phase_start(since)  # the phase's share of the proposals made since it began
        n = stall.owed([t.surrogate for t in trials[len(trials) - (since - start):]] if since > start else [],
                       ("local", "far"), stall.share_at(since, share), k)
        if self.stall_phase == "far":
            return stall.far_picks(cand, unit, score, self.pool.unit(np.array(self.done_digits)), n)
        centres = _incumbents(self.res, self.done_digits, self.s.goal, self.sign)[:stall.LOCAL_CENTRES]
        return stall.local_picks(cand, score, centres, np.array(self.done_digits), n)

    def _random_slots(self, k: int) -> int:
        """How many of the next *k* proposals are uniform draws: the share's whole part of the simulations
        counted from the initial sample (so batches of 1 and of 10 draw equally often) — or, while the best
        has not improved for STALL simulations, the stalled share of those since the stall was declared."""
        s, trials = self.s, self.res.trials
        share = RANDOM_SHARE if s.random_share is None else s.random_share
        stalled = STALLED_SHARE if s.stalled_share is None else s.stalled_share
        since = self._stalled_for()
        if stalled > share and since >= STALL:
            counted = trials[len(trials) - (since - STALL):] if since > STALL else []
            share = stalled
        else:
            counted = trials[self.n0:]
        if share <= 0:
            return 0
        drawn = sum(t.surrogate == "random" for t in counted)
        return int(min(k, max(0, math.floor((len(counted) + k) * share) - drawn)))

    def _stalled_for(self) -> int:
        """Simulations since the best value last improved (0 before any success)."""
        from .stall import stalled_for

        return stalled_for([t.value for t in self.res.trials], self.sign)

    def _score(self, forest: Any, X: np.ndarray, status: np.ndarray, y: np.ndarray, cand: np.ndarray,
               Xc: np.ndarray) -> tuple[np.ndarray, Any]:
        """The acquisition of every candidate (hypervolume improvement, LCB or EI), weighed by the
        feasibility classifier's chance of simulating when designs failed (which is returned too)."""
        from .acquisition import expected_improvement, hypervolume_improvement, lower_confidence_bound
        from .surrogate import FEASIBILITY_TREES, Feasibility

        s, sign = self.s, self.sign
        mu, sd = forest.predict(Xc)
        z = forest.transform(y)
        if s.goal == "pareto":
            c_done, c_cand = self._costs(X, status, Xc, cand)
            span_z = float(np.ptp(z)) or 1.0
            span_c = float(max(np.ptp(c_done), np.ptp(c_cand))) or 1.0
            ref = (float(z.max()) + 0.1 * span_z, float(max(c_done.max(), c_cand.max())) + 0.1 * span_c)
            score = hypervolume_improvement(mu, sd, c_cand, z, c_done, ref)
            if not np.any(score > 0):
                score = -(mu - sd)  # nothing improves the front by its optimistic value: fall back
        elif s.acquisition == "lcb":
            score = lower_confidence_bound(sign * mu, sd)
        else:
            score = expected_improvement(sign * mu, sd, float((sign * z).min()))
            if not np.any(score > 0):
                score = lower_confidence_bound(sign * mu, sd)
        feasible = None
        if not status.all():
            feasible = Feasibility(sub_seed(s.seed + self.version), FEASIBILITY_TREES).fit(X, status)
            p = feasible.probability(Xc)
            score = np.where(score >= 0, score * p, score / p)
            likely = p >= FEASIBLE
            if likely.any() and not likely.all():  # designs expected to fail come after all others
                score = np.where(likely, score, float(score[likely].min()) - 1.0 - (1.0 - p))
        return score, feasible

    def _costs(self, X: np.ndarray, status: np.ndarray, Xc: np.ndarray,
               cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cost of the simulated designs and of the candidates: computed from the parameters, or — a
        measured cost (a table's wattage, a simulator's metric) — as measured, and for the candidates a
        second forest's optimistic value (mean less one spread, as the response's; the hypervolume
        improvement then rewards a design that may be cheap as well as one that may be fast)."""
        from .surrogate import Forest

        s = self.s
        if s.cost is not None:
            return s.cost(np.array(self.done_digits)[status]), s.cost(cand)
        c_done = np.array([t.cost for t in self.res.ok], dtype=float)
        cf = Forest(s.n_trees or 30, seed=sub_seed(s.seed + self.version + 7)).fit(X[status], c_done)
        mu, sd = cf.predict(Xc)
        return c_done, (np.exp(mu - sd) if cf.log else mu - sd)

    def _stepwise_part(self, forest: Any, X_ok: np.ndarray, y: np.ndarray, status: np.ndarray, cand: np.ndarray,
                       k: int, feasible: Any) -> tuple[np.ndarray, np.ndarray, float]:
        """The stepwise model's designs and predictions for this batch (refitted and compared with the
        forest when the successful designs have grown enough; its fits count as fit time)."""
        from .choice import REFIT_GROWTH, stepwise_slots

        s, ok, fit_s = self.s, self.res.ok, 0.0
        lead, lead_pred = np.zeros((0, cand.shape[1]), dtype=np.int64), np.zeros(0)
        if len(ok) >= self.chooser["next"]:  # the stepwise fits and their cross-validation count as fits
            tf = time.perf_counter()
            self.chooser["next"] = math.ceil(len(ok) * REFIT_GROWTH)
            self.chooser.update(_choose(forest, X_ok, y, np.array(self.done_digits)[status], ok, self.space,
                                        s.objective, sub_seed(s.seed + self.version), self.res))
            fit_s += time.perf_counter() - tf
        if self.chooser["winner"] == "stepwise":
            lead, lead_pred = _stepwise_lead(self.chooser["model"], self.pool, cand, min(stepwise_slots(s.batch), k),
                                             feasible, min(self.sign * t.value for t in ok), self.sign)
        return lead, lead_pred, fit_s

    # ---- simulate and record -------------------------------------------------------------------------
    def simulate(self, digits: np.ndarray) -> list:
        """The simulator's outcomes for *digits*: (value or None, error text) per design."""
        return self.evaluate(digits, [self.space._row(r) for r in digits])

    def record(self, batch: _Batch, outcomes: list, seconds: float) -> None:
        """Every outcome as a trial (a value the objective leaves undefined is a failure), the designs
        marked simulated, the round counted, and the rounds without improvement."""
        s, res, digits = self.s, self.res, batch.digits
        designs = [self.space._row(r) for r in digits]
        costs = s.cost(digits) if s.cost is not None else None
        if s.cost_column:  # measured: each outcome is (value, error, cost); a value without a cost has failed
            costs = np.array([o[2] if len(o) > 2 and o[2] is not None else np.nan for o in outcomes], dtype=float)
        self.pool.mark(digits)
        raw = np.array([o[0] if o[0] is not None and math.isfinite(o[0]) and (costs is None or np.isfinite(costs[i]))
                        else np.nan for i, o in enumerate(outcomes)], dtype=float)
        vals = raw if s.objective is None else _objective_values(s.objective, digits, raw)
        acq, chose, predicted = batch.acq, batch.chose, batch.predicted
        for i, (d, (value, error, *_)) in enumerate(zip(designs, outcomes)):
            ok = bool(np.isfinite(vals[i]))
            if not ok and costs is not None and value is not None and not np.isfinite(costs[i]):
                error = error or f"no numeric {s.cost_column!r} (the second objective)"
            elif not ok and np.isfinite(raw[i]):
                error = f"the objective is undefined here ({s.response} = {raw[i]:.6g})"
            a = None if acq is None or not np.isfinite(acq[i]) else float(acq[i])
            pred, lower, upper = (None if v is None or not np.isfinite(v[i]) else float(v[i])
                                  for v in (predicted, batch.lower, batch.upper))
            res.trials.append(Trial(len(res.trials), self.rnd, self.version, {k: _plain(v) for k, v in d.items()},
                                    a, float(vals[i]) if ok else None,
                                    "ok" if ok else "failed", "" if ok else (error or "no value"),
                                    None if costs is None or not np.isfinite(costs[i]) else float(costs[i]), seconds,
                                    float(raw[i]) if ok and s.objective is not None else None,
                                    chose[i] if i < len(chose) else "",
                                    pred, lower, upper, None if lower is None else LEVEL))
            self.done_digits.append(np.asarray(digits[i], dtype=np.int64))
        self.rnd += 1
        best = res.best()
        if s.goal in ("min", "max") and best is not None:
            self.stale = self.stale + 1 if self.best_prev is not None and best.value == self.best_prev else 0
            self.best_prev = best.value


def _pick(cand: np.ndarray, unit_c: np.ndarray, score: np.ndarray, k: int, lead: np.ndarray, lead_pred: np.ndarray,
          fit_s: float) -> _Batch:
    """The batch: the stepwise model's *lead* designs first (no acquisition value: their predicted
    value is kept apart), then a diverse batch of the best-scored other candidates."""
    from .acquisition import diverse_batch

    if len(lead):
        from .pool import row_keys

        taken = {key.tobytes() for key in row_keys(lead)}
        rest = np.array([key.tobytes() not in taken for key in row_keys(cand)], dtype=bool)
        idx = np.flatnonzero(rest)
        pick = idx[diverse_batch(score[idx], unit_c[idx], k - len(lead))] if k > len(lead) else idx[:0]
        return _Batch(np.concatenate([lead, cand[pick]]), np.concatenate([np.full(len(lead), np.nan), score[pick]]),
                      ["stepwise"] * len(lead) + ["forest"] * len(pick),
                      np.concatenate([lead_pred, np.full(len(pick), np.nan)]), fit_s)
    pick = diverse_batch(score, unit_c, k)
    return _Batch(cand[pick], score[pick], ["forest"] * len(pick), None, fit_s)


def _without(lead: np.ndarray, lead_pred: np.ndarray, taken: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stepwise model's *lead* designs (and predictions) that are not among *taken*."""
    if not len(lead):
        return lead, lead_pred
    from .pool import row_keys

    gone = {key.tobytes() for key in row_keys(taken)}
    keep = np.array([key.tobytes() not in gone for key in row_keys(lead)], dtype=bool)
    return lead[keep], lead_pred[keep]


def _with_random(batch: _Batch, pool: Any, n: int, rng: np.random.Generator) -> _Batch:
    """*batch* and *n* uniform draws of the designs neither simulated nor in it (labelled ``random``)."""
    from .pool import row_keys

    taken = {key.tobytes() for key in row_keys(batch.digits)} if len(batch.digits) else set()
    draws = pool.initial(n + len(taken), rng)
    draws = np.array([d for d, key in zip(draws, row_keys(draws)) if key.tobytes() not in taken][:n],
                     dtype=np.int64).reshape(-1, batch.digits.shape[1] if batch.digits.ndim == 2 else len(pool.radices))
    m = len(draws)
    pred = None if batch.predicted is None else np.concatenate([batch.predicted, np.full(m, np.nan)])
    acq = None if batch.acq is None else np.concatenate([batch.acq, np.full(m, np.nan)])
    digits = np.concatenate([batch.digits.reshape(-1, draws.shape[1]), draws]) if m else batch.digits
    return _Batch(digits, acq, list(batch.chose) + ["random"] * m, pred, batch.fit_s)


def _stepwise_lead(model: Any, pool: Any, cand: np.ndarray, n_lead: int, feasible: Any, best: float,
                   sign: float) -> tuple[np.ndarray, np.ndarray]:
    """The stepwise model's part of a batch and its predicted values: its best predicted designs not yet
    simulated — with failures, only those the feasibility classifier expects to simulate — and only
    those it predicts better than the best so far (*best*, times *sign*: a model that expects no
    improvement has nothing to propose, and the forest takes the slots). Empty when a prediction fails."""
    none = cand[:0], np.zeros(0)
    try:
        lead = model.best_unseen(pool, n_lead if feasible is None else 10 * n_lead + 10, sign < 0, cand)
        if feasible is not None and len(lead):
            lead = lead[feasible.probability(pool.features(lead)) >= FEASIBLE]
        if not len(lead):
            return none
        pred = np.asarray(model.predict(lead), dtype=float)
        with np.errstate(invalid="ignore"):
            better = sign * pred < best
        return lead[better][:n_lead], pred[better][:n_lead]
    except Exception:  # noqa: BLE001 - a prediction that fails leaves the batch to the forest
        return none


def _choose(forest: Any, X: np.ndarray, y: np.ndarray, digits: np.ndarray, ok: list, space: Any,
            objective: Callable | None, seed: int, res: SearchResult) -> dict:
    """Refit the stepwise model and compare its held-out error with the forest's (:mod:`.choice`)."""
    from ..model.cancel import Interrupted
    from .choice import SIGNIFICANCE, StepwiseSurrogate, compare

    response = np.array([t.value if t.measured is None else t.measured for t in ok], dtype=float)
    sw = StepwiseSurrogate(space, objective, forest.log)
    try:
        e_forest, e_step, p = compare(forest, X, forest.transform(y), sw, digits, response, seed)
        if not (e_step < e_forest and p < SIGNIFICANCE):
            res.choices.append((len(ok), e_forest, e_step, p))
            return {"winner": "forest", "model": None}
        sw.fit(digits, response)
        from .intervals import held_out_calibration

        sw.calibration = held_out_calibration(sw.held_out, forest.transform(y), bool(forest.log))
    except Interrupted:  # a Stop during the fits: the search ends (run_search)
        raise
    except Exception:  # noqa: BLE001 - a stepwise fit that fails leaves the forest in charge
        return {"winner": "forest", "model": None}
    res.choices.append((len(ok), e_forest, e_step, p))
    return {"winner": "stepwise", "model": sw}


def _objective_values(objective: Callable, digits: np.ndarray, response: np.ndarray) -> np.ndarray:
    """The objective at simulated designs (NaN where the response failed or the objective is undefined)."""
    with np.errstate(all="ignore"):
        v = np.asarray(objective(np.asarray(digits), np.asarray(response, dtype=float)), dtype=float)
    v = np.broadcast_to(v, (len(digits),)).copy()
    v[~np.isfinite(v) | ~np.isfinite(response)] = np.nan
    return v


class _UniformStream:
    """The designs a uniform sample of the whole budget would simulate, in order (the same draw as
    ``pool.initial(budget, default_rng(seed))``): what ``accuracy`` simulates whenever it does not
    follow the spread, so a search that never does simulates exactly the uniform sample."""

    def __init__(self, pool: Any, budget: int, seed: int):
        self.pool, self.rng = pool, np.random.default_rng(seed)
        self.rows = pool.initial(budget, self.rng)
        self.head = 0

    def take(self, k: int, skip: set) -> np.ndarray:
        from .pool import row_keys

        out = []
        while len(out) < k and self.head < len(self.rows):
            r = self.rows[self.head]
            self.head += 1
            if row_keys(r[None, :])[0].tobytes() not in skip:
                out.append(r)
        d = np.array(out, dtype=np.int64).reshape(-1, self.rows.shape[1])
        if len(d) < k:  # the budget's sample is used up (a resumed, larger budget): fresh uniform draws
            self.pool.mark(d)
            d = np.concatenate([d, self.pool.initial(k - len(d), self.rng)])
        return d


def _accuracy_batch(pool: Any, stream: _UniformStream, res: SearchResult, done_digits: list, k: int,
                    rng: np.random.Generator, seed: int, n_trees: int) -> tuple[np.ndarray, np.ndarray | None, int]:
    """A batch for ``accuracy``: the uniform sample's next designs; once ACCURACY_START designs have
    simulated and the forest's out-of-bag spread ranks its out-of-bag errors well (Spearman ≥
    ACCURACY_SKILL, 0.8), ACCURACY_SHARE of the simulations (30 %: 3 of a batch of 10; with batches of
    1 or 2, one every few rounds) go to the largest spreads (on the log scale: relative) instead —
    uncertainty sampling (Ipek et al. 2006) hedged with uniform sampling, and only where the spread has
    shown it knows where the model is wrong (on measured tables it does not, and chasing it was worse
    than uniform). Returns (digits, acquisition values or None, 1 if a forest was fitted)."""
    from .acquisition import diverse_batch
    from .pool import row_keys
    from .surrogate import Forest

    ok = [i for i, t in enumerate(res.trials) if t.status == "ok"]
    seen = set(pool.seen)
    n_spread, acq, fitted, chosen = 0, None, 0, np.zeros((0, len(pool.radices)), dtype=np.int64)
    spent = len(res.trials)
    followed = [i for i, t in enumerate(res.trials) if t.acquisition is not None]
    # the share of everything simulated since the spread was first followed, whatever the batch size
    # (batches of 1: one round in three or four)
    cap = math.ceil(ACCURACY_SHARE * k)
    owed = cap if not followed else min(int(ACCURACY_SHARE * (spent + k - followed[0])) - len(followed), cap)
    if len(ok) >= ACCURACY_START and owed >= 1:
        X = pool.features(np.array([done_digits[i] for i in ok]))
        y = np.array([res.trials[i].value for i in ok])
        forest = Forest(n_trees, seed=seed).fit(X, y)
        fitted = 1
        if forest.spread_skill(X, y) >= ACCURACY_SKILL:
            cand = pool.candidates(rng, np.zeros((0, len(pool.radices)), dtype=np.int64))
            if len(cand):
                n_spread = min(owed, len(cand))
                _, sd = forest.predict(pool.features(cand))
                pick = diverse_batch(sd, pool.unit(cand), n_spread)
                chosen, acq = cand[pick], sd[pick]
                seen.update(key.tobytes() for key in row_keys(chosen))
                pool.mark(chosen)  # (simulated next) a fresh uniform draw must not repeat them
    rest = stream.take(k - len(chosen), seen)
    digits = np.concatenate([chosen, rest])
    if acq is not None:
        acq = np.concatenate([acq, np.full(len(rest), np.nan)])
    return digits, acq, fitted


def _incumbents(res: SearchResult, done_digits: list, goal: str, sign: float) -> np.ndarray:
    """The ten best simulated designs (by the response; for pareto and accuracy too, as local centres)."""
    idx = sorted((i for i, t in enumerate(res.trials) if t.status == "ok"), key=lambda i: sign * res.trials[i].value)
    return np.array([done_digits[i] for i in idx[:10]], dtype=np.int64).reshape(-1, len(done_digits[0]))


def _plain(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v
