"""Stargazer 1.0: the authors' released implementation of Algorithm 1 (Stargazer §5.2–5.4), exactly.

This is the ``paper`` model ("Stargazer as written"): the same terms in the same order, the same
coefficients and predictions as the released R implementation, checked against R's ``splines::ns``
and ``lm`` (tests/fixtures/r/stargazer_reference.R). What it does:

* The response is modelled as given (``transform`` ``none``); every other column is a candidate; a
  column with fewer than three distinct values is left out, with a note.
* Each parameter is a natural cubic spline, R's ``ns`` without intercept (:func:`.splines.ns_basis`)
  on Stargazer 1.0's knots (:func:`.splines.reference_knots`). An interaction a:b is every product of
  a basis column of a with one of b (a's column varying fastest, as R's ``model.matrix``); a:b is
  named new:old, the parameter accepted last first (Table 1's ``simd:#blk``).
* First step: the single-parameter model with the highest R² (ties: the first column). Then, over
  and over: among the unused parameters the addition with the highest adjusted R²; it is accepted
  when its adjusted R² minus the current model's (plain) R² is at least θ × that R² (the threshold
  rule ``relative``, the released code and Fig. 5, θ = 0) or at least θ (``absolute``, the paper's
  text, θ = 0.01); the current R² becomes the new model's. After accepting P, the interactions P:Q
  with every parameter Q accepted before P are tried: the best by adjusted R² is added while its
  adjusted R² minus the current R² passes φ by the same rule, each Q at most once. The search ends
  when no parameter is left or the best fails.
* Every fit is ordinary least squares as R's ``lm``: the intercept and the terms' columns in model
  order; a column whose part orthogonal to the columns before it is below 1e-7 of its own norm is
  aliased and dropped (LINPACK ``dqrdc2``'s limited pivoting). R² = MSS / (MSS + RSS) and adjusted
  R² = 1 − (1 − R²)(n − 1)/(n − rank), as ``summary.lm``; a candidate whose adjusted R² is undefined
  (no residual degree of freedom) is skipped.

Forced terms (Stargazer §7.4) enter first, main effects before an interaction; the search then
goes on from them as from an accepted model. ``max_terms`` stops it early. The steps are
:class:`.trace.TraceStep` rows, each candidate with its R² and adjusted R² (Table 1).
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..choices import THRESHOLD_RULES
from .fitted import FitError, StepwiseModel, ols_noise, term_name, transform_response
from .splines import Basis, reference_knots
from .support import Support
from .trace import TraceStep

LM_TOL = 1e-7  # R's lm.fit: a column below this share of its norm once the columns before it are removed is aliased
REFERENCE_TERMS = 2  # Stargazer 1.0 tries pairs of parameters, no higher interactions


def threshold(rule: str, limit: float, r2: float) -> float:
    """The least gain (adjusted R² of the augmented model − R² of the current one) that is accepted."""
    return limit * r2 if rule == "relative" else limit


def interaction_columns(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Every product of a column of *a* with one of *b*, *a*'s index varying fastest (R's a:b)."""
    idx = [(i, j) for j in range(b.shape[1]) for i in range(a.shape[1])]
    cols = np.empty((a.shape[0], len(idx)))
    for c, (i, j) in enumerate(idx):
        cols[:, c] = a[:, i] * b[:, j]
    return cols, idx


