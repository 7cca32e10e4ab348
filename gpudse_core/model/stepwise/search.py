"""Stargazer's forward-stepwise search on one response scale (Stargazer §5.2, Algorithm 1), with the robust
default's additions: revisit, look-ahead, the adaptive interactions' non-linear parts, prune and the one-row
guard (steps 4–7 and 11 of the package docstring).

:class:`Search` holds the search's state as attributes (the incremental least-squares state, the chosen
parameters, the accepted terms and their columns, the trace) and runs Algorithm 1 as named steps:
:meth:`~Search.forced_terms`, :meth:`~Search.main_effects`, :meth:`~Search.pairs`, :meth:`~Search.three_way`,
:meth:`~Search.nonlinear`, :meth:`~Search.revisit` and :meth:`~Search.prune`, with :meth:`~Search.choose` (the
one-row guard) and :meth:`~Search.look_ahead` as helpers. Each step is a generator of :class:`.TraceStep` rows
(Stargazer Table 1).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from itertools import combinations
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from ...errors import GpudseError
from .. import encoding
from ..fitted import FitError, StepwiseModel, _rows, term_name, transform_response
from ..splines import make_basis
from ..trace import TraceStep
from .finish import build_model
from .ols import Candidates, OLSState, adj_r2, r2
from .scores import criterion_score, information, loo_path, prune
from .terms import DOUBLY, JOINT, WITH, interaction_block, label, plain

CACHE_BYTES = 256 << 20  # residualised candidate blocks kept between steps of the revisit pass
GUARD_NOTE = "one-row guard"  # the start of the note naming the terms the guard held back
# the adaptive form's doubly non-linear parts only on parameters of at most this many distinct training values (a
# grid): on a near-continuous one (Starchart k-means' points per block, 150 values in 300 rows) its tensor columns
# reach single rows and swing between them (predicted 10^40× off at an inner point, docs/models.md)
DOUBLY_MAX_VALUES = 32

Prepared = dict[str, tuple]  # candidate name -> (key, (residual block, factor), column labels, RSS, rank)


class Search:
    """Algorithm 1 on one response scale, from the data to a :class:`.StepwiseModel`.

    Parameters
    ----------
    settings : mapping
        The estimator's parameters (``StepwiseRegression.get_params()``, with the outer layers' changes:
        ``response_transform`` one of none, log, sqrt). They are recorded in the model.
    X : DataFrame
        The parameter columns (string names), response left out.
    y : ndarray of shape (n,)
        The response on its own scale.
    names : list of str
        The parameters to model.
    response : str
        The response's name (for messages and the model).

    Attributes
    ----------
    model : StepwiseModel
        The fitted model, once :meth:`steps` is exhausted.
    loo_error : float
        Its mean leave-one-out error (:func:`.scores.loo_path`), by which the outer layers choose.
    terms : list of str
        The accepted terms, in order.
    trace : list of dict
        The Table 1 rows emitted so far.

    References
    ----------
    Jia, Shaw, Martonosi, "Stargazer: Automated regression-based GPU design space exploration", ISPASS 2012,
    §5.2 and Algorithm 1. Lee & Brooks, "Regression modeling strategies for microarchitectural performance and
    power prediction", Harvard TR-08-06, 2006 (restricted cubic splines, F-tests eq. 10).
    """

    def __init__(self, settings: Mapping[str, Any], X: pd.DataFrame, y: np.ndarray, names: list[str],
                 response: str):
        self.settings = dict(settings)
        self.cfg = SimpleNamespace(**self.settings)
        self.X, self.y, self.names, self.response = X, y, names, response
        self.z = self._response_scale()
        self.n = self.z.size
        self.bases, self.cols, self.notes = self._bases()
        self.st = OLSState(self.z)
        self.chosen: list[str] = []
        self.terms: list[str] = []
        self.term_sets: set[frozenset] = set()
        self.columns: list[tuple[tuple[str, ...], tuple]] = []  # (params, basis-column indices) per model column
        self.marks: list[tuple[int, int, int]] = []  # (terms, columns, rank of Q) after each accepted term
        self.step_no = 0
        self.trace: list[dict] = []
        self.fits: dict[str, tuple[float, float]] = {}  # candidate -> (R², adjusted R²) of its latest evaluation
        # terms the one-row guard held back, by their set of parameters (the search's name for a term depends on
        # the path to it: b:a:c and a:c:b are one term): (name, row, its share of the gain)
        self.held: dict[frozenset, tuple[str, int, float]] = {}
        self.form = "full" if self.cfg.interactions == "full" else "restricted"
        self.many_values = {p for p in names if X[p].nunique() > DOUBLY_MAX_VALUES}
        self.chunk_cols = max(1, CACHE_BYTES // (8 * self.n))
        self.loo_error: float | None = None
        self.model: StepwiseModel | None = None

    # ---- setup -------------------------------------------------------------------------------------------------
    def _response_scale(self) -> np.ndarray:
        """The response on the search's scale; a constant one is an error."""
        t, y = self.cfg.response_transform, self.y
        z = transform_response(y, t, self.response)
        spread = float(np.ptp(z))
        if spread == 0 or spread <= 1e-12 * float(np.max(np.abs(z))):
            raise FitError(f"column {self.response!r} is constant (every row is {y[0]:g}"
                           f"{' on the ' + t + ' scale' if t != 'none' else ''}"
                           f"); there is nothing to model — check the response column")
        return z

    def _bases(self) -> tuple[dict, dict, list[str]]:
        """Each parameter's spline, categorical or linear basis (:mod:`.encoding`, :mod:`.splines`), its columns
        on the training rows, and the encoding's notes."""
        names, X, cfg = self.names, self.X, self.cfg
        if isinstance(cfg.knots, Mapping):
            unknown = [k for k in cfg.knots if k != "__default__" and k not in names]
            if unknown:
                raise FitError(f"knots given for unknown parameter(s) {unknown}; parameters: {', '.join(names)}")
            default = cfg.knots.get("__default__", 4)
            knots = {p: cfg.knots.get(p, default) for p in names}
        else:
            knots = {p: cfg.knots for p in names}
        if isinstance(cfg.scale, Mapping):
            unknown = [k for k in cfg.scale if k != "__default__" and k not in names]
            scale = {k: v for k, v in cfg.scale.items() if k not in unknown}  # a space file may name more
        else:
            scale = cfg.scale
        try:
            plan = encoding.plan({p: X[p].to_numpy() for p in names}, scale, tuple(cfg.categorical),
                                 cfg.categorical_levels, bool(cfg.powers_of_two))
            bases = {p: make_basis(p, X[p].to_numpy(), knots[p], cfg.knot_placement, cfg.norm,
                                   categorical=plan[p].categorical, scale=plan[p].scale, pow2=plan[p].pow2)
                     for p in names}
            cols = {p: bases[p].evaluate(X[p].to_numpy()) for p in names}
        except FitError:
            raise
        except GpudseError as e:
            raise FitError(str(e)) from None
        return bases, cols, [e.note for e in plan.values() if e.note]

    # ---- the search --------------------------------------------------------------------------------------------
    def steps(self) -> Iterator[TraceStep]:
        """Run the search: forced terms, then Algorithm 1 (main effects, each followed by its pairs), the revisit
        pass and the prune step as set; yields one Table 1 row per step and sets :attr:`model` at the end."""
        yield from self.forced_terms()
        n_forced = len(self.terms)
        remaining = [p for p in self.names if p not in self.chosen]
        if self.cfg.search and remaining:
            yield from self.main_effects(remaining)
            if self.cfg.revisit:
                yield from self.revisit()
            if self.cfg.prune:
                yield from self.prune(n_forced)
        if self.loo_error is None:  # the final model's leave-one-out error (for transform="auto")
            last = [m for m in self.marks if m[0] == len(self.terms)][-1:] or [(0, 0, 1)]
            self.loo_error = self._path(last, -1)[0][1]
        self.model = build_model(self.settings, self.X, self.cols, self.z, self.bases, self.columns, self.terms,
                                 self.st, self.names, self.response, self.notes)
        self.model.trace = self.trace
        note = self._guard_note()
        if note:
            self.model.notes.append(note)

    def forced_terms(self) -> Iterator[TraceStep]:
        """``forced`` terms start the model (Stargazer §7.4); an interaction's main effects enter before it."""
        for f in self.cfg.forced:
            parts = tuple(p.strip() for p in str(f).split(":"))
            unknown = [p for p in parts if p not in self.bases]
            if unknown or not 1 <= len(parts) <= 3 or len(set(parts)) != len(parts):
                raise FitError(f"forced term {f!r}: " + (f"unknown parameter(s) {unknown}" if unknown
                                                       else "give a parameter or an interaction of two or three "
                                                            "different parameters, e.g. simd:blk"))
            if len(parts) > 1:
                for p in parts:
                    if frozenset((p,)) not in self.term_sets:
                        yield self._force((p,), f)
            if frozenset(parts) not in self.term_sets:
                yield self._force(parts, f)

    def _force(self, parts: tuple[str, ...], given: str) -> TraceStep:
        scores, skipped, prepared = self.evaluate(self.candidates([parts]), [parts])
        name = term_name(parts)
        if name not in prepared:
            raise FitError(f"forced term {given!r} cannot be fitted: {skipped.get(name)}")
        self.accept(name, prepared)
        if len(parts) == 1 and parts[0] not in self.chosen:
            self.chosen.append(parts[0])
        return self.record("forced", self.metric(False), scores, skipped, name, True, None)

    def main_effects(self, remaining: list[str]) -> Iterator[TraceStep]:
        """Algorithm 1's outer loop: the best remaining parameter enters while it passes θ (the first one
        always: the single-term model with the highest R²), each followed by its pairs (:meth:`pairs`); when
        none passes, the look-ahead (:meth:`look_ahead`) may still bring one in with a pair."""
        first = not self.terms
        mains = self.candidates([(p,) for p in remaining])
        while remaining and not self.full():
            entered = yield from self._next_main(mains, remaining, first)
            if entered is None:
                break
            pi, partner = entered
            first = False
            remaining.remove(pi)
            mains.drop((pi,))
            partners = list(self.chosen)
            self.chosen.append(pi)
            if partner is not None:
                yield from self._force_pair(pi, partner)
                partners.remove(partner)
            yield from self.pairs(pi, partners)

    def _next_main(self, mains: Candidates, remaining: list[str],
                   first: bool) -> Generator[TraceStep, None, tuple[str, str | None] | None]:
        """One step of the outer loop; returns (the parameter that entered, its look-ahead partner or None), or
        None when the search stops."""
        cfg = self.cfg
        scores, skipped, prepared = self.evaluate(mains, [(p,) for p in remaining])
        if not scores:
            yield self.record("main", self.metric(first), scores, skipped, None, False, None)
            return None
        if first and cfg.criterion == "adjr2":
            # Algorithm 1: the first term is the single-term model with the highest R²
            scores = {k: r2(prepared[k][3], self.st.tss) for k in prepared}
        name = self.best(scores)
        ok, g = (True, None) if first else self.gain_ok(name, scores, cfg.theta)
        if ok:
            self.accept(name, prepared)
        yield self.record("initial" if first else "main", self.metric(first), scores, skipped, name, ok, g)
        if ok:
            return name, None
        # a parameter whose own columns add nothing (collinear with the model) cannot enter first
        alive = [p for p in remaining if label((p,)) in prepared]
        found = self.look_ahead(alive) if cfg.lookahead and self.chosen and alive and not self.full() else None
        shown = None if found is None else found[0]
        if found is None and cfg.count_pairs and alive and not self.full():
            found = self.joint(alive)
            if found is not None:  # Q enters first, so that P enters as the look-ahead's P with its pair P:Q
                q = found[1]
                shown = label((found[0], q, JOINT))
                _, _, prep = self.evaluate(mains, [(q,)])
                self.accept(q, prep)
                self.chosen.append(q)
                remaining.remove(q)
                mains.drop((q,))
        if found is None:
            return None
        name, partner, la_scores, la_skipped, g = found
        _, _, prep = self.evaluate(mains, [(name,)])
        self.accept(name, prep)
        yield self.record("lookahead", self.metric(False), la_scores, la_skipped, shown, True, g)
        return name, partner

    def pairs(self, pi: str, partners: list[str]) -> Iterator[TraceStep]:
        """Algorithm 1's inner loop after P_i entered: its interactions P_i:P_k with the parameters already
        chosen (named new:old, as Table 1's simd:#blk), each accepted pair followed by :meth:`three_way`."""
        yield from self.grow([(pi, p) for p in partners], "interaction", self.cfg.phi, self.three_way)

    def three_way(self, t: tuple[str, ...]) -> Iterator[TraceStep]:
        """After an accepted interaction: its doubly non-linear part (:meth:`nonlinear`), then its extensions by
        one more chosen parameter up to ``max_order`` (threshold φ3)."""
        yield from self.nonlinear(t)
        if self.cfg.max_order > len(t):
            yield from self.grow([t + (m,) for m in self.chosen if m not in t], f"interaction{len(t) + 1}",
                                 self.cfg.phi3, self.three_way)

    def nonlinear(self, t: tuple[str, ...]) -> Iterator[TraceStep]:
        """Adaptive form: the doubly non-linear products of an accepted restricted term, tested as one block by
        the term's own rule (a step or a saturation in both factors at once)."""
        if self.doubly(t):
            yield from self.grow([t + (DOUBLY,)], "nonlinear", self.cfg.phi if len(t) == 2 else self.cfg.phi3)

    def grow(self, cands: list[tuple[str, ...]], kind: str, limit: float,
             then: Callable[[tuple[str, ...]], Iterator[TraceStep]] | None = None) -> Iterator[TraceStep]:
        """Add the best candidate while it passes *limit*; after each accepted term, *then* (the three-way
        extensions of an accepted pair)."""
        cands = [t for t in cands if frozenset(t) not in self.term_sets]
        if not cands:
            return
        cset = self.candidates(cands)
        while cands and not self.full():
            scores, skipped, prepared = self.evaluate(cset, cands)
            if not scores:
                break
            name = self.choose(scores, prepared, lambda _: limit)
            ok, g = self.gain_ok(name, scores, limit)
            if ok:
                self.accept(name, prepared)
            yield self.record(kind, self.metric(False), scores, skipped, name, ok, g)
            if not ok:
                break
            t = prepared[name][0]
            cands.remove(t)
            cset.drop(t)
            if then is not None:
                yield from then(t)

    def _force_pair(self, pi: str, q: str) -> Iterator[TraceStep]:
        """The pair that carried a look-ahead parameter in; then its three-way extensions."""
        t = (pi, q)
        scores, skipped, prepared = self.evaluate(self.candidates([t]), [t])
        name = term_name(t)
        if name not in prepared or self.full():
            return
        self.accept(name, prepared)
        yield self.record("interaction", self.metric(False), scores, skipped, name, True, scores[name])
        yield from self.three_way(t)

    def look_ahead(self, rem: list[str]) -> tuple[str, str, dict, dict, float] | None:
        """When the best main effect fails θ: each remaining parameter P with its pair P:Q (Q chosen) as one
        block, scored by the same rule against θ. A parameter that acts only jointly with another (the block
        concurrency that matters only when the kernel is memory bound) has almost no main effect, and Algorithm
        1 would stop before ever trying it. Returns (P, Q, scores, skipped, gain) of the best block that passes,
        or None."""
        return self._best_block({label(k): k for k in [(p, q, WITH) for p in rem for q in self.chosen]})

    def joint(self, rem: list[str]) -> tuple[str, str, dict, dict, float] | None:
        """Step 12 (``count_pairs``), when neither a main effect nor the look-ahead passes θ: each pair of remaining
        count parameters (whole numbers ≥ 1 with at least three values) as one block — P, Q and P:Q — scored by the
        same rule against θ. A quantity that is a product of two counts (MGPUSim's run time follows the CUs in all,
        CUs per shader array × shader arrays: flat where the work-groups fill the GPU, slower below) may show in
        neither factor alone, so Algorithm 1, which offers only interactions of chosen parameters, never reaches
        it. Returns (P, Q, scores, skipped, gain) of the best block that passes, or None (no row is recorded, as
        for the look-ahead)."""
        counts = [p for p in rem if _is_count(self.X[p])]
        keys = {label(k): k for k in [(p, q, JOINT) for p, q in combinations(counts, 2)]}
        return self._best_block(keys) if keys else None

    def _best_block(self, keys: dict) -> tuple[str, str, dict, dict, float] | None:
        """The best of the candidate blocks *keys* (label → (P, Q, kind)) scored by the step's rule, as
        (P, Q, scores, skipped, gain) when it passes θ, else None."""
        scores, skipped = {}, {}
        for cset in self.chunked(list(keys.values())):
            sc, sk, _ = self.evaluate(cset, cset.terms)
            scores.update(sc)
            skipped.update(sk)
        if not scores:
            return None
        name = self.best(scores)
        ok, g = self.gain_ok(name, scores, self.cfg.theta)
        if not ok:
            return None
        return keys[name][0], keys[name][1], scores, skipped, g

    def revisit(self) -> Iterator[TraceStep]:
        """After Algorithm 1 stops: every pair of chosen parameters not in the model (and, with max_order 3,
        every triple containing an accepted pair) is a candidate, accepted by the same rule (φ for pairs, φ3 for
        triples), until none passes. Candidate blocks are kept residualised in chunks of at most CACHE_BYTES;
        beyond that they are rebuilt per step."""
        pool = _Pool(self)
        while pool.live and not self.full():
            scores, skipped, prepared = pool.evaluate()
            if not scores:
                return
            name = self.choose(scores, prepared, self._order_limit)
            t = prepared[name][0]
            ok, g = self.gain_ok(name, scores, self._order_limit(t))
            if ok:
                self.accept(name, prepared)
            yield self.record("revisit", self.metric(False), scores, skipped, name, ok, g)
            if not ok:
                return
            pool.taken(t)

    def _order_limit(self, key: tuple[str, ...]) -> float:
        return self.cfg.phi if len(plain(key)) == 2 else self.cfg.phi3

    def prune(self, n_forced: int) -> Iterator[TraceStep]:
        """Keep the prefix of the selection path with the lowest leave-one-out error (:func:`.scores.prune`)."""
        loo, row = prune(self._path(self.marks, n_forced), self.terms, self.columns, self.st.tss, self.n)
        if loo is not None:
            self.loo_error = loo
        if row is not None:
            scores, name, pruned, err, terms, r2_, adj = row
            self.step_no += 1
            yield self.emit(TraceStep(self.step_no, "prune", "loo_error", scores, {}, name, pruned, err, terms,
                                      r2_, adj))

    def _path(self, marks: list, floor: int) -> list:
        return loo_path(self.st, self.z, self.y, marks, floor, self.cfg.response_transform, self.cfg.bound_margin)

    # ---- candidates and their scores ---------------------------------------------------------------------------
    def block(self, term: tuple[str, ...]) -> tuple[np.ndarray, list]:
        """A candidate's columns on the training rows and the basis-column index tuples they multiply."""
        cols, bases = self.cols, self.bases
        if len(term) == 1:
            return cols[term[0]], [(j,) for j in range(cols[term[0]].shape[1])]
        if term[-1] == JOINT:  # two count parameters and their pair as one block (step 12)
            (a, a_lab), (b, b_lab), (ab, ab_lab) = self.block(term[:1]), self.block(term[1:2]), self.block(term[:2])
            return np.hstack([a, b, ab]), a_lab + b_lab + ab_lab
        if term[-1] == WITH:  # look-ahead: scored as one block, accepted as P, then P:Q
            (main, main_lab), (pair, pair_lab) = self.block(term[:1]), self.block(term[:2])
            return np.hstack([main, pair]), main_lab + pair_lab
        if term[-1] == DOUBLY:
            return interaction_block([cols[p] for p in term[:-1]], [bases[p] for p in term[:-1]], "doubly")
        return interaction_block([cols[p] for p in term], [bases[p] for p in term], self.form)

    def width(self, key: tuple[str, ...]) -> int:
        """Columns of a candidate block, at most (for chunking)."""
        if key[-1] == JOINT:
            return (self.bases[key[0]].width + 1) * (self.bases[key[1]].width + 1)
        if key[-1] == WITH:
            return self.bases[key[0]].width * (1 + self.bases[key[1]].width)
        return int(np.prod([self.bases[p].width for p in plain(key)]))

    def candidates(self, keys: list[tuple[str, ...]]) -> Candidates:
        """The residualised blocks of candidates *keys*, in one array."""
        built = [self.block(t) for t in keys]
        return Candidates(self.st, keys, [b for b, _ in built], [lab for _, lab in built])

    def chunked(self, keys: list[tuple[str, ...]]) -> Iterator[Candidates]:
        """Candidate sets of at most CACHE_BYTES of residualised columns each, built one at a time."""
        part: list[tuple[str, ...]] = []
        size = 0
        for key in keys:
            if part and size + self.width(key) > self.chunk_cols:
                yield self.candidates(part)
                part, size = [], 0
            part.append(key)
            size += self.width(key)
        if part:
            yield self.candidates(part)

    def doubly(self, t: tuple[str, ...]) -> bool:
        """Does the adaptive form offer the doubly non-linear remainder of interaction *t*?"""
        return (self.cfg.interactions == "adaptive" and len(t) > 1 and t[-1] != DOUBLY
                and sum(self.bases[p].width > len(self.bases[p].linear_columns) for p in t) >= 2
                and not self.many_values.intersection(t))

    def evaluate(self, cset: Candidates, cands: list[tuple[str, ...]]) -> tuple[dict, dict, Prepared]:
        """Every candidate's score by the criterion (and its model's R² and adjusted R², kept for the trace);
        candidates that add no independent column or leave no residual degree of freedom are skipped."""
        st, n = self.st, self.n
        cset.refresh()
        scores, skipped, prepared = {}, {}, {}
        for t in cands:
            name = label(t)
            res, norms = cset.block(t)
            f = st.factor(res, norms)
            if f is None:
                skipped[name] = "adds no independent column (collinear with the model)"
                continue
            rank = st.rank + f.cols.size
            if n - rank < 1:
                skipped[name] = f"needs {rank} coefficients but only {n} rows"
                continue
            rss = max(st.rss - f.gain, 0.0)
            scores[name] = criterion_score(self.cfg.criterion, rss, st, rank, n, f.cols.size)
            self.fits[name] = (r2(rss, st.tss), adj_r2(rss, st.tss, n, rank))
            prepared[name] = (t, (res, f), [cset.labels[t][i] for i in f.keep], rss, rank)
        return scores, skipped, prepared

    def metric(self, first: bool) -> str:
        """The trace's name for the scores of a step."""
        return {"adjr2": "r2" if first else "adj_r2", "aic": "aic", "bic": "bic", "ftest": "p_value"}[
            self.cfg.criterion]

    def best(self, scores: dict) -> str:
        """Highest adjusted R², or lowest AIC/BIC/p-value."""
        if self.cfg.criterion == "adjr2":
            return max(scores, key=lambda k: scores[k])
        return min(scores, key=lambda k: scores[k])

    def gain_ok(self, name: str, scores: dict, limit: float) -> tuple[bool, float]:
        """(does candidate *name* pass *limit*, its gain): the adjusted-R² gain over θ/φ (absolute or relative to
        the model's R²), the drop of AIC/BIC by more than the limit, or the F-test's p-value below it."""
        cfg, st = self.cfg, self.st
        s = scores[name]
        r2_, adj = self.current()
        if cfg.criterion == "adjr2":
            g = s - (r2_ if cfg.compare == "r2" else adj)
            if cfg.threshold_rule == "relative":
                return g >= limit * (r2_ if cfg.compare == "r2" else adj), g
            return g > limit, g
        if cfg.criterion in ("aic", "bic"):
            g = information(cfg.criterion, st.rss, self.n, st.rank) - s
            return g > limit, g
        return s < limit, s

    # ---- the one-row guard -------------------------------------------------------------------------------------
    def lone_gain(self, name: str, prepared: Prepared) -> tuple[int, float]:
        """(row, drop) of the training row that carries most of candidate *name*'s drop in the residual sum of
        squares: r_i² − (r_i − d_i)², d the candidate's change to the fitted values (the drops of all rows sum to
        the gain). Its basis is kept for :meth:`accept`."""
        _, (res, f), _, _, _ = prepared[name]
        if f.qb is None:
            f.qb = self.st.basis(res, f)
        r = self.st.resid
        d = f.qb @ (f.qb.T @ r)
        drop = r * r - (r - d) ** 2
        i = int(np.argmax(drop))
        return i, float(max(drop[i], 0.0))

    def choose(self, scores: dict, prepared: Prepared, limit_of: Callable[[tuple[str, ...]], float]) -> str:
        """The best candidate (:meth:`best`). With ``row_guard``, each front-runner is scored again without its
        largest single row's drop in RSS (*scores* is updated: the trace shows what was decided on) until the
        best holds its place; a term that passed its limit only by that row's drop is recorded in
        :attr:`held`. *limit_of* gives a candidate's threshold from its key."""
        if not self.cfg.row_guard:
            return self.best(scores)
        seen = set()
        while True:
            name = self.best(scores)
            if name in seen:
                return name
            seen.add(name)
            i, g = self.lone_gain(name, prepared)
            if g <= 0:
                return name
            _, _, _, rss, rank = prepared[name]
            limit = limit_of(prepared[name][0])
            passed = self.gain_ok(name, scores, limit)[0]
            scores[name] = criterion_score(self.cfg.criterion, rss + g, self.st, rank, self.n, rank - self.st.rank)
            key = frozenset(prepared[name][0])
            if passed and not self.gain_ok(name, scores, limit)[0] and key not in self.held:
                self.held[key] = (name, i, g / max(self.st.rss - rss, 1e-300))

    def _guard_note(self) -> str | None:
        """The model's note naming the terms the guard held back (and no later step took)."""
        held = {key: v for key, v in self.held.items() if key not in self.term_sets}
        if not held:
            return None
        what = "; ".join(f"{k} (training row {_rows(np.array([i]))} gives "
                         f"{'more than all (the other rows fit worse with it)' if share > 1 else f'{share:.0%}'} "
                         f"of its drop in RSS)"
                         for k, i, share in held.values())
        many = len(held) != 1
        return (f"{GUARD_NOTE}: {len(held)} interaction term{'s' if many else ''} {'pass' if many else 'passes'} the "
                f"test only with one training row's part of {'their' if many else 'its'} fit, so "
                f"{'they were' if many else 'it was'} held back (a term one row carries fits that row whatever its "
                f"value, and says nothing of the other designs it covers): {what}")

    # ---- the model and the trace -------------------------------------------------------------------------------
    def accept(self, name: str, prepared: Prepared) -> None:
        """Candidate *name* enters the model: its independent columns join Q."""
        t, (res, f), labels, _, _ = prepared[name]
        self.st.add(self.st.basis(res, f))
        self.terms.append(name)
        self.term_sets.add(frozenset(t))
        self.columns.extend((plain(t), lab) for lab in labels)
        self.marks.append((len(self.terms), len(self.columns), self.st.rank))

    def current(self) -> tuple[float, float]:
        """R² and adjusted R² of the current model."""
        return r2(self.st.rss, self.st.tss), adj_r2(self.st.rss, self.st.tss, self.n, self.st.rank)

    def full(self) -> bool:
        """Has the model reached ``max_terms``?"""
        return self.cfg.max_terms is not None and len(self.terms) >= self.cfg.max_terms

    def record(self, kind: str, metric: str, scores: dict, skipped: dict, chosen: str | None, accepted: bool,
               gain: float | None) -> TraceStep:
        """The next Table 1 row, with the current terms and fit."""
        self.step_no += 1
        r2_, adj = self.current()
        return self.emit(TraceStep(self.step_no, kind, metric, scores, skipped, chosen, accepted, gain,
                                   list(self.terms), r2_, adj))

    def emit(self, step: TraceStep) -> TraceStep:
        """Add each candidate's R² and adjusted R² to a row and keep it in the trace."""
        for k in step.candidates:
            if k in self.fits:
                step.r2s[k], step.adj_r2s[k] = self.fits[k]
        self.trace.append(step.to_dict())
        return step


