"""Stargazer's automated forward-stepwise spline regression (Stargazer §5.2, Algorithm 1).

The search, exactly as Algorithm 1:

1. For every parameter P_i, fit the single-term model; the one with the highest R² becomes M
   (with forced terms, M starts as those terms and this step is an ordinary step 2).
2. While parameters remain: augment M with each remaining parameter; take the one with the best
   score; accept it if score − R²(M) > θ, else stop. After accepting P_i, let R be the parameters
   already in M other than P_i; while R is not empty, augment M with each interaction P_i:P_k,
   P_k ∈ R; accept the best if score − R²(M) > φ (M is updated and P_k leaves R), else stop
   looking at interactions of P_i.

The score is the adjusted R² of the augmented model (``criterion="adjr2"``, the paper's). With
``compare="adj_r2"`` the gain is measured against the adjusted R² of M instead of its R² (the other
reading of the paper's text). Alternatives: ``"aic"``/``"bic"`` (accept when the criterion drops
by more than θ or φ) and ``"ftest"`` (accept when the partial F-test p-value of the added block is
below θ or φ). ``max_terms`` caps the number of terms; ``forced`` terms (e.g. Stargazer §7.4's
``["simd", "blk", "simd:blk"]``) start the model, and ``search=False`` fits just them.

Speed: the search never refits a candidate from scratch. It keeps an orthonormal basis Q of the
current model's columns; a candidate block B is orthogonalised against Q (twice, for stability),
its residual part is factorised with a column-pivoted QR, and the drop in the residual sum of
squares is the squared norm of the residual's projection on it. Candidate blocks that add no
independent column are skipped (recorded in the trace as degenerate), never a crash.

The fit is a generator (:meth:`StepwiseRegression.iter_fit`) yielding one :class:`TraceStep` per
row of Stargazer Table 1: every candidate's score, the chosen term, whether it was accepted, and
the current terms with their R² and adjusted R².
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.linalg
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin

from ..choices import CRITERIA, INTERACTION_FORMS, TRANSFORMS
from ..errors import GpudseError
from ..jsonutil import json_default
from .splines import PLACEMENTS, Basis, make_basis

MODEL_SCHEMA = "gpudse.model/1"
RANK_TOL = 1e-9


class FitError(GpudseError):
    """The data cannot be fitted (bad responses, unknown columns, too few rows …)."""


# ---- response transform -----------------------------------------------------------------------
def transform_response(y: np.ndarray, transform: str, column: str = "response") -> np.ndarray:
    if transform not in TRANSFORMS:
        raise FitError(f"unknown transform {transform!r}; choose {', '.join(TRANSFORMS)}")
    if transform == "log":
        bad = np.flatnonzero(~(y > 0))
        if bad.size:
            raise FitError(f"column {column!r}: the log transform needs positive values; rows {_rows(bad)} are "
                           f"zero or negative; use --transform sqrt or none, or fix those rows")
        return np.log(y)
    if transform == "sqrt":
        bad = np.flatnonzero(y < 0)
        if bad.size:
            raise FitError(f"column {column!r}: the sqrt transform needs non-negative values; rows {_rows(bad)} "
                           f"are negative")
        return np.sqrt(y)
    return y


def inverse_transform(z: np.ndarray, transform: str) -> np.ndarray:
    if transform == "log":
        with np.errstate(over="ignore"):  # a wild extrapolation is reported as inf, not a warning
            return np.exp(z)
    if transform == "sqrt":
        return np.square(z)
    return z


def _rows(idx: np.ndarray, limit: int = 8) -> str:
    """1-based data row numbers (the header is row 0 of a CSV, data rows count from 1)."""
    shown = ", ".join(str(int(i) + 1) for i in idx[:limit])
    return shown + (f" … ({idx.size} in all)" if idx.size > limit else "")


# ---- terms ------------------------------------------------------------------------------------
def term_name(params: Sequence[str]) -> str:
    return ":".join(params)


def interaction_block(a: np.ndarray, b: np.ndarray, ba: Basis, bb: Basis, form: str) -> tuple[np.ndarray, list]:
    """Columns of the interaction of two bases and the (i, j) pairs they multiply."""
    pairs = [(i, j) for i in range(a.shape[1]) for j in range(b.shape[1])
             if form == "full" or i in ba.linear_columns or j in bb.linear_columns]
    if not pairs:
        return np.zeros((a.shape[0], 0)), []
    cols = np.column_stack([a[:, i] * b[:, j] for i, j in pairs])
    return cols, pairs


# ---- trace ------------------------------------------------------------------------------------
@dataclass
class TraceStep:
    """One row of Stargazer Table 1."""

    step: int
    kind: str  # "initial", "main" or "interaction"
    metric: str  # what the candidate scores are: r2, adj_r2, aic, bic, p_value
    candidates: dict[str, float]
    skipped: dict[str, str]
    chosen: str | None
    accepted: bool
    gain: float | None
    terms: list[str]
    r2: float
    adj_r2: float

    def to_dict(self) -> dict:
        return {"step": self.step, "kind": self.kind, "metric": self.metric, "candidates": dict(self.candidates),
                "skipped": dict(self.skipped), "chosen": self.chosen, "accepted": self.accepted, "gain": self.gain,
                "terms": list(self.terms), "r2": self.r2, "adj_r2": self.adj_r2}


# ---- incremental least squares ---------------------------------------------------------------
class _OLSState:
    """Orthonormal basis of the current model's columns, residual and RSS."""

    def __init__(self, z: np.ndarray):
        n = z.size
        self.n = n
        self.q = np.ones((n, 1)) / math.sqrt(n)
        self.tss = float(np.sum((z - z.mean()) ** 2))
        self.resid = z - z.mean()
        self.rss = self.tss
        self.rank = 1  # intercept

    def orthogonalise(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Orthonormal columns spanning the part of *block* outside the current model, and which
        block columns were independent. Two Gram–Schmidt passes, then pivoted QR for the rank."""
        if block.shape[1] == 0:
            return np.zeros((self.n, 0)), np.zeros(0, dtype=int)
        norms = np.sqrt(np.einsum("ij,ij->j", block, block))
        b = block - self.q @ (self.q.T @ block)
        b -= self.q @ (self.q.T @ b)
        qb, rb, piv = scipy.linalg.qr(b, mode="economic", pivoting=True, check_finite=False)
        diag = np.abs(np.diag(rb))
        ref = np.maximum(norms[piv], 1e-300)
        keep = diag > RANK_TOL * ref
        # pivoted QR orders |diag| decreasingly, so the independent columns come first
        r = int(np.sum(np.cumprod(keep)))
        return qb[:, :r], np.sort(piv[:r])

    def gain(self, qb: np.ndarray) -> float:
        c = qb.T @ self.resid
        return float(c @ c)

    def add(self, qb: np.ndarray) -> None:
        c = qb.T @ self.resid
        self.resid = self.resid - qb @ c
        self.rss = max(float(self.resid @ self.resid), 0.0)
        self.q = np.hstack([self.q, qb])
        self.rank += qb.shape[1]


def _r2(rss: float, tss: float) -> float:
    return 1.0 - rss / tss if tss > 0 else 0.0


def _adj_r2(rss: float, tss: float, n: int, rank: int) -> float:
    dof = n - rank
    if dof <= 0 or tss <= 0:
        return float("nan")
    return 1.0 - (rss / dof) / (tss / (n - 1))


def _llf(rss: float, n: int) -> float:
    return -n / 2.0 * (math.log(2 * math.pi) + math.log(max(rss, 1e-300) / n) + 1.0)


# ---- the estimator ------------------------------------------------------------------------------
@dataclass(eq=False, repr=False)
class StepwiseRegression(RegressorMixin, BaseEstimator):
    """Stargazer Algorithm 1 as a scikit-learn style estimator (``fit``/``predict``/``get_params``).

    Parameters follow the papers' vocabulary: ``theta`` (θ) and ``phi`` (φ) thresholds, ``knots``
    (Harrell's k), ``knot_placement`` (``even``: Stargazer; ``quantile``: Lee & Brooks Table 1).
    """

    response: str | None = None
    params: Sequence[str] | None = None
    theta: float = 0.01
    phi: float = 0.01
    criterion: str = "adjr2"
    compare: str = "r2"
    knots: int | Mapping[str, int | Sequence[float]] = 4
    knot_placement: str = "even"
    norm: str = "harrell"
    interactions: str = "restricted"
    transform: str = "none"
    max_terms: int | None = None
    forced: Sequence[str] = ()
    search: bool = True
    categorical: Sequence[str] = ()

    # -- scikit-learn protocol (get_params/set_params/score come from BaseEstimator/RegressorMixin) --
    def fit(self, X: pd.DataFrame, y: Any = None, callback: Callable[[TraceStep], None] | None = None
            ) -> "StepwiseRegression":
        for step in self.iter_fit(X, y):
            if callback is not None:
                callback(step)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise FitError("the model is not fitted yet; call fit first")
        return self.model_.predict(X)

    # -- the search --
    def _validate(self) -> None:
        if self.criterion not in CRITERIA:
            raise FitError(f"unknown criterion {self.criterion!r}; choose {', '.join(CRITERIA)}")
        if self.compare not in ("r2", "adj_r2"):
            raise FitError(f"compare must be 'r2' (Algorithm 1) or 'adj_r2' (got {self.compare!r})")
        if self.interactions not in INTERACTION_FORMS:
            raise FitError(f"unknown interaction form {self.interactions!r}; choose full or restricted")
        if self.knot_placement not in PLACEMENTS:
            raise FitError(f"unknown knot placement {self.knot_placement!r}; choose even or quantile")
        for name, v in (("theta", self.theta), ("phi", self.phi)):
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise FitError(f"{name} must be a finite number (got {v!r})")
        if self.max_terms is not None and (not isinstance(self.max_terms, int) or self.max_terms < 1):
            raise FitError(f"max_terms must be a whole number of at least 1 (got {self.max_terms!r})")

    def _data(self, X: pd.DataFrame, y: Any) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
        if not isinstance(X, pd.DataFrame):
            X = pd.DataFrame(np.asarray(X), columns=[f"x{i}" for i in range(np.asarray(X).shape[1])])
        if y is None:
            if not self.response:
                raise FitError("say which column is the response (response=... or --response COL)")
            if self.response not in X.columns:
                hint = difflib.get_close_matches(self.response, list(map(str, X.columns)), n=1)
                raise FitError(f"response column {self.response!r} is not in the data"
                               + (f" (did you mean {hint[0]!r}?)" if hint else "")
                               + f"; columns: {', '.join(map(str, X.columns))}")
            yv = pd.to_numeric(X[self.response], errors="coerce").to_numpy(dtype=float)
            raw = X[self.response]
            X = X.drop(columns=[self.response])
        else:
            raw = pd.Series(np.asarray(y))
            yv = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        col = self.response or "response"
        bad = np.flatnonzero(~np.isfinite(yv))
        if bad.size:
            raise FitError(f"column {col!r}: rows {_rows(bad)} are missing, not numbers, NaN or infinite "
                           f"(e.g. {raw.iloc[int(bad[0])]!r}); fix or drop those rows")
        if params := self.params:
            missing = [p for p in params if p not in X.columns]
            if missing:
                raise FitError(f"unknown column(s) {', '.join(map(repr, missing))}; columns: "
                               f"{', '.join(map(str, X.columns))}")
            names = list(params)
        else:
            names = [str(c) for c in X.columns if c != self.response]
        if len(yv) != len(X):
            raise FitError(f"{len(X)} rows of parameters but {len(yv)} responses")
        for p in names:
            if X[p].isna().any():
                raise FitError(f"column {p!r}: rows {_rows(np.flatnonzero(X[p].isna().to_numpy()))} are empty")
        if len(yv) < 3:
            raise FitError(f"only {len(yv)} rows; a regression needs more rows than terms")
        const = [p for p in names if X[p].nunique() < 2]
        if const:
            raise FitError(f"column(s) {', '.join(map(repr, const))} are constant, so they cannot explain "
                           f"anything; leave them out (--params) or sample more widely")
        if len(yv) < 3:
            raise FitError(f"only {len(yv)} rows; a regression needs more rows than terms")
        return X, yv, names

    def iter_fit(self, X: pd.DataFrame, y: Any = None) -> Iterator[TraceStep]:
        """Run Algorithm 1, yielding one :class:`TraceStep` per Table 1 row; sets ``model_`` at the end."""
        self._validate()
        X, yraw, names = self._data(X, y)
        z = transform_response(yraw, self.transform, self.response or "response")
        n = z.size
        if isinstance(self.knots, Mapping):
            unknown = [k for k in self.knots if k != "__default__" and k not in names]
            if unknown:
                raise FitError(f"knots given for unknown parameter(s) {unknown}; parameters: {', '.join(names)}")
            default = self.knots.get("__default__", 4)
            knots = {p: self.knots.get(p, default) for p in names}
        else:
            knots = {p: self.knots for p in names}
        bases = {p: make_basis(p, X[p].to_numpy(), knots[p], self.knot_placement, self.norm,
                               categorical=(p in self.categorical) or None) for p in names}
        cols = {p: bases[p].evaluate(X[p].to_numpy()) for p in names}
        st = _OLSState(z)
        chosen: list[str] = []
        terms: list[str] = []
        columns: list[tuple[tuple[str, ...], tuple]] = []  # (params, pair or column index) per model column
        step_no = 0
        trace: list[dict] = []

        def emit(step: TraceStep) -> TraceStep:
            trace.append(step.to_dict())
            return step

        def block(term: tuple[str, ...]) -> tuple[np.ndarray, list]:
            if len(term) == 1:
                return cols[term[0]], [(j,) for j in range(cols[term[0]].shape[1])]
            a, b = term
            return interaction_block(cols[a], cols[b], bases[a], bases[b], self.interactions)

        def evaluate(cands: list[tuple[str, ...]]) -> tuple[dict, dict, dict]:
            scores, skipped, prepared = {}, {}, {}
            for t in cands:
                name = term_name(t)
                blk, labels = block(t)
                qb, keep = st.orthogonalise(blk)
                if qb.shape[1] == 0:
                    skipped[name] = "adds no independent column (collinear with the model)"
                    continue
                rank = st.rank + qb.shape[1]
                if n - rank < 1:
                    skipped[name] = f"needs {rank} coefficients but only {n} rows"
                    continue
                rss = max(st.rss - st.gain(qb), 0.0)
                scores[name] = self._score(rss, st, rank, n, qb.shape[1])
                prepared[name] = (t, qb, [labels[i] for i in keep], rss, rank)
            return scores, skipped, prepared

        def metric(first: bool) -> str:
            return {"adjr2": "r2" if first else "adj_r2", "aic": "aic", "bic": "bic", "ftest": "p_value"}[
                self.criterion]

        def best(scores: dict) -> str:
            """Highest adjusted R², or lowest AIC/BIC/p-value."""
            if self.criterion == "adjr2":
                return max(scores, key=lambda k: scores[k])
            return min(scores, key=lambda k: scores[k])

        def accept(name: str, prepared: dict) -> None:
            t, qb, labels, _, _ = prepared[name]
            st.add(qb)
            terms.append(name)
            columns.extend((t, lab) for lab in labels)

        def current() -> tuple[float, float]:
            return _r2(st.rss, st.tss), _adj_r2(st.rss, st.tss, n, st.rank)

        def gain_ok(name: str, scores: dict, limit: float) -> tuple[bool, float]:
            s = scores[name]
            r2, adj = current()
            if self.criterion == "adjr2":
                g = s - (r2 if self.compare == "r2" else adj)
                return g > limit, g
            if self.criterion in ("aic", "bic"):
                now = self._info(st.rss, n, st.rank)
                g = now - s
                return g > limit, g
            return s < limit, s

        def full() -> bool:
            return self.max_terms is not None and len(terms) >= self.max_terms

        # forced terms first
        for f in self.forced:
            parts = tuple(f.split(":"))
            unknown = [p for p in parts if p not in bases]
            if unknown or len(parts) > 2:
                raise FitError(f"forced term {f!r}: " + (f"unknown parameter(s) {unknown}" if unknown
                                                       else "only main effects and pairwise interactions"))
            scores, skipped, prepared = evaluate([parts])
            name = term_name(parts)
            if name not in prepared:
                raise FitError(f"forced term {f!r} cannot be fitted: {skipped.get(name)}")
            accept(name, prepared)
            for p in parts:
                if p not in chosen:
                    chosen.append(p)
            step_no += 1
            r2, adj = current()
            yield emit(TraceStep(step_no, "forced", metric(False), scores, skipped, name, True, None, list(terms), r2, adj))

        remaining = [p for p in names if p not in chosen]
        if self.search:
            first = not terms
            while remaining and not full():
                cands = [(p,) for p in remaining]
                scores, skipped, prepared = evaluate(cands)
                if not scores:
                    step_no += 1
                    r2, adj = current()
                    yield emit(TraceStep(step_no, "main", metric(first), scores, skipped, None, False, None,
                                    list(terms), r2, adj))
                    break
                if first and self.criterion == "adjr2":
                    # Algorithm 1: the first term is the single-term model with the highest R²
                    scores = {k: _r2(prepared[k][3], st.tss) for k in prepared}
                name = best(scores)
                if first:
                    ok, g = True, None
                else:
                    ok, g = gain_ok(name, scores, self.theta)
                if ok:
                    accept(name, prepared)
                step_no += 1
                r2, adj = current()
                yield emit(TraceStep(step_no, "initial" if first else "main", metric(first), scores, skipped, name, ok,
                                g, list(terms), r2, adj))
                if not ok:
                    break
                first = False
                pi = name
                remaining.remove(pi)
                partners = [p for p in chosen]
                chosen.append(pi)
                while partners and not full():
                    cands = [(pi, p) for p in partners]  # named new:old, as Table 1's simd:#blk
                    scores, skipped, prepared = evaluate(cands)
                    if not scores:
                        break
                    iname = best(scores)
                    ok, g = gain_ok(iname, scores, self.phi)
                    if ok:
                        accept(iname, prepared)
                    step_no += 1
                    r2, adj = current()
                    yield emit(TraceStep(step_no, "interaction", metric(False), scores, skipped, iname, ok, g,
                                    list(terms), r2, adj))
                    if not ok:
                        break
                    partners.remove(prepared[iname][0][1])
        self.model_ = self._finish(cols, z, bases, columns, terms, st, names)
        self.model_.trace = trace

    def _info(self, rss: float, n: int, rank: int) -> float:
        pen = 2.0 if self.criterion == "aic" else math.log(n)
        return -2.0 * _llf(rss, n) + pen * rank

    def _score(self, rss: float, st: _OLSState, rank: int, n: int, added: int) -> float:
        if self.criterion == "adjr2":
            return _adj_r2(rss, st.tss, n, rank)
        if self.criterion in ("aic", "bic"):
            return self._info(rss, n, rank)
        dof = n - rank
        if rss <= 0:
            return 0.0
        f = ((st.rss - rss) / added) / (rss / dof)
        return float(stats.f.sf(f, added, dof))

    def _finish(self, cols, z, bases, columns, terms, st, names) -> "StepwiseModel":
        """Coefficients of the selected columns by least squares on the cached basis blocks."""
        design = [np.ones(z.size)]
        labels = ["Intercept"]
        for t, lab in columns:
            if len(t) == 1:
                design.append(cols[t[0]][:, lab[0]])
                labels.append(bases[t[0]].column_names[lab[0]])
            else:
                a, b = t
                i, j = lab
                design.append(cols[a][:, i] * cols[b][:, j])
                labels.append(f"{bases[a].column_names[i]} * {bases[b].column_names[j]}")
        A = np.column_stack(design)
        coef, *_ = np.linalg.lstsq(A, z, rcond=None)
        fitted = A @ coef
        rss = float(np.sum((z - fitted) ** 2))
        used = sorted({p for t, _ in columns for p in t}, key=names.index)
        return StepwiseModel(
            response=self.response or "response", transform=self.transform, interactions=self.interactions,
            bases={p: bases[p] for p in used}, columns=[(list(t), list(lab)) for t, lab in columns],
            column_labels=labels, coefficients=coef.tolist(), terms=list(terms), n=int(z.size),
            r2=_r2(rss, st.tss), adj_r2=_adj_r2(rss, st.tss, z.size, A.shape[1]),
            settings={k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.get_params().items()
                      if k not in ("params",)},
        )


# ---- the fitted model ------------------------------------------------------------------------------
@dataclass
class StepwiseModel:
    """A fitted spline model: bases, model columns, coefficients; predicts DataFrames, saves as JSON."""

    response: str
    transform: str
    interactions: str
    bases: dict[str, Basis]
    columns: list[tuple[list[str], list[int]]]  # per non-intercept column: (params, basis column indices)
    column_labels: list[str]
    coefficients: list[float]
    terms: list[str]
    n: int
    r2: float
    adj_r2: float
    settings: dict = field(default_factory=dict)
    trace: list[dict] = field(default_factory=list)

    @property
    def parameters(self) -> list[str]:
        return list(self.bases)

    def linear_predictor(self, X: pd.DataFrame) -> np.ndarray:
        """Prediction on the transformed scale. Each term is tabulated over the distinct values (or
        value pairs) of its parameters and gathered, so no n × p design matrix is built."""
        missing = [p for p in self.bases if p not in X.columns]
        if missing:
            raise FitError(f"the points lack column(s) {', '.join(map(repr, missing))} that the model uses")
        coef = np.asarray(self.coefficients)
        out = np.full(len(X), coef[0])
        codes, uniq_basis = {}, {}
        for p, b in self.bases.items():
            codes[p], uniq = _codes(X[p], p, numeric=b.kind != "categorical")
            uniq_basis[p] = b.evaluate(uniq)
        groups: dict[tuple[str, ...], list[int]] = {}
        for k, (t, _) in enumerate(self.columns):
            groups.setdefault(tuple(t), []).append(k)
        for t, ks in groups.items():
            if len(t) == 1:
                ub = uniq_basis[t[0]]
                table = sum(coef[k + 1] * ub[:, self.columns[k][1][0]] for k in ks)
                out += np.asarray(table)[codes[t[0]]]
            else:
                a, b = t
                ua, ub = uniq_basis[a], uniq_basis[b]
                table = np.zeros((ua.shape[0], ub.shape[0]))
                for k in ks:
                    i, j = self.columns[k][1]
                    table += coef[k + 1] * np.outer(ua[:, i], ub[:, j])
                out += table.ravel()[codes[a] * table.shape[1] + codes[b]]
        return out

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted response on the original scale (the transform is undone)."""
        return inverse_transform(self.linear_predictor(X), self.transform)

    def contributions(self) -> list[tuple[str, float]]:
        """R² gained by each accepted term in selection order (the data of Stargazer Fig. 3)."""
        out, last = [], 0.0
        for step in self.trace:
            if step.get("accepted") and step.get("chosen"):
                out.append((step["chosen"], step["r2"] - last))
                last = step["r2"]
        return out

    def equation(self, digits: int = 6) -> str:
        """The fitted equation with each spline written as truncated cubics, as ``rms::Function`` does."""
        coef = self.coefficients
        lhs = {"none": self.response, "log": f"log({self.response})", "sqrt": f"sqrt({self.response})"}[self.transform]
        parts = [f"{coef[0]:.{digits}g}"]

        def spline_text(b: Basis, col: int) -> str:
            if b.kind != "rcs" or col == 0:
                return b.column_names[col] if b.kind != "categorical" else f"[{b.column_names[col]}]"
            t = b.knots
            k = len(t)
            j = col - 1
            s = (t[-1] - t[0]) ** 2 if b.norm == "harrell" else 1.0
            a1 = 1 / s
            a2 = -(t[-1] - t[j]) / (t[-1] - t[-2]) / s
            a3 = (t[-2] - t[j]) / (t[-1] - t[-2]) / s
            return (f"({a1:.{digits}g}*pmax({b.name}-{t[j]:g},0)^3 {a2:+.{digits}g}*pmax({b.name}-{t[k - 2]:g},0)^3 "
                    f"{a3:+.{digits}g}*pmax({b.name}-{t[k - 1]:g},0)^3)")

        for k, (t, lab) in enumerate(self.columns):
            c = coef[k + 1]
            if len(t) == 1:
                term = spline_text(self.bases[t[0]], lab[0])
            else:
                term = f"{spline_text(self.bases[t[0]], lab[0])}*{spline_text(self.bases[t[1]], lab[1])}"
            parts.append(f"{'-' if c < 0 else '+'} {abs(c):.{digits}g}*{term}")
        return f"{lhs} = " + " ".join(parts)

    # -- JSON --
    def to_dict(self) -> dict:
        return {
            "schema": MODEL_SCHEMA, "response": self.response, "transform": self.transform,
            "interactions": self.interactions, "bases": [b.to_dict() for b in self.bases.values()],
            "terms": self.terms, "columns": [{"params": t, "index": lab} for t, lab in self.columns],
            "column_labels": self.column_labels, "coefficients": [float(c) for c in self.coefficients],
            "n": self.n, "r2": self.r2, "adj_r2": self.adj_r2, "settings": self.settings, "trace": self.trace,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, default=json_default)

    def save(self, path: Any) -> None:
        from pathlib import Path

        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_dict(cls, d: Any, source: str = "model") -> "StepwiseModel":
        """Validate and load; plain data only (JSON never executes anything)."""
        if not isinstance(d, dict):
            raise FitError(f"{source}: not a gpudse model (expected a JSON object)")
        if d.get("schema") != MODEL_SCHEMA:
            raise FitError(f"{source}: schema {d.get('schema')!r} is not {MODEL_SCHEMA!r}; refit the model "
                           f"with this version of gpudse")
        try:
            try:
                bases = {b["name"]: Basis.from_dict(b) for b in d["bases"]}
            except FitError:
                raise
            except GpudseError as e:
                raise FitError(f"{source}: {e}") from None
            columns = [(list(map(str, c["params"])), [int(i) for i in c["index"]]) for c in d["columns"]]
            coef = [float(c) for c in d["coefficients"]]
            transform = d["transform"]
            if transform not in TRANSFORMS or d["interactions"] not in INTERACTION_FORMS:
                raise FitError(f"{source}: unknown transform or interaction form")
            if len(coef) != len(columns) + 1 or not all(math.isfinite(c) for c in coef):
                raise FitError(f"{source}: {len(coef)} coefficients for {len(columns)} columns (+ intercept)")
            for t, lab in columns:
                if len(t) not in (1, 2) or len(lab) != len(t) or any(p not in bases for p in t):
                    raise FitError(f"{source}: column {t}/{lab} refers to unknown parameters")
                for p, i in zip(t, lab):
                    if not 0 <= i < bases[p].width:
                        raise FitError(f"{source}: basis column {i} of {p!r} does not exist")
            return cls(response=str(d["response"]), transform=transform, interactions=d["interactions"],
                       bases=bases, columns=columns, column_labels=list(map(str, d.get("column_labels", []))),
                       coefficients=coef, terms=list(map(str, d["terms"])), n=int(d["n"]), r2=float(d["r2"]),
                       adj_r2=float(d["adj_r2"]) if d.get("adj_r2") is not None else float("nan"),
                       settings=dict(d.get("settings", {})), trace=list(d.get("trace", [])))
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, GpudseError):
                raise
            raise FitError(f"{source}: malformed model file ({type(e).__name__}: {e})") from None

    @classmethod
    def load(cls, path: Any) -> "StepwiseModel":
        from pathlib import Path

        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FitError(f"{p}: no such model file") from None
        except UnicodeDecodeError:
            raise FitError(f"{p}: not a JSON model file") from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise FitError(f"{p}:{e.lineno}: malformed JSON ({e.msg})") from None
        return cls.from_dict(d, source=str(p))


def _codes(col: pd.Series, name: str, numeric: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a column and the distinct values they index. Integer-valued numeric columns
    with a small range are coded by offset from their minimum (no hashing); others are factorised."""
    if numeric:
        if col.dtype.kind not in "iuf":
            conv = pd.to_numeric(col, errors="coerce")
            if conv.isna().any():
                bad = np.flatnonzero(conv.isna().to_numpy())
                raise FitError(f"column {name!r}: rows {_rows(bad)} are not numbers (e.g. {col.iloc[int(bad[0])]!r})")
            col = conv
        x = col.to_numpy()
        if x.dtype.kind == "f" and not np.isfinite(x).all():
            bad = np.flatnonzero(~np.isfinite(x))
            raise FitError(f"column {name!r}: rows {_rows(bad)} are missing or infinite")
        if x.size and x.dtype.kind in "iu":
            lo, hi = int(x.min()), int(x.max())
            if hi - lo <= 4 * x.size + 1024:
                return (x - lo).astype(np.intp, copy=False), np.arange(lo, hi + 1, dtype=float)
    c, u = pd.factorize(col, sort=False)
    if (c < 0).any():
        bad = np.flatnonzero(c < 0)
        raise FitError(f"column {name!r}: rows {_rows(bad)} are empty")
    return c, np.asarray(u)


def fit_stepwise(data: pd.DataFrame, response: str, callback: Callable[[TraceStep], None] | None = None,
                 **kw: Any) -> StepwiseModel:
    """Fit Algorithm 1 on a results table; returns the model (its ``trace`` holds every step)."""
    return StepwiseRegression(response=response, **kw).fit(data, callback=callback).model_