class _LeastSquares:
    """The current model's columns as an orthonormal basis built in model order (Gram–Schmidt, twice),
    deciding aliased columns as R's ``lm`` does."""

    def __init__(self, z: np.ndarray):
        self.z = z
        self.n = z.size
        self.q = np.full((self.n, 1), 1.0 / math.sqrt(self.n))  # the intercept
        self.fitted = np.full(self.n, z.mean())

    def extend(self, block: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """Orthonormal columns that *block* adds after the model's, and which of its columns are kept."""
        w = block.shape[1]
        res = block - self.q @ (self.q.T @ block)
        res -= self.q @ (self.q.T @ res)
        new = np.empty((self.n, w))
        keep: list[int] = []
        for j in range(w):
            norm = float(np.linalg.norm(block[:, j]))
            v = res[:, j].copy()
            if keep:
                qn = new[:, :len(keep)]
                v -= qn @ (qn.T @ v)
                v -= qn @ (qn.T @ v)
            r = float(np.linalg.norm(v))
            if norm == 0.0 or r < LM_TOL * norm:
                continue
            new[:, len(keep)] = v / r
            keep.append(j)
        return new[:, :len(keep)], keep

    def stats(self, qn: np.ndarray) -> tuple[float, float | None, np.ndarray]:
        """(R², adjusted R² or None when undefined, fitted values) of the model with columns *qn* added."""
        fitted = self.fitted + qn @ (qn.T @ self.z) if qn.shape[1] else self.fitted
        rank = self.q.shape[1] + qn.shape[1]
        return r2_stats(self.z, fitted, rank)

    def add(self, qn: np.ndarray, fitted: np.ndarray) -> None:
        self.q = np.hstack([self.q, qn])
        self.fitted = fitted

    @property
    def rank(self) -> int:
        return self.q.shape[1]


def r2_stats(z: np.ndarray, fitted: np.ndarray, rank: int) -> tuple[float, float | None, np.ndarray]:
    """R² and adjusted R² as R's ``summary.lm`` (model with intercept); adjusted None when undefined."""
    n = z.size
    rss = float(np.sum((z - fitted) ** 2))
    mss = float(np.sum((fitted - fitted.mean()) ** 2))
    r2 = mss / (mss + rss) if mss + rss > 0 else 0.0
    rdf = n - rank
    adj = 1.0 - (1.0 - r2) * ((n - 1) / rdf) if rdf > 0 else None
    return r2, adj, fitted


class ReferenceSearch:
    """Stargazer 1.0 on a validated table: :meth:`steps` yields the trace, then ``model`` is set."""

    def __init__(self, X: pd.DataFrame, y: np.ndarray, names: Sequence[str], response: str, *, theta: float = 0.0,
                 phi: float = 0.0, rule: str = "relative", transform: str = "none", forced: Sequence[str] = (),
                 search: bool = True, max_terms: int | None = None, bound_margin: float | None = None,
                 unseen: str = "model", settings: dict | None = None):
        if rule not in THRESHOLD_RULES:
            raise FitError(f"unknown threshold rule {rule!r}; choose {' or '.join(THRESHOLD_RULES)}")
        if transform not in ("none", "log", "sqrt"):
            raise FitError(f"Stargazer 1.0 models the response as given: transform none, log or sqrt "
                           f"(got {transform!r})")
        self.X, self.y, self.response = X, y, response
        self.theta, self.phi, self.rule, self.transform = float(theta), float(phi), rule, transform
        self.forced, self.search, self.max_terms = list(forced), search, max_terms
        self.bound_margin, self.unseen, self.settings = bound_margin, unseen, dict(settings or {})
        self.notes: list[str] = []
        self.bases: dict[str, Basis] = {}
        self.cols: dict[str, np.ndarray] = {}
        for p in names:
            x = pd.to_numeric(X[p], errors="coerce").to_numpy(dtype=float)
            bad = np.flatnonzero(~np.isfinite(x))
            if bad.size:
                raise FitError(f"column {p!r}: Stargazer 1.0 models numbers only (row {int(bad[0]) + 1} is "
                               f"{X[p].iloc[int(bad[0])]!r}); leave the column out (--params) or fix it")
            placed = reference_knots(x)
            if placed is None:
                k = np.unique(x).size
                self.notes.append(f"{p}: left out, {k} distinct value{'s' if k != 1 else ''} (Stargazer 1.0 models "
                                  f"parameters with at least 3)")
                continue
            interior, spacing = placed
            if spacing.startswith("even ("):
                self.notes.append(f"{p}: knots evenly spaced, {spacing[6:-1]}")
            lo, hi = float(x.min()), float(x.max())
            self.bases[p] = Basis(p, "ns", knots=[lo, *map(float, interior), hi], lo=lo, hi=hi)
            self.cols[p] = self.bases[p].evaluate(x)
        if not self.bases:
            raise FitError("no parameter column has 3 or more distinct values, so Stargazer 1.0 has nothing to "
                           "model; sample more widely or use --model stepwise")
        self.names = [p for p in names if p in self.bases]
        self.z = transform_response(y, transform, response)
        self.model: StepwiseModel | None = None

    # -- the search --
    def steps(self) -> Iterator[TraceStep]:
        ls = _LeastSquares(self.z)
        terms: list[str] = []
        columns: list[tuple[tuple[str, ...], tuple[int, ...]]] = []
        chosen: list[str] = []
        trace: list[dict] = []
        state = {"r2": 0.0, "adj": float("nan"), "step": 0}

        def block(t: tuple[str, ...]) -> tuple[np.ndarray, list[tuple[int, ...]]]:
            if len(t) == 1:
                return self.cols[t[0]], [(j,) for j in range(self.cols[t[0]].shape[1])]
            return interaction_columns(self.cols[t[0]], self.cols[t[1]])

        def evaluate(cands: list[tuple[str, ...]]) -> tuple[dict, dict, dict]:
            fits, skipped, prepared = {}, {}, {}
            for t in cands:
                name = term_name(t)
                cols, labels = block(t)
                qn, keep = ls.extend(cols)
                r2, adj, fitted = ls.stats(qn)
                if adj is None:
                    skipped[name] = f"adjusted R² undefined: {ls.rank + len(keep)} coefficients on {ls.n} rows"
                    continue
                fits[name] = {"r2": r2, "adj_r2": adj}
                prepared[name] = (t, qn, [labels[k] for k in keep], fitted, r2, adj)
            return fits, skipped, prepared

        def accept(name: str, prepared: dict) -> None:
            t, qn, labels, fitted, r2, adj = prepared[name]
            ls.add(qn, fitted)
            terms.append(name)
            columns.extend((t, lab) for lab in labels)
            state["r2"], state["adj"] = r2, adj

        def emit(kind: str, metric: str, fits: dict, skipped: dict, chosen_: str | None, ok: bool,
                 gain: float | None) -> TraceStep:
            state["step"] += 1
            scores = {k: v[metric] for k, v in fits.items()}
            step = TraceStep(state["step"], kind, metric, scores, skipped, chosen_, ok, gain, list(terms), state["r2"],
                             state["adj"], {k: v["r2"] for k, v in fits.items()},
                             {k: v["adj_r2"] for k, v in fits.items()})
            trace.append(step.to_dict())
            return step

        def full() -> bool:
            return self.max_terms is not None and len(terms) >= self.max_terms

        def grow(cands: list[tuple[str, ...]], kind: str, limit: float) -> Iterator[tuple[TraceStep, str | None]]:
            """One step: the best candidate by adjusted R², accepted if it passes *limit* by the rule."""
            fits, skipped, prepared = evaluate(cands)
            if not fits:
                yield emit(kind, "adj_r2", fits, skipped, None, False, None), None
                return
            name = max(fits, key=lambda k: fits[k]["adj_r2"])
            gain = fits[name]["adj_r2"] - state["r2"]
            ok = gain >= threshold(self.rule, limit, state["r2"])
            if ok:
                accept(name, prepared)
            yield emit(kind, "adj_r2", fits, skipped, name, ok, gain), (prepared[name][0] if ok else None)

        for f in self.forced:
            parts = tuple(p.strip() for p in str(f).split(":"))
            unknown = [p for p in parts if p not in self.bases]
            if unknown or not 1 <= len(parts) <= REFERENCE_TERMS or len(set(parts)) != len(parts):
                raise FitError(f"forced term {f!r}: " + (
                    f"{', '.join(map(repr, unknown))} is not a modelled parameter (modelled: {', '.join(self.names)})"
                    if unknown else "give a parameter or a pair, e.g. simd:blk (Stargazer 1.0 has pairs only)"))
            for t in [(p,) for p in parts if p not in chosen] + ([parts] if len(parts) == 2 else []):
                if term_name(t) in terms or (len(t) == 2 and term_name(t[::-1]) in terms):
                    continue
                fits, skipped, prepared = evaluate([t])
                name = term_name(t)
                if name not in prepared:
                    raise FitError(f"forced term {f!r} cannot be fitted: {skipped[name]}")
                accept(name, prepared)
                if len(t) == 1:
                    chosen.append(t[0])
                yield emit("forced", "adj_r2", fits, skipped, name, True, None)

        remaining = [p for p in self.names if p not in chosen]
        if self.search and remaining and not full() and not chosen:
            fits, skipped, prepared = evaluate([(p,) for p in remaining])
            if not fits:
                yield emit("initial", "r2", fits, skipped, None, False, None)
                remaining = []
            else:
                name = max(fits, key=lambda k: fits[k]["r2"])  # the first of equals
                accept(name, prepared)
                yield emit("initial", "r2", fits, skipped, name, True, None)
                chosen.append(name)
                remaining.remove(name)
        while self.search and remaining and not full():
            accepted = None
            for step, accepted in grow([(p,) for p in remaining], "main", self.theta):
                yield step
            if accepted is None:
                break
            pi = accepted[0]
            remaining.remove(pi)
            partners = list(chosen)
            chosen.append(pi)
            while partners and not full():
                done = None
                for step, done in grow([(pi, q) for q in partners], "interaction", self.phi):
                    yield step
                if done is None:
                    break
                partners.remove(done[1])
        self.model = self._finish(terms, columns, trace)

    def _finish(self, terms: list[str], columns: list, trace: list[dict]) -> StepwiseModel:
        """Coefficients of the kept columns by least squares (the intercept first)."""
        n = self.z.size
        A = np.empty((n, len(columns) + 1))
        A[:, 0] = 1.0
        labels = ["Intercept"]
        for c, (t, lab) in enumerate(columns):
            v = self.cols[t[0]][:, lab[0]].copy()
            for p, i in zip(t[1:], lab[1:]):
                v *= self.cols[p][:, i]
            A[:, c + 1] = v
            labels.append(":".join(self.bases[p].column_names[i] for p, i in zip(t, lab)))
        coef, *_ = np.linalg.lstsq(A, self.z, rcond=None)
        fitted = A @ coef
        r2, adj, _ = r2_stats(self.z, fitted, A.shape[1])
        used = [p for p in self.names if any(p in t for t, _ in columns)]
        bases = {p: self.bases[p] for p in used}
        inter = list(dict.fromkeys(tuple(t) for t, _ in columns if len(t) > 1))
        model = StepwiseModel(
            response=self.response, transform=self.transform, interactions="full", bases=bases,
            columns=[(list(t), list(lab)) for t, lab in columns], column_labels=labels,
            coefficients=coef.tolist(), terms=list(terms), n=int(n), r2=r2,
            adj_r2=adj if adj is not None else float("nan"), settings=self.settings,
            support=Support.build(self.X, bases, inter), z_range=(float(self.z.min()), float(self.z.max())),
            bound_margin=None if self.bound_margin is None else float(self.bound_margin), notes=list(self.notes),
            unseen=self.unseen, noise=ols_noise(A, float(np.sum((self.z - fitted) ** 2))))
        model.trace = trace
        return model