class _Pool:
    """The revisit pass's candidates: pairs of chosen parameters not in the model, triples containing an accepted
    pair (``max_order=3``) and the doubly non-linear parts of accepted terms (adaptive form), offered again after
    every accepted term. Their residualised blocks are cached in chunks when they all fit in CACHE_BYTES."""

    def __init__(self, search: Search):
        self.s = search
        self.pool: dict[frozenset, tuple[str, ...]] = {}
        self.chunks: list[Candidates] = []
        every = [t for order in range(2, search.cfg.max_order + 1) for t in combinations(search.chosen, order)]
        self.cache = sum(int(np.prod([search.bases[p].width for p in t])) for t in every) <= search.chunk_cols
        self.offer()

    @property
    def live(self) -> bool:
        """Are candidates left?"""
        return bool(self.pool)

    def offer(self) -> None:
        """Add the candidates the model's current terms make possible (and not yet offered)."""
        s, sets = self.s, self.s.term_sets
        new = [t for t in combinations(s.chosen, 2) if frozenset(t) not in sets]
        for order in range(3, s.cfg.max_order + 1):
            new += [t for t in combinations(s.chosen, order) if frozenset(t) not in sets
                    and any(frozenset(pr) in sets for pr in combinations(t, order - 1))]
        new += [t + (DOUBLY,) for t, _ in s.columns if s.doubly(tuple(t))
                and frozenset(t) in sets and frozenset(tuple(t) + (DOUBLY,)) not in sets]
        new = list(dict.fromkeys(tuple(t) for t in new))
        fresh = [t for t in new if frozenset(t) not in self.pool]
        for t in fresh:
            self.pool[frozenset(t)] = t
        if fresh and self.cache:
            self.chunks.extend(s.chunked(fresh))

    def evaluate(self) -> tuple[dict, dict, Prepared]:
        """Every live candidate's score (:meth:`Search.evaluate`), chunk by chunk."""
        scores, skipped, prepared = {}, {}, {}
        for cset in (self.chunks if self.cache else self.s.chunked(list(self.pool.values()))):
            live = [t for t in cset.terms if frozenset(t) in self.pool]
            if live:
                sc, sk, pr = self.s.evaluate(cset, live)
                scores.update(sc), skipped.update(sk), prepared.update(pr)
        return scores, skipped, prepared

    def taken(self, t: tuple[str, ...]) -> None:
        """Candidate *t* entered the model: no longer offered; what it makes possible is."""
        del self.pool[frozenset(t)]
        self.offer()


def _is_count(col: pd.Series) -> bool:
    """A count parameter (step 12): numeric, every value a whole number ≥ 1, at least three distinct values."""
    if col.dtype.kind not in "iuf":
        return False
    v = col.to_numpy(dtype=float)
    return bool(np.all(np.isfinite(v)) and np.all(v >= 1) and np.all(v == np.round(v)) and np.unique(v).size >= 3)
