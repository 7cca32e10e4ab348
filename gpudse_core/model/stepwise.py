"""Stargazer's automated forward-stepwise spline regression (Stargazer §5.2, Algorithm 1).

The search, exactly as Algorithm 1:

1. For every parameter P_i, fit the single-term model; the one with the highest R² becomes M
   (with forced terms, M starts as those terms and this step is an ordinary step 2).
2. While parameters remain: augment M with each remaining parameter; take the one with the best
   score; accept it if score − R²(M) > θ, else stop. After accepting P_i, let R be the parameters
   already in M other than P_i; while R is not empty, augment M with each interaction P_i:P_k,
   P_k ∈ R; accept the best if score − R²(M) > φ (M is updated and P_k leaves R), else stop
   looking at interactions of P_i.
3. Optional (``max_order=3``, model accuracy): after each accepted pair P_i:P_k, its extensions
   P_i:P_k:P_m with every other chosen P_m are candidates, accepted by the same rule with their
   own threshold ``phi3`` until none passes. Stargazer found three-way terms unneeded on GPGPU-Sim
   (§5.2); the built-in simulator's matMul depends on blk:simd:smp.

The robust default adds (each measured in README "Regression choices", each off in
:data:`PAPER_SETTINGS`):

4. ``revisit``: when Algorithm 1 stops, every pair of chosen parameters not in M (and every triple
   containing an accepted pair) is offered again, by the same rules, until none passes.
5. ``lookahead``: when the best main effect fails θ, each remaining P with each pair P:Q (Q
   chosen) is scored as one block against θ; the best that passes enters as P, then P:Q. A
   parameter acting only jointly (no main effect) no longer ends the search.
6. ``interactions="adaptive"``: interaction terms are restricted, and after each accepted term
   (and in the revisit pass) its doubly non-linear remainder, ``a:b (full)``, is a candidate by the
   term's own rule: a step in two parameters at once needs it.
7. ``prune``: the prefix of the selection path with the lowest leave-one-out error is kept
   (:meth:`StepwiseRegression._prune`); the F-test asks whether a term is real, this whether the
   rows estimate it well enough to predict better with it.
8. ``response_transform="auto"``: steps 1–7 once per transform (log, sqrt, none), keeping the one
   with the lowest leave-one-out error on the response scale (:meth:`StepwiseRegression._auto`).
9. ``robust="huber"``: steps 1–7 rerun on Huber pseudo-observations of the previous fit (Huber,
   *Robust Statistics*, 1981, §7.8: z* = f + ψ(z − f), ψ clipping at ``ROBUST_K`` times the MAD
   scale of the residuals), ``ROBUST_ROUNDS`` times at the chosen transform, keeping the model
   (least squares' or a round's) with the lowest leave-one-out error
   (:meth:`StepwiseRegression._robust`). A few very slow rows (a tuning space's pathological
   cells) no longer decide which terms enter and what they are worth.
10. ``cells``: indicator columns for combinations of two or three parameter levels (a tuning
   space's corners that no smooth curve follows), chosen by a Bonferroni F-test on the fit's working
   response and kept when the rows left out are predicted better (:mod:`.cells`,
   :meth:`StepwiseRegression._cells`).
11. ``row_guard``: an interaction candidate is judged without the one training row that carries most
   of its drop in the residual sum of squares (the F-test's gain less that row's share). A term that
   one row carries fits that row whatever its value (on the A4000 a 107 ms design alone in its
   block-height, tile and cache combination, among 2–7 ms neighbours) and says nothing about the
   combination's other designs; a real effect is carried by several rows and passes anyway.

The score is the adjusted R² of the augmented model (``criterion="adjr2"``, the paper's). With
``compare="adj_r2"`` the gain is measured against the adjusted R² of M instead of its R² (the other
reading of the paper's text). Alternatives: ``"aic"``/``"bic"`` (accept when the criterion drops
by more than θ or φ) and ``"ftest"`` (accept when the partial F-test p-value of the added block is
below θ or φ). ``max_terms`` caps the number of terms; ``forced`` terms (e.g. Stargazer §7.4's
``["simd", "blk", "simd:blk"]``) start the model — a forced interaction's main effects enter first
(hierarchy) — and ``search=False`` fits just them.

Settings: :data:`PAPER_SETTINGS` is Stargazer as written: ``reference=True`` runs the authors'
released implementation exactly (:mod:`.reference`, R's ``ns`` and ``lm``); ``threshold_rule``
says whether θ and φ are shares of the model's R² (``relative``, the released code) or absolute
(the paper's text; the robust search's default). The estimator's defaults are the robust choice measured in
README "Regression choices" (log2 scale for powers of two, categorical terms for parameters with at
most three values, knots at distinct-value quantiles; see :mod:`.encoding`). Predictions are
guarded by the training support and a bound (:mod:`.fitted`, :mod:`.support`).

Speed: the search never refits a candidate from scratch. It keeps an orthonormal basis Q of the
current model's columns. Candidate blocks are kept *residualised* (orthogonal to Q) in contiguous
arrays: when terms are accepted, only the new columns of Q are projected out of them (twice, for
stability), as one matrix product over all candidates. Each candidate's residual block is then
factorised with a column-pivoted QR, and the drop in the residual sum of squares is the squared
norm of the residual's projection on it. Candidate blocks that add no independent column are
skipped (recorded in the trace as degenerate), never a crash.

The fit is a generator (:meth:`StepwiseRegression.iter_fit`) yielding one :class:`TraceStep` per
row of Stargazer Table 1: every candidate's score and its model's R² and adjusted R² (``r2s``,
``adj_r2s``, whatever the criterion), the chosen term, whether it was accepted, and the current terms with their
R² and adjusted R².
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations, product
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin

from ..choices import CRITERIA, FIT_TRANSFORMS, INTERACTION_FORMS, MAX_ORDERS, ROBUST_FITS, THRESHOLD_RULES, TRANSFORMS
from ..errors import GpudseError, suggest
from ..report.fmt import fmt_r2
from . import encoding
from .fitted import (
    _FINITE_Z,
    DEFAULT_BOUND_MARGIN,
    MODEL_SCHEMA,
    UNSEEN,
    FitError,
    note_constant_response,
    StepwiseModel,
    _rows,
    design_matrix,
    loo_predictions,
    ordered_basis,
    huber_residuals,
    inverse_transform,
    mad_scale,
    ols_noise,
    term_name,
    transform_response,
    working_response,
)
from .splines import PLACEMENTS, Basis, make_basis
from .support import Support
from .trace import TraceStep

__all__ = [
    "CRITERIA",
    "INTERACTION_FORMS",
    "ALGORITHM1_SETTINGS",
    "MODEL_SCHEMA",
    "PAPER_SETTINGS",
    "TRANSFORMS",
    "FitError",
    "StepwiseModel",
    "StepwiseRegression",
    "TraceStep",
    "fit_stepwise",
    "interaction_block",
    "inverse_transform",
    "term_name",
    "transform_response",
]

DOUBLY = "\x00full"  # marks a candidate key as the doubly non-linear remainder of an interaction term
WITH = "\x00with"  # marks (P, Q, WITH): parameter P and its pair P:Q as one look-ahead block
RANK_TOL = 1e-9
AUTO_TRANSFORMS = ("log", "sqrt", "none")  # what response_transform="auto" chooses from
REORTH = 0.1  # Gram–Schmidt: a second pass for columns reduced below this share of their norm
CACHE_BYTES = 256 << 20  # residualised candidate blocks kept between steps of the revisit pass

# Stargazer as written: the authors' released implementation (Stargazer 1.0, :mod:`.reference`):
# R's natural splines on its own knots, full pairwise interactions, adjusted R² against R² with
# θ = φ = 0 relative to R², the raw response. Its predictions are guarded like every model's (a
# prediction beyond the training range widened by the bound margin is bounded and flagged; R would
# give the unbounded value). ``threshold_rule="absolute"``
# with θ = φ = 0.01 is the paper text's reading (§5.2). The knot, scale and interaction settings of
# the robust search do not apply to it.
PAPER_SETTINGS: dict[str, Any] = {
    "reference": True, "theta": 0.0, "phi": 0.0, "threshold_rule": "relative", "criterion": "adjr2", "compare": "r2",
    "interactions": "full", "max_order": 2, "revisit": False, "lookahead": False, "prune": False, "unseen": "model",
    "response_transform": "none", "robust": "none", "cells": False, "row_guard": False,
}
ABSOLUTE_THRESHOLD = 0.01  # θ = φ of the paper text's absolute reading (§5.2)
# Algorithm 1 as the paper's text reads on this module's incremental search (no exact-reference
# claim): two even interior knots on the raw values (k = 4), restricted pairwise interactions,
# adjusted R² against R² with absolute θ = φ = 0.01. What tests and benchmarks of the search use as
# its plain form; the ``paper`` model is :data:`PAPER_SETTINGS`.
ALGORITHM1_SETTINGS: dict[str, Any] = {
    "theta": ABSOLUTE_THRESHOLD, "phi": ABSOLUTE_THRESHOLD, "criterion": "adjr2", "compare": "r2",
    "threshold_rule": "absolute", "knots": 4, "knot_placement": "even", "interactions": "restricted",
    "scale": "linear", "categorical_levels": 0, "max_order": 2, "revisit": False, "lookahead": False, "prune": False,
    "unseen": "model", "response_transform": "none", "powers_of_two": False, "robust": "none", "cells": False,
    "row_guard": False,
}
# robust="huber" (step 9 of the module docstring): Huber's ψ clips a residual at ROBUST_K times the MAD
# scale, and the search is rerun ROBUST_ROUNDS times on the pseudo-observations (docs/models.md "Real
# tuning spaces": k = 1.0 and 3 rounds against k = 1.345, 0.7 and 1, 4 or 5 rounds, 20 draws per GPU)
ROBUST_K = 1.0
ROBUST_ROUNDS = 3
LEAST_SQUARES = "least squares"  # the robust fit's first candidate: the least-squares search's model
ROBUST_TIE = 0.02  # a rerun replaces least squares only when its leave-one-out error is lower by more than this share
GUARD_NOTE = "one-row guard"  # the start of the note naming the terms the guard held back
OUTLYING = 3.0  # residuals beyond this many scales are called outlying in the fit's note


# ---- terms ------------------------------------------------------------------------------------
def interaction_block(blocks: Sequence[np.ndarray], bases: Sequence[Basis], form: str) -> tuple[np.ndarray, list]:
    """Columns of the interaction of two or three bases and the index tuples they multiply.

    ``form="full"`` takes every product (a tensor spline); ``"restricted"`` (rms' %ia%) leaves out
    products with more than one non-linear factor (categorical columns count as linear);
    ``"doubly"`` is what full adds to restricted: the products with two or more non-linear factors.
    A power-of-two column (``pow2(x)``, :mod:`.encoding`) enters restricted products only, with the
    other factors' linear columns: in full and doubly parts its products fit single level
    combinations, and an unseen one was predicted 400× off on a held-out real data set (kmeans)."""
    widths = [b.shape[1] for b in blocks]
    linear = [set(b.linear_columns) for b in bases]

    def nonlinear(ix: tuple[int, ...]) -> int:
        return sum(i not in lin for i, lin in zip(ix, linear))

    steps = [b.pow2_column for b in bases]
    idx = [ix for ix in product(*(range(w) for w in widths))
           if (form == "full" or (nonlinear(ix) <= 1) == (form == "restricted"))
           and not (form != "restricted" and any(i == s for i, s in zip(ix, steps)))]
    n = blocks[0].shape[0]
    if not idx:
        return np.zeros((n, 0)), []
    cols = np.empty((n, len(idx)))
    for c, ix in enumerate(idx):
        col = blocks[0][:, ix[0]].copy()
        for b, i in zip(blocks[1:], ix[1:]):
            col *= b[:, i]
        cols[:, c] = col
    return cols, idx


def _design(cols: Mapping[str, np.ndarray], columns: list, n: int) -> np.ndarray:
    """The selected columns (intercept first) from the cached basis blocks *cols*, in selection order."""
    A = np.empty((n, len(columns) + 1))
    A[:, 0] = 1.0
    for c, (t, lab) in enumerate(columns):
        v = cols[t[0]][:, lab[0]].copy()
        for p, i in zip(t[1:], lab[1:]):
            v *= cols[p][:, i]
        A[:, c + 1] = v
    return A


# ---- trace ------------------------------------------------------------------------------------
# ---- incremental least squares ---------------------------------------------------------------
class _OLSState:
    """Orthonormal basis Q of the current model's columns (preallocated, grown by doubling),
    the residual and the RSS."""

    def __init__(self, z: np.ndarray):
        n = z.size
        self.n = n
        self._q = np.empty((n, 64), order="F")  # columns contiguous: BLAS-friendly slices
        self._q[:, 0] = 1.0 / math.sqrt(n)
        self.rank = 1  # intercept
        self.tss = float(np.sum((z - z.mean()) ** 2))
        self.resid = z - z.mean()
        self.rss = self.tss

    @property
    def q(self) -> np.ndarray:
        return self._q[:, :self.rank]

    def project_out(self, block: np.ndarray, start: int = 0) -> np.ndarray:
        """*block* minus its projection on Q's columns from *start* on, in place: one classical
        Gram–Schmidt pass, and a second for the columns that lost more than 1 − REORTH of their norm
        in it (where cancellation could leave a component along Q; "twice is enough")."""
        qn = self._q[:, start:self.rank]
        if qn.shape[1] and block.shape[1]:
            before = np.einsum("ij,ij->j", block, block)
            block -= qn @ (qn.T @ block)
            after = np.einsum("ij,ij->j", block, block)
            redo = np.flatnonzero(after < REORTH ** 2 * before)
            if redo.size:
                sub = block[:, redo]
                sub -= qn @ (qn.T @ sub)
                block[:, redo] = sub
        return block

    def factor(self, res: np.ndarray, norms: np.ndarray) -> _Factor | None:
        """Pivoted QR of a residualised block: which columns are independent (a column is dependent
        when its new part is below RANK_TOL of its original norm) and the gain in fit."""
        if res.shape[1] == 0:
            return None
        qr, piv, _, _, info = _geqp3(res if res.flags.f_contiguous else np.asfortranarray(res))
        if info != 0:
            return None
        piv = piv - 1
        w = min(res.shape)  # a block wider than the rows has at most as many independent columns
        rb = np.triu(qr[:w, :w])
        diag = np.abs(np.diag(rb))
        keep = diag > RANK_TOL * np.maximum(norms[piv[:w]], 1e-300)
        # pivoted QR orders |diag| decreasingly, so the independent columns come first
        r = int(np.sum(np.cumprod(keep)))
        if r == 0:
            return None
        cols = piv[:r]
        if diag[0] > 1e6 * diag[r - 1]:  # ill-conditioned: gains from an explicit orthonormal basis
            qb = np.linalg.qr(res[:, cols])[0]
            c = qb.T @ self.resid
        else:  # c = Q_bᵀ resid = R⁻ᵀ B_kᵀ resid, without forming Q_b
            qb = None
            c = scipy.linalg.solve_triangular(rb[:r, :r], res[:, cols].T @ self.resid, trans="T", check_finite=False)
        return _Factor(np.sort(cols), cols, float(c @ c), qb)

    def basis(self, res: np.ndarray, f: _Factor) -> np.ndarray:
        """Orthonormal columns spanning the independent part of a residualised block."""
        return f.qb if f.qb is not None else np.linalg.qr(res[:, f.cols])[0]

    def add(self, qb: np.ndarray) -> None:
        c = qb.T @ self.resid
        self.resid = self.resid - qb @ c
        self.rss = max(float(self.resid @ self.resid), 0.0)
        need = self.rank + qb.shape[1]
        if need > self._q.shape[1]:
            grown = np.empty((self.n, max(need, 2 * self._q.shape[1])), order="F")
            grown[:, :self.rank] = self._q[:, :self.rank]
            self._q = grown
        self._q[:, self.rank:need] = qb
        self.rank = need


def _geqp3(a: np.ndarray):
    """LAPACK's column-pivoted QR (R and the pivots only; Q_b is not formed for every candidate)."""
    return scipy.linalg.lapack.dgeqp3(a, overwrite_a=False)


@dataclass
class _Factor:
    keep: np.ndarray  # independent block columns, in block order
    cols: np.ndarray  # the same in pivot order
    gain: float  # drop in the residual sum of squares
    qb: np.ndarray | None  # orthonormal basis when already computed


class _Candidates:
    """Candidate blocks kept residualised against the model in one contiguous array.

    ``refresh`` projects out only the model columns added since the last refresh, for all
    candidates at once (one BLAS-3 product)."""

    def __init__(self, st: _OLSState, terms: list[tuple[str, ...]], blocks: list[np.ndarray], labels: list[list]):
        self.st = st
        self.terms = list(terms)
        self.labels = dict(zip(terms, labels))
        widths = [b.shape[1] for b in blocks]
        self.offsets = dict(zip(terms, np.cumsum([0] + widths[:-1]).tolist()))
        self.widths = dict(zip(terms, widths))
        self.res = _stack(blocks, st.n)
        self.norms = np.sqrt(np.einsum("ij,ij->j", self.res, self.res))
        self.done = 0

    def drop(self, term: tuple[str, ...]) -> None:
        self.terms.remove(term)
        live = sum(self.widths[t] for t in self.terms)
        if live < 0.6 * self.res.shape[1]:  # compact: stop projecting blocks nobody will use
            parts = [self.res[:, self.offsets[t]:self.offsets[t] + self.widths[t]] for t in self.terms]
            nparts = [self.norms[self.offsets[t]:self.offsets[t] + self.widths[t]] for t in self.terms]
            self.offsets = dict(zip(self.terms, np.cumsum([0] + [self.widths[t] for t in self.terms][:-1]).tolist()))
            self.res = _stack(parts, self.st.n)
            self.norms = np.concatenate(nparts) if nparts else np.zeros(0)

    def refresh(self) -> None:
        if self.done < self.st.rank:
            self.st.project_out(self.res, self.done)
            self.done = self.st.rank

    def block(self, term: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        o, w = self.offsets[term], self.widths[term]
        return self.res[:, o:o + w], self.norms[o:o + w]


def _stack(blocks: list[np.ndarray], n: int) -> np.ndarray:
    """Blocks side by side in one Fortran-ordered array (each block's columns contiguous)."""
    out = np.empty((n, sum(b.shape[1] for b in blocks)), order="F")
    o = 0
    for b in blocks:
        out[:, o:o + b.shape[1]] = b
        o += b.shape[1]
    return out


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
class StepwiseRegression(RegressorMixin, BaseEstimator):
    """Stargazer Algorithm 1 as a scikit-learn estimator (``fit``/``predict``/``get_params``).

    Parameters follow the papers' vocabulary: ``theta`` (θ), ``phi`` (φ) and ``phi3`` (three-way)
    thresholds, ``knots`` (Harrell's k, or a mapping parameter → k or knot list with an optional
    ``"__default__"``), ``knot_placement`` (``distinct``: Table 1's quantiles of the distinct values
    on the modelling scale; ``even``: Stargazer; ``quantile``: Lee & Brooks as rms), ``scale``
    (``auto``, ``linear``, or a mapping parameter → ``log2``/``linear``), ``categorical_levels``
    (numeric parameters with at most this many distinct values get a categorical term),
    ``max_order`` (2: pairs, Algorithm 1; 3: also three-way terms), ``response_transform``
    (``none``, ``log``, ``sqrt``, or ``auto``: chosen by leave-one-out error), ``bound_margin``
    (predictions are bounded to the training response range widened by this share of it on each
    side; ``None``: off), ``revisit``, ``lookahead`` and ``prune`` (steps 4, 5 and 7 of the module
    docstring), ``interactions`` (``restricted``, ``full`` or ``adaptive``) and ``unseen``
    (``lower-order``: a term with a full part predicts an unseen level combination by its
    lower-order fit, see :meth:`StepwiseModel.unseen_corrections`; ``model``: by the equation),
    ``threshold_rule`` (``absolute``: the adjusted-R² gain must exceed θ/φ; ``relative``: reach θ/φ
    times the model's R²; the adjr2 criterion only), ``powers_of_two`` (a ``pow2(x)`` column for
    whole-number parameters that mix powers of two with other values, :mod:`.encoding`), ``robust``
    (``huber``: the search rerun on Huber pseudo-observations, step 9 of the module docstring;
    ``none``: least squares) and ``reference`` (True: Stargazer 1.0 exactly,
    :mod:`.reference`; it uses θ, φ, ``threshold_rule``, ``params``, ``forced``, ``search``,
    ``max_terms``, ``response_transform`` other than auto, ``bound_margin`` and ``unseen``, and its
    own knots, basis and interactions).

    ``fit(X, y)`` takes arrays or DataFrames; ``fit(frame)`` with ``response=`` takes the response
    column from the frame. Attributes after fitting: ``model_`` (:class:`StepwiseModel`),
    ``n_features_in_``, ``feature_names_in_`` (for frames with string column names).

    :data:`PAPER_SETTINGS` gives the paper's exact reading: ``StepwiseRegression(**PAPER_SETTINGS)``.
    """

    def __init__(self, response: str | None = None, params: Sequence[str] | None = None, theta: float = 0.001,
                 phi: float = 0.001, phi3: float = 0.001, criterion: str = "ftest", compare: str = "r2",
                 knots: int | Mapping[str, Any] = 6, knot_placement: str = "distinct", norm: str = "harrell",
                 interactions: str = "adaptive", response_transform: str = "auto", max_terms: int | None = None,
                 forced: Sequence[str] = (), search: bool = True, categorical: Sequence[str] = (),
                 scale: str | Mapping[str, str] = "auto", categorical_levels: int = 3, max_order: int = 3,
                 revisit: bool = True, bound_margin: float | None = DEFAULT_BOUND_MARGIN, lookahead: bool = True,
                 prune: bool = True, unseen: str = "lower-order", threshold_rule: str = "absolute",
                 reference: bool = False, powers_of_two: bool = True, robust: str = "huber", cells: bool = True,
                 row_guard: bool = True):
        self.response = response
        self.params = params
        self.theta = theta
        self.phi = phi
        self.phi3 = phi3
        self.criterion = criterion
        self.compare = compare
        self.knots = knots
        self.knot_placement = knot_placement
        self.norm = norm
        self.interactions = interactions
        self.response_transform = response_transform
        self.max_terms = max_terms
        self.forced = forced
        self.search = search
        self.categorical = categorical
        self.scale = scale
        self.categorical_levels = categorical_levels
        self.max_order = max_order
        self.revisit = revisit
        self.bound_margin = bound_margin
        self.lookahead = lookahead
        self.prune = prune
        self.unseen = unseen
        self.threshold_rule = threshold_rule
        self.reference = reference
        self.powers_of_two = powers_of_two
        self.robust = robust
        self.cells = cells
        self.row_guard = row_guard

    # -- scikit-learn protocol (get_params/set_params/score come from BaseEstimator/RegressorMixin) --
    def fit(self, X: Any, y: Any = None, callback: Callable[[TraceStep], None] | None = None) -> StepwiseRegression:
        from .threads import limited

        with limited():  # BLAS threads that never outnumber the free cores (model/threads.py: 7x on 2 cores)
            for step in self.iter_fit(X, y):
                if callback is not None:
                    callback(step)
        return self

    def predict(self, X: Any) -> np.ndarray:
        from sklearn.utils.validation import _check_feature_names, check_is_fitted, validate_data

        check_is_fitted(self, "model_")
        if isinstance(X, pd.DataFrame):
            names = getattr(self, "feature_names_in_", None)
            if names is not None and X.shape[1] > len(names) and set(names) <= set(X.columns):
                X = X[list(names)]  # extra columns (the response, an index) are not features
            _check_feature_names(self, X, reset=False)
            if names is None:  # fitted on unnamed (or non-text) columns: match them by position
                if X.shape[1] != self.n_features_in_:
                    raise FitError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                                   f"{self.n_features_in_} features as input")
                X = X.set_axis(self._columns_, axis=1)
            return self.model_.predict(X)
        Xa = validate_data(self, X, reset=False, dtype="numeric")
        return self.model_.predict(pd.DataFrame(Xa, columns=self._columns_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    # -- the search --
    def _validate(self) -> None:
        if self.criterion not in CRITERIA:
            raise FitError(f"unknown criterion {self.criterion!r}; choose {', '.join(CRITERIA)}")
        if self.compare not in ("r2", "adj_r2"):
            raise FitError(f"compare must be 'r2' (Algorithm 1) or 'adj_r2' (got {self.compare!r})")
        if self.interactions not in INTERACTION_FORMS:
            raise FitError(f"unknown interaction form {self.interactions!r}; choose {', '.join(INTERACTION_FORMS)}")
        if self.knot_placement not in PLACEMENTS:
            raise FitError(f"unknown knot placement {self.knot_placement!r}; choose {', '.join(PLACEMENTS)}")
        if self.response_transform not in FIT_TRANSFORMS:
            raise FitError(f"unknown transform {self.response_transform!r}; choose {', '.join(FIT_TRANSFORMS)}")
        for name, v in (("theta", self.theta), ("phi", self.phi), ("phi3", self.phi3)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise FitError(f"{name} must be a finite number (got {v!r})")
        if self.max_terms is not None and (not isinstance(self.max_terms, int) or self.max_terms < 1):
            raise FitError(f"max_terms must be a whole number of at least 1 (got {self.max_terms!r})")
        if self.max_order not in MAX_ORDERS:
            raise FitError(f"max_order must be {' or '.join(map(str, MAX_ORDERS))} (got {self.max_order!r})")
        if isinstance(self.categorical_levels, bool) or not isinstance(self.categorical_levels, int) \
                or self.categorical_levels < 0:
            raise FitError(f"categorical_levels must be a whole number ≥ 0 (got {self.categorical_levels!r})")
        if self.threshold_rule not in THRESHOLD_RULES:
            raise FitError(f"unknown threshold rule {self.threshold_rule!r}; choose {' or '.join(THRESHOLD_RULES)}")
        if not isinstance(self.reference, bool):
            raise FitError(f"reference must be True or False (got {self.reference!r})")
        if self.robust not in ROBUST_FITS:
            raise FitError(f"robust must be one of {', '.join(ROBUST_FITS)} (got {self.robust!r})")
        if not isinstance(self.powers_of_two, bool):
            raise FitError(f"powers_of_two must be True or False (got {self.powers_of_two!r})")
        for name in ("cells", "row_guard"):
            if not isinstance(getattr(self, name), bool):
                raise FitError(f"{name} must be True or False (got {getattr(self, name)!r})")
        if self.reference and self.response_transform == "auto":
            raise FitError("Stargazer 1.0 models the response as given: choose the transform none (its own), log "
                           "or sqrt, not auto")
        if self.unseen not in UNSEEN:
            raise FitError(f"unseen must be one of {', '.join(UNSEEN)} (got {self.unseen!r})")
        bm = self.bound_margin
        if bm is not None and (isinstance(bm, bool) or not isinstance(bm, (int, float)) or not math.isfinite(bm)
                               or bm < 0):
            raise FitError(f"bound_margin must be a non-negative number or None (got {bm!r})")
        try:
            encoding.check_scale_setting(self.scale)
        except GpudseError as e:
            raise FitError(str(e)) from None

    def _data(self, X: Any, y: Any, constant_ok: bool = False) -> tuple[pd.DataFrame, np.ndarray, list[str], str]:
        """(parameter frame, response values, parameter names, response name); sets the
        scikit-learn attributes ``n_features_in_``/``feature_names_in_``. A constant parameter is an
        error unless *constant_ok* (Stargazer 1.0 leaves it out with a note)."""
        from sklearn.utils.validation import _check_feature_names, validate_data

        cls = type(self).__name__
        if not isinstance(X, pd.DataFrame):
            if y is None:
                raise FitError(f"{cls} requires y to be passed, but the target y is None; give y, or a DataFrame "
                               f"and the response column (response=... or --response COL)")
            Xa, ya = validate_data(self, X, y, dtype="numeric", y_numeric=True)
            self._columns_ = [f"x{i}" for i in range(Xa.shape[1])]
            X = pd.DataFrame(Xa, columns=self._columns_)
            yv = np.asarray(ya, dtype=float)
            raw = pd.Series(yv)
        else:
            if y is None:
                if not self.response:
                    raise FitError(f"{cls} requires y to be passed, but the target y is None; say which column is "
                                   f"the response (response=... or --response COL)")
                check_response(X, self.response)
                raw = X[self.response]
                if isinstance(raw, pd.DataFrame):
                    raise FitError(f"the data have more than one column named {self.response!r}; rename them")
                yv = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
                X = X.drop(columns=[self.response])
            else:
                raw = pd.Series(np.asarray(y).ravel()) if not isinstance(y, pd.Series) else y.reset_index(drop=True)
                yv = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
            if X.columns.duplicated().any():
                dup = X.columns[X.columns.duplicated()].unique().tolist()
                raise FitError(f"the data have more than one column named {', '.join(map(repr, dup))}; rename them")
            _check_feature_names(self, X, reset=True)
            self.n_features_in_ = X.shape[1]
            self._columns_ = [str(c) for c in X.columns]
            X = X.set_axis(self._columns_, axis=1)
        col = self.response or "response"
        if len(yv) != len(X):
            raise FitError(f"{len(X)} rows of parameters but {len(yv)} responses")
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
            names = list(X.columns)
        if not names:
            raise FitError("no parameter columns to model")
        for p in names:
            if X[p].isna().any():
                raise FitError(f"column {p!r}: rows {_rows(np.flatnonzero(X[p].isna().to_numpy()))} are empty")
        if len(yv) < 3:
            raise FitError(f"only {len(yv)} rows ({len(yv)} sample{'s' if len(yv) != 1 else ''}); a regression "
                           f"needs more rows than terms")
        const = [p for p in names if X[p].nunique() < 2]
        if const and not constant_ok:
            raise FitError(f"column(s) {', '.join(map(repr, const))} are constant, so they cannot explain "
                           f"anything; leave them out (--params) or sample more widely")
        return X, yv, names, col

    def iter_fit(self, X: Any, y: Any = None) -> Iterator[TraceStep]:
        """Run Algorithm 1, yielding one :class:`TraceStep` per Table 1 row; sets ``model_`` at the end."""
        self._validate()
        if self.reference:
            from .reference import ReferenceSearch

            self._loo_error_ = None
            X, yraw, names, col = self._data(X, y, constant_ok=True)
            search = ReferenceSearch(
                X, yraw, names, col, theta=self.theta, phi=self.phi, rule=self.threshold_rule,
                transform=self.response_transform, forced=self.forced, search=self.search, max_terms=self.max_terms,
                bound_margin=self.bound_margin, unseen=self.unseen,
                settings={k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.get_params().items()
                          if k != "params"})
            yield from search.steps()
            self.model_ = search.model
            return
        if self.cells and self.search:
            yield from self._cells(X, y)
            return
        if self.robust == "huber":
            yield from self._robust(X, y)
            return
        if self.response_transform == "auto":
            yield from self._auto(X, y)
            return
        self._loo_error_ = None
        X, yraw, names, col = self._data(X, y)
        z = transform_response(yraw, self.response_transform, col)
        spread = float(np.ptp(z))
        if spread == 0 or spread <= 1e-12 * float(np.max(np.abs(z))):
            raise FitError(f"column {col!r} is constant (every row is {yraw[0]:g}"
                           f"{' on the ' + self.response_transform + ' scale' if self.response_transform != 'none' else ''}"
                           f"); there is nothing to model — check the response column")
        n = z.size
        if isinstance(self.knots, Mapping):
            unknown = [k for k in self.knots if k != "__default__" and k not in names]
            if unknown:
                raise FitError(f"knots given for unknown parameter(s) {unknown}; parameters: {', '.join(names)}")
            default = self.knots.get("__default__", 4)
            knots = {p: self.knots.get(p, default) for p in names}
        else:
            knots = {p: self.knots for p in names}
        if isinstance(self.scale, Mapping):
            unknown = [k for k in self.scale if k != "__default__" and k not in names]
            scale = {k: v for k, v in self.scale.items() if k not in unknown}  # a space file may name more
        else:
            scale = self.scale
        try:
            plan = encoding.plan({p: X[p].to_numpy() for p in names}, scale, tuple(self.categorical),
                                 self.categorical_levels, bool(self.powers_of_two))
            bases = {p: make_basis(p, X[p].to_numpy(), knots[p], self.knot_placement, self.norm,
                                   categorical=plan[p].categorical, scale=plan[p].scale, pow2=plan[p].pow2)
                     for p in names}
            cols = {p: bases[p].evaluate(X[p].to_numpy()) for p in names}
        except FitError:
            raise
        except GpudseError as e:
            raise FitError(str(e)) from None
        notes = [e.note for e in plan.values() if e.note]
        st = _OLSState(z)
        chosen: list[str] = []
        terms: list[str] = []
        term_sets: set[frozenset] = set()
        columns: list[tuple[tuple[str, ...], tuple]] = []  # (params, basis-column indices) per model column
        marks: list[tuple[int, int, int]] = []  # (terms, columns, rank of Q) after each accepted term
        step_no = 0
        trace: list[dict] = []
        fits: dict[str, tuple[float, float]] = {}  # candidate -> (R², adjusted R²) of its latest evaluation

        def emit(step: TraceStep) -> TraceStep:
            for k in step.candidates:
                if k in fits:
                    step.r2s[k], step.adj_r2s[k] = fits[k]
            trace.append(step.to_dict())
            return step

        form = "full" if self.interactions == "full" else "restricted"

        def plain(key: tuple[str, ...]) -> tuple[str, ...]:
            return key[:-1] if key[-1] == DOUBLY else key

        def label(key: tuple[str, ...]) -> str:
            if key[-1] == WITH:
                return f"{key[0]} + {key[0]}:{key[1]}"
            return term_name(key[:-1]) + " (full)" if key[-1] == DOUBLY else term_name(key)

        def block(term: tuple[str, ...]) -> tuple[np.ndarray, list]:
            if len(term) == 1:
                return cols[term[0]], [(j,) for j in range(cols[term[0]].shape[1])]
            if term[-1] == WITH:  # look-ahead: scored as one block, accepted as P, then P:Q
                (main, main_lab), (pair, pair_lab) = block(term[:1]), block(term[:2])
                return np.hstack([main, pair]), main_lab + pair_lab
            if term[-1] == DOUBLY:
                return interaction_block([cols[p] for p in term[:-1]], [bases[p] for p in term[:-1]], "doubly")
            return interaction_block([cols[p] for p in term], [bases[p] for p in term], form)

        def width(key: tuple[str, ...]) -> int:
            """Columns of a candidate block, at most (for chunking)."""
            if key[-1] == WITH:
                return bases[key[0]].width * (1 + bases[key[1]].width)
            return int(np.prod([bases[p].width for p in plain(key)]))

        chunk_cols = max(1, CACHE_BYTES // (8 * n))

        def chunked(keys: list[tuple[str, ...]]) -> Iterator[_Candidates]:
            """Candidate sets of at most CACHE_BYTES of residualised columns each, built one at a time."""
            part: list[tuple[str, ...]] = []
            size = 0
            for key in keys:
                if part and size + width(key) > chunk_cols:
                    yield candidates(part)
                    part, size = [], 0
                part.append(key)
                size += width(key)
            if part:
                yield candidates(part)

        def doubly(t: tuple[str, ...]) -> bool:
            """Does the adaptive form offer the doubly non-linear remainder of interaction *t*?"""
            return (self.interactions == "adaptive" and len(t) > 1 and t[-1] != DOUBLY
                    and sum(bases[p].width > len(bases[p].linear_columns) for p in t) >= 2)

        def candidates(terms_: list[tuple[str, ...]]) -> _Candidates:
            built = [block(t) for t in terms_]
            return _Candidates(st, terms_, [b for b, _ in built], [lab for _, lab in built])

        def evaluate(cset: _Candidates, cands: list[tuple[str, ...]]) -> tuple[dict, dict, dict]:
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
                scores[name] = self._score(rss, st, rank, n, f.cols.size)
                fits[name] = (_r2(rss, st.tss), _adj_r2(rss, st.tss, n, rank))
                prepared[name] = (t, (res, f), [cset.labels[t][i] for i in f.keep], rss, rank)
            return scores, skipped, prepared

        def metric(first: bool) -> str:
            return {"adjr2": "r2" if first else "adj_r2", "aic": "aic", "bic": "bic", "ftest": "p_value"}[
                self.criterion]

        def best(scores: dict) -> str:
            """Highest adjusted R², or lowest AIC/BIC/p-value."""
            if self.criterion == "adjr2":
                return max(scores, key=lambda k: scores[k])
            return min(scores, key=lambda k: scores[k])

        # terms the one-row guard held back, by their set of parameters (the search's name for a term depends
        # on the path to it: b:a:c and a:c:b are one term): (name, row, its share of the gain)
        held: dict[frozenset, tuple[str, int, float]] = {}

        def lone_gain(name: str, prepared: dict) -> tuple[int, float]:
            """(row, drop) of the training row that carries most of candidate *name*'s drop in the residual
            sum of squares: r_i² − (r_i − d_i)², d the candidate's change to the fitted values (the
            drops of all rows sum to the gain). Its basis is kept for :func:`accept`."""
            _, (res, f), _, _, _ = prepared[name]
            if f.qb is None:
                f.qb = st.basis(res, f)
            r = st.resid
            d = f.qb @ (f.qb.T @ r)
            drop = r * r - (r - d) ** 2
            i = int(np.argmax(drop))
            return i, float(max(drop[i], 0.0))

        def choose(scores: dict, prepared: dict, limit_of: Callable[[str], float]) -> str:
            """The best candidate (:func:`best`). With ``row_guard``, each front-runner is scored again
            without its largest single row's drop in RSS (*scores* is updated: the trace shows what
            was decided on) until the best holds its place; a term that passed *limit* only by that
            row's drop is recorded in ``held``. *limit_of* gives a candidate's threshold."""
            if not self.row_guard:
                return best(scores)
            seen = set()
            while True:
                name = best(scores)
                if name in seen:
                    return name
                seen.add(name)
                i, g = lone_gain(name, prepared)
                if g <= 0:
                    return name
                _, _, _, rss, rank = prepared[name]
                passed = gain_ok(name, scores, limit_of(name))[0]
                scores[name] = self._score(rss + g, st, rank, n, rank - st.rank)
                key = frozenset(prepared[name][0])
                if passed and not gain_ok(name, scores, limit_of(name))[0] and key not in held:
                    held[key] = (name, i, g / max(st.rss - rss, 1e-300))

        def accept(name: str, prepared: dict) -> None:
            t, (res, f), labels, _, _ = prepared[name]
            st.add(st.basis(res, f))
            terms.append(name)
            term_sets.add(frozenset(t))
            columns.extend((plain(t), lab) for lab in labels)
            marks.append((len(terms), len(columns), st.rank))

        def current() -> tuple[float, float]:
            return _r2(st.rss, st.tss), _adj_r2(st.rss, st.tss, n, st.rank)

        def gain_ok(name: str, scores: dict, limit: float) -> tuple[bool, float]:
            s = scores[name]
            r2, adj = current()
            if self.criterion == "adjr2":
                g = s - (r2 if self.compare == "r2" else adj)
                if self.threshold_rule == "relative":
                    return g >= limit * (r2 if self.compare == "r2" else adj), g
                return g > limit, g
            if self.criterion in ("aic", "bic"):
                now = self._info(st.rss, n, st.rank)
                g = now - s
                return g > limit, g
            return s < limit, s

        def full() -> bool:
            return self.max_terms is not None and len(terms) >= self.max_terms

        def force(parts: tuple[str, ...], label: str) -> TraceStep:
            nonlocal step_no
            scores, skipped, prepared = evaluate(candidates([parts]), [parts])
            name = term_name(parts)
            if name not in prepared:
                raise FitError(f"forced term {label!r} cannot be fitted: {skipped.get(name)}")
            accept(name, prepared)
            if len(parts) == 1 and parts[0] not in chosen:
                chosen.append(parts[0])
            step_no += 1
            r2, adj = current()
            return emit(TraceStep(step_no, "forced", metric(False), scores, skipped, name, True, None, list(terms),
                                  r2, adj))

        # forced terms first; an interaction's main effects enter before it (hierarchy)
        for f in self.forced:
            parts = tuple(p.strip() for p in str(f).split(":"))
            unknown = [p for p in parts if p not in bases]
            if unknown or not 1 <= len(parts) <= 3 or len(set(parts)) != len(parts):
                raise FitError(f"forced term {f!r}: " + (f"unknown parameter(s) {unknown}" if unknown
                                                       else "give a parameter or an interaction of two or three "
                                                            "different parameters, e.g. simd:blk"))
            if len(parts) > 1:
                for p in parts:
                    if frozenset((p,)) not in term_sets:
                        yield force((p,), f)
            if frozenset(parts) not in term_sets:
                yield force(parts, f)

        def grow(cands: list[tuple[str, ...]], kind: str, limit: float,
                 then: Callable[[tuple[str, ...]], Iterator[TraceStep]] | None = None) -> Iterator[TraceStep]:
            """Algorithm 1's inner loop: add the best candidate while it passes *limit*; after each
            accepted term, *then* (the three-way extensions of an accepted pair)."""
            nonlocal step_no
            cands = [t for t in cands if frozenset(t) not in term_sets]
            if not cands:
                return
            cset = candidates(cands)
            while cands and not full():
                scores, skipped, prepared = evaluate(cset, cands)
                if not scores:
                    break
                name = choose(scores, prepared, lambda _: limit)
                ok, g = gain_ok(name, scores, limit)
                if ok:
                    accept(name, prepared)
                step_no += 1
                r2, adj = current()
                yield emit(TraceStep(step_no, kind, metric(False), scores, skipped, name, ok, g, list(terms), r2, adj))
                if not ok:
                    break
                t = prepared[name][0]
                cands.remove(t)
                cset.drop(t)
                if then is not None:
                    yield from then(t)

        def upgrade(t: tuple[str, ...]) -> Iterator[TraceStep]:
            """Adaptive form: the doubly non-linear products of an accepted restricted term, tested
            as one block by the term's own rule (a step or a saturation in both factors at once)."""
            if doubly(t):
                yield from grow([t + (DOUBLY,)], "nonlinear", self.phi if len(t) == 2 else self.phi3)

        def higher(t: tuple[str, ...]) -> Iterator[TraceStep]:
            """After an accepted interaction: its doubly non-linear part (adaptive form), then its
            extensions by one more chosen parameter up to ``max_order`` (threshold φ3)."""
            yield from upgrade(t)
            if self.max_order > len(t):
                yield from grow([t + (m,) for m in chosen if m not in t], f"interaction{len(t) + 1}", self.phi3,
                                higher)

        def pairs(pi: str, partners: list[str]) -> Iterator[TraceStep]:
            # named new:old, as Table 1's simd:#blk
            yield from grow([(pi, p) for p in partners], "interaction", self.phi, higher)

        def revisit() -> Iterator[TraceStep]:
            """After Algorithm 1 stops: every pair of chosen parameters not in the model (and, with
            max_order 3, every triple containing an accepted pair) is a candidate, accepted by the
            same rule (φ for pairs, φ3 for triples), until none passes. Candidate blocks are kept
            residualised in chunks of at most CACHE_BYTES; beyond that they are rebuilt per step."""
            nonlocal step_no
            pool: dict[frozenset, tuple[str, ...]] = {}
            chunks: list[_Candidates] = []

            def offer() -> None:
                new = [t for t in combinations(chosen, 2) if frozenset(t) not in term_sets]
                for order in range(3, self.max_order + 1):
                    new += [t for t in combinations(chosen, order) if frozenset(t) not in term_sets
                            and any(frozenset(pr) in term_sets for pr in combinations(t, order - 1))]
                new += [t + (DOUBLY,) for t, _ in columns if doubly(tuple(t))
                        and frozenset(t) in term_sets and frozenset(tuple(t) + (DOUBLY,)) not in term_sets]
                new = list(dict.fromkeys(tuple(t) for t in new))
                fresh = [t for t in new if frozenset(t) not in pool]
                for t in fresh:
                    pool[frozenset(t)] = t
                if fresh and cache:
                    chunks.extend(chunked(fresh))

            every = [t for order in range(2, self.max_order + 1) for t in combinations(chosen, order)]
            cache = sum(int(np.prod([bases[p].width for p in t])) for t in every) <= chunk_cols
            offer()
            while pool and not full():
                scores, skipped, prepared = {}, {}, {}
                for cset in (chunks if cache else chunked(list(pool.values()))):
                    live = [t for t in cset.terms if frozenset(t) in pool]
                    if live:
                        sc, sk, pr = evaluate(cset, live)
                        scores.update(sc), skipped.update(sk), prepared.update(pr)
                if not scores:
                    return
                name = choose(scores, prepared, lambda k: self.phi if len(plain(prepared[k][0])) == 2 else self.phi3)
                t = prepared[name][0]
                ok, g = gain_ok(name, scores, self.phi if len(plain(t)) == 2 else self.phi3)
                if ok:
                    accept(name, prepared)
                step_no += 1
                r2, adj = current()
                yield emit(TraceStep(step_no, "revisit", metric(False), scores, skipped, name, ok, g, list(terms),
                                     r2, adj))
                if not ok:
                    return
                del pool[frozenset(t)]
                offer()

        def look_ahead(rem: list[str]) -> tuple[str, str, dict, dict, float] | None:
            """When the best main effect fails θ: each remaining parameter P with its pair P:Q (Q chosen)
            as one block, scored by the same rule against θ. A parameter that acts only jointly with
            another (the block concurrency that matters only when the kernel is memory bound) has
            almost no main effect, and Algorithm 1 would stop before ever trying it. Returns
            (P, Q, scores, skipped, gain) of the best block that passes, or None."""
            keys = {label(k): k for k in [(p, q, WITH) for p in rem for q in chosen]}
            scores, skipped = {}, {}
            for cset in chunked(list(keys.values())):
                sc, sk, _ = evaluate(cset, cset.terms)
                scores.update(sc)
                skipped.update(sk)
            if not scores:
                return None
            name = best(scores)
            ok, g = gain_ok(name, scores, self.theta)
            if not ok:
                return None
            return keys[name][0], keys[name][1], scores, skipped, g

        def force_pair(pi: str, q: str) -> Iterator[TraceStep]:
            """The pair that carried a look-ahead parameter in; then its three-way extensions."""
            nonlocal step_no
            t = (pi, q)
            scores, skipped, prepared = evaluate(candidates([t]), [t])
            name = term_name(t)
            if name not in prepared or full():
                return
            accept(name, prepared)
            step_no += 1
            r2, adj = current()
            yield emit(TraceStep(step_no, "interaction", metric(False), scores, skipped, name, True, scores[name],
                                 list(terms), r2, adj))
            yield from higher(t)

        n_forced = len(terms)
        remaining = [p for p in names if p not in chosen]
        if self.search and remaining:
            first = not terms
            mains = candidates([(p,) for p in remaining])
            while remaining and not full():
                cands = [(p,) for p in remaining]
                scores, skipped, prepared = evaluate(mains, cands)
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
                yield emit(TraceStep(step_no, "initial" if first else "main", metric(first), scores, skipped, name,
                                     ok, g, list(terms), r2, adj))
                partner = None
                if not ok:
                    # a parameter whose own columns add nothing (collinear with the model) cannot enter first
                    alive = [p for p in remaining if label((p,)) in prepared]
                    found = look_ahead(alive) if self.lookahead and chosen and alive and not full() else None
                    if found is None:
                        break
                    name, partner, la_scores, la_skipped, g = found
                    _, _, prep = evaluate(mains, [(name,)])
                    accept(name, prep)
                    step_no += 1
                    r2, adj = current()
                    yield emit(TraceStep(step_no, "lookahead", metric(False), la_scores, la_skipped, name, True, g,
                                         list(terms), r2, adj))
                first = False
                pi = name
                remaining.remove(pi)
                mains.drop((pi,))
                partners = list(chosen)
                chosen.append(pi)
                if partner is not None:
                    yield from force_pair(pi, partner)
                    partners.remove(partner)
                yield from pairs(pi, partners)
            if self.revisit:
                yield from revisit()
            if self.prune:
                step = self._prune(st, z, yraw, marks, terms, columns, n_forced, step_no + 1)
                if step is not None:
                    step_no += 1
                    yield emit(step)
        if self._loo_error_ is None:  # the final model's leave-one-out error (for transform="auto")
            last = [m for m in marks if m[0] == len(terms)][-1:] or [(0, 0, 1)]
            self._loo_error_ = self._loo(st, z, yraw, last, -1)[0][1]
        self.model_ = self._finish(X, cols, z, bases, columns, terms, st, names, col, notes)
        self.model_.trace = trace
        held = {key: v for key, v in held.items() if key not in term_sets}  # not taken at a later step
        if held:
            what = "; ".join(f"{k} (training row {_rows(np.array([i]))} gives "
                             f"{'more than all (the other rows fit worse with it)' if share > 1 else f'{share:.0%}'} "
                             f"of its drop in RSS)"
                             for k, i, share in held.values())
            many = len(held) != 1
            self.model_.notes.append(
                f"{GUARD_NOTE}: {len(held)} interaction term{'s' if many else ''} {'pass' if many else 'passes'} the "
                f"test only with one training row's part of {'their' if many else 'its'} fit, so "
                f"{'they were' if many else 'it was'} held back (a term one row carries fits that row whatever its "
                f"value, and says nothing of the other designs it covers): {what}")

    def _auto(self, X: Any, y: Any) -> Iterator[TraceStep]:
        """``response_transform="auto"``: the whole search once per transform the response allows
        (log for positive responses, sqrt for non-negative ones, none), keeping the model with the
        lowest leave-one-out error on the response scale (:meth:`_loo`; relative errors, so a log
        and an untransformed model compare on the errors a user sees). Yields the kept search's
        steps and a final ``transform`` step with every transform's score.

        Why: time adds up (rounds of blocks, memory + compute cycles), and where the runtime spans
        a few × an untransformed or square-root response is the more additive one (BFS, LPS, AES
        on the built-in simulator); across 100× (real tuning spaces) the log is, and the errors
        choose it (README "Regression choices")."""
        from sklearn.base import clone

        _, yraw, _, col = self._data(X, y)
        options = [t for t in AUTO_TRANSFORMS if (t != "log" or np.all(yraw > 0)) and (t != "sqrt" or np.all(yraw >= 0))]
        runs, failed = [], {}
        for t in options:
            est = clone(self).set_params(response_transform=t)
            try:
                steps = list(est.iter_fit(X, y))
            except FitError as e:
                failed[t] = str(e)
                continue
            runs.append((est._loo_error_, t, est, steps))
        if not runs:
            raise FitError(next(iter(failed.values())))
        err, t, est, steps = min(runs, key=lambda r: r[0])
        yield from steps
        scores = {r[1]: r[0] for r in runs}
        model = est.model_
        step = TraceStep(len(steps) + 1, "transform", "loo_error", scores, failed, t, True, err, list(model.terms),
                         model.r2, model.adj_r2)
        model.trace.append(step.to_dict())
        model.settings["response_transform"] = "auto"
        shown = ", ".join(f"{k} {100 * v:.3g} %" for k, v in sorted(scores.items(), key=lambda kv: kv[1]))
        model.notes.append(f"{col}: {t} scale chosen by leave-one-out error ({shown})"
                           if np.all(yraw > 0) else f"{col}: {t} scale chosen by leave-one-out error")
        self._loo_error_ = err
        self.model_ = model
        yield step

    def _robust(self, X: Any, y: Any) -> Iterator[TraceStep]:
        """``robust="huber"`` (step 9 of the module docstring): Huber's device for making a
        least-squares procedure robust (pseudo-observations, Huber 1981 §7.8), applied to the search.

        The least-squares search runs first (with ``response_transform="auto"`` it chooses the
        transform). Then ``ROBUST_ROUNDS`` times: the residuals e of the current fit f, centred on
        their median c, are clipped at ``ROBUST_K`` times their MAD scale s, and the search is rerun
        at that transform on z* = f + c + ψ(e − c) / m (m: the share of residuals inside the clip,
        Huber's correction, which keeps the F-tests from seeing a smaller spread than the data's).
        Of the least-squares model and each round's, the one whose rows left out one at a time are
        predicted best (:meth:`_robust_score`) is kept: a round started from a poor fit can lose a
        term, and where there is nothing to discount least squares is as good.

        A kept round's coefficients are least squares on its pseudo-observations; its coefficient
        table, ANOVA, R² and adjusted R² are least squares on its own working response
        (:func:`.fitted.working_response`); its prediction intervals take the spread of the data
        about the fit. A fit whose residuals have no spread (noise-free data) stays least squares.

        Why: a tuning space has a few pathological cells (on the A4000 a 2D convolution with block
        height 8 and 4 × 4 tiles is 3–30× slower than its neighbours); in least squares those rows
        choose terms and pull every coefficient. Measured, with what was tried and not kept (the
        full M-estimate of the last columns, k = 1.345, one round, five rounds), in docs/models.md
        ("Real tuning spaces")."""
        from sklearn.base import clone

        first = clone(self).set_params(robust="none")
        yield from first.iter_fit(X, y)
        self._loo_error_ = first._loo_error_
        Xf, yraw, names, col = self._data(X, y)
        t = first.model_.transform
        z = transform_response(yraw, t, col)
        tiny = 1e-9 * max(float(np.ptp(z)), float(np.max(np.abs(z))), 1e-300)
        # (name, model, its design on the training rows)
        fits: list[tuple[str, StepwiseModel, np.ndarray]] = [(LEAST_SQUARES, first.model_, design_matrix(first.model_, Xf))]
        base = len(first.model_.trace)
        for r in range(1, ROBUST_ROUNDS + 1):
            _, model, A = fits[-1]
            zs = _pseudo_observations(A @ np.asarray(model.coefficients, dtype=float), z, t, tiny)
            if zs is None:  # noise-free data (or a fit through every row): nothing to make robust
                break
            est = clone(self).set_params(robust="none", response_transform=t)
            try:
                steps = list(est.iter_fit(Xf, inverse_transform(zs, t)))
            except FitError:  # the pseudo-observations cannot be fitted (e.g. all clipped to one value)
                break
            model = est.model_
            fits.append((f"Huber round {r}", model, design_matrix(model, Xf)))
            last = steps[-1] if steps else None
            yield TraceStep(base + r, "robust", "r2", {}, {}, f"Huber round {r}", True, None, list(model.terms),
                            last.r2 if last else model.r2, last.adj_r2 if last else model.adj_r2)
        if len(fits) == 1:  # nothing to make robust: least squares, said so
            self.model_ = first.model_
            self.model_.settings = {**self.model_.settings, "robust": "huber"}
            self.model_.notes.append("robust fit: the least-squares residuals have no spread (noise-free data), so "
                                     "there is nothing to make robust: the model is least squares")
            return
        scored = [(name, m, *self._robust_score(m, A, z, yraw, name != LEAST_SQUARES)) for name, m, A in fits]
        best = min(scored[1:], key=lambda c: c[2])  # ties: the earliest round
        # least squares unless a round predicts clearly better: four noisy leave-one-out means, and on
        # data with nothing to discount the rounds only trade noise (the tie band of --model auto)
        kept = scored[0] if scored[0][2] <= best[2] * (1 + ROBUST_TIE) else best
        name, model, score, s, working, A = kept
        coef = np.asarray(model.coefficients, dtype=float)
        fitted = A @ coef
        rounds = len(fits) - 1
        transform_rows = [{**r, "r2": None, "adj_r2": None}  # least squares' decision: no model state of its own
                          for r in first.model_.trace if r.get("kind") == "transform"]
        reruns = f"the search was rerun {rounds} time{'s' if rounds != 1 else ''} on Huber pseudo-observations"
        if name == LEAST_SQUARES:
            note = (f"robust fit: {reruns}; no rerun predicts its left-out rows more than "
                    f"{ROBUST_TIE:.0%} better than least squares, whose model is kept")
            trace = [dict(r) for r in model.trace]
        else:
            e = z - fitted
            e = e - np.median(e)
            clipped = int(np.count_nonzero(np.abs(e) > ROBUST_K * s))
            outlying = int(np.count_nonzero(np.abs(e) > OUTLYING * s))
            # R² of the pseudo-observations (outlying rows counted at the clip), as its coefficient table
            # reports it; the note gives the data's R² too. Prediction intervals take the data's spread
            # about the fit: with the pseudo-observations' spread 95 % intervals covered 85 % of held-out
            # simulations on AES (tests/test_intervals.py asks for 90 %)
            rss, tss = float(np.sum((working - fitted) ** 2)), float(np.sum((working - working.mean()) ** 2))
            model.r2, model.adj_r2 = _r2(rss, tss), _adj_r2(rss, tss, z.size, A.shape[1])
            data_rss = float(np.sum((z - fitted) ** 2))
            data_r2 = _r2(data_rss, float(np.sum((z - z.mean()) ** 2)))
            model.noise = ols_noise(A, data_rss)
            model.z_range = (float(z.min()), float(z.max()))
            model.robust = {"method": "huber", "k": ROBUST_K, "scale": float(s), "rounds": int(name.rsplit(" ", 1)[1])}
            scale_text = f"{s:.3g}" + ("" if t == "none" else f" on the {t} scale")
            note = (f"robust fit: {reruns}, and {name} predicts its left-out rows best; its residual scale is "
                    f"{scale_text}, {clipped} of {z.size} rows lie beyond {ROBUST_K:g} scale and are counted as "
                    f"if they were that far (Huber's ψ), {outlying} lie beyond {OUTLYING:g} scales (outlying). "
                    f"R² is {fmt_r2(model.r2)} on these pseudo-observations, {fmt_r2(data_r2)} on the data")
            # the scale decision first (its R² blank: it was made on least squares' fits), then the kept
            # round's own search on its pseudo-observations
            trace = [dict(r) for r in transform_rows] + [{**r, "fit": name} for r in model.trace]
        model.settings = {**first.model_.settings, "robust": "huber"}
        own = [n for n in first.model_.notes if name == LEAST_SQUARES or not n.startswith(GUARD_NOTE)]
        model.notes = own + [n for n in model.notes if n not in own] + [note]
        step = TraceStep(len(trace) + 1, "robust", "loo_error", {n: sc for n, _, sc, *_ in scored}, {}, name, True,
                         score, list(model.terms), model.r2, model.adj_r2)
        model.trace = [{**r, "step": i + 1} for i, r in enumerate(trace)] + [step.to_dict()]
        self._loo_error_ = score
        self.model_ = model
        yield step

    def _cells(self, X: Any, y: Any) -> Iterator[TraceStep]:
        """``cells=True`` (step 10 of the module docstring, :mod:`.cells`): the fit without cells (least
        squares or robust, as set), then level cells chosen on its working response. For a robust
        model the selection makes ``cells.ROUNDS`` passes, each on the Huber pseudo-observations of
        the previous pass's fit with its cells (a corner the cells fit is no longer clipped as
        outlying). The pass (or no cells) whose rows left out one at a time are predicted best is
        kept, cells only when more than ``cells.TIE`` better. ``max_order=2`` allows pairs only;
        with ``max_terms`` a cell must fall in a term the model has."""
        from sklearn.base import clone

        from . import cells as lc
        from .splines import format_level

        inner = clone(self).set_params(cells=False)
        yield from inner.iter_fit(X, y)
        model = inner.model_
        self._loo_error_ = inner._loo_error_
        self.model_ = model
        model.settings = {**model.settings, "cells": True}
        Xf, yraw, names, col = self._data(X, y)
        t = model.transform
        z = transform_response(yraw, t, col)
        A = design_matrix(model, Xf)
        coef = np.asarray(model.coefficients, dtype=float)
        tiny = 1e-9 * max(float(np.ptp(z)), float(np.max(np.abs(z))), 1e-300)
        if not mad_scale(z - A @ coef) > tiny:  # noise-free data: nothing a cell could find that is not noise
            model.notes.append("level cells: the residuals have no spread (noise-free data), so none is looked for")
            return
        robust = model.robust
        working = working_response(A, z, coef, robust["k"], robust["scale"]) if robust else z
        # every parameter, also one the search left out: a cell can act where no curve does
        text = {p: (b.kind == "categorical" and not b.numeric_levels) if (b := model.bases.get(p)) is not None
                else Xf[p].to_numpy().dtype.kind in "OUSb" for p in names}
        groups = {frozenset(tt) for tt, _ in model.columns}
        allowed = (lambda ps: frozenset(ps) in groups) if self.max_terms is not None else None
        cand = lc.candidates({p: Xf[p].to_numpy() for p in names}, text,
                             orders=(2,) if self.max_order == 2 else (2, 3), allowed=allowed)
        C, desc = cand.columns, cand.conditions
        base = float(np.mean(self._loo_errors(A, working, yraw, t, z)))
        scores = {"without cells": base}
        passes: list[tuple[str, list[int], np.ndarray, np.ndarray]] = []  # (name, cells, design, response)
        w = working
        total = lc.ROUNDS if robust else 1
        for r in range(1, total + 1):
            chosen = lc.select(A, w, C) if C.shape[1] else []
            if not chosen:
                break
            A2 = np.column_stack([A, C[:, chosen]])
            name = f"{len(chosen)} cell{'s' if len(chosen) != 1 else ''}" + (f", pass {r} of {total}" if robust else "")
            scores[name] = float(np.mean(self._loo_errors(A2, w, yraw, t, z)))
            passes.append((name, chosen, A2, w))
            if not robust:
                break
            w = _pseudo_observations(A2 @ np.linalg.lstsq(A2, w, rcond=None)[0], z, t, tiny)
            if w is None:
                break
        best = min(passes, key=lambda c: scores[c[0]]) if passes else None  # ties: the earliest pass
        kept = best is not None and scores[best[0]] < base * (1 - lc.TIE)
        m = C.shape[1]
        passing = f"pass{'es' if m == 1 else ''} the F-test at {lc.ALPHA:g}/{max(m, 1)}"
        if kept:
            name, chosen, A2, w = best
            labels = [lc.label(desc[j], format_level) for j in chosen]
            model, extra = self._with_cells(model, A2, w, z, [desc[j] for j in chosen], text, Xf)
            self._loo_error_ = scores[name]
            which = f" (selection pass {name.split(' pass ')[1]})" if robust else ""
            note = (f"level cells: {len(chosen)} of {m} candidate cell{'s' if m != 1 else ''} "
                    f"{'pass' if len(chosen) != 1 else 'passes'} the F-test at {lc.ALPHA:g}/{m}{which} and "
                    f"{'predict' if len(chosen) != 1 else 'predicts'} the rows left out better: {'; '.join(labels)}. "
                    f"{extra}")
        elif passes:
            note = (f"level cells: cells pass the F-test but do not predict the rows left out {lc.TIE:.0%} better; "
                    f"none is kept")
        elif m:
            note = f"level cells: none of {m} candidate cell{'s' if m != 1 else ''} {passing}"
        elif allowed is not None and not any(len(g) > 1 for g in groups):
            note = ("level cells: none looked for: with max_terms a cell may only join one of the model's "
                    "interaction terms, and it has none")
        else:
            note = ("level cells: no combination of two or three levels holds for at least "
                    f"{lc.MIN_ROWS} training rows and fails for as many")
        if cand.too_many_levels:
            note += (f"; left out for having more than {lc.MAX_CELL_LEVELS} levels: "
                     f"{', '.join(cand.too_many_levels)}")
        if cand.truncated:
            note += ("; the candidates were cut short by the limits cell_bytes / cell_work or "
                     f"{lc.MAX_CANDIDATES:,} columns (pairs first)")
        model.notes = list(model.notes) + [note]
        step = TraceStep(len(model.trace) + 1, "cells", "loo_error", scores, {},
                         best[0] if kept else "without cells", kept, self._loo_error_, list(model.terms),
                         model.r2, model.adj_r2)
        model.trace = list(model.trace) + [step.to_dict()]
        self.model_ = model
        yield step

    def _with_cells(self, model: StepwiseModel, A: np.ndarray, working: np.ndarray, z: np.ndarray,
                    chosen: list[tuple], text: Mapping[str, bool], X: pd.DataFrame) -> tuple[StepwiseModel, str]:
        """*model* with the chosen cells as more columns (:mod:`.cells`), refitted by least squares on its
        working response *working*; *A* is its design with the cells' columns last. A categorical
        parameter's level other than the first is its own level column; any other level gets a cell
        column in the basis. A parameter the search left out enters with a basis whose own column no
        model column uses, and with its training range in the support. Returns (model, a sentence
        with the fit's figures after the cells)."""
        import copy

        m = copy.deepcopy(model)
        for conds in chosen:
            idx = []
            for p, lvl in conds:
                if p not in m.bases:
                    m.bases[p] = make_basis(p, X[p].to_numpy(), 0, categorical=True if text[p] else False)
                b = m.bases[p]
                v = str(lvl) if text[p] else float(lvl)
                own = [str(x) if text[p] else float(x) for x in b.levels] if b.kind == "categorical" else []
                if v in own[1:]:  # the level's own column is this indicator
                    idx.append(own.index(v) - 1)
                    continue
                if v not in b.cells:
                    b.cells.append(v)
                idx.append(b.own_width + b.cells.index(v))
            params = [p for p, _ in conds]
            m.columns.append((params, idx))
            m.column_labels.append(" * ".join(f"[{m.bases[p].column_names[i]}]" for p, i in zip(params, idx)))
            if frozenset(params) not in {frozenset(u.split(":")) for u in m.terms}:
                m.terms.append(term_name(params))
        if m.support is not None and set(m.bases) - set(m.support.params):
            m.support = Support.build(X, m.bases, list(m.support.seen))
        coef = np.linalg.lstsq(A, working, rcond=None)[0]
        m.coefficients = coef.tolist()
        fitted = A @ coef
        data_rss = float(np.sum((z - fitted) ** 2))
        data_r2 = _r2(data_rss, float(np.sum((z - z.mean()) ** 2)))
        if m.robust:  # R² of its own working response, as its coefficient table reports it
            m.robust = {**m.robust, "scale": mad_scale(z - fitted)}
            working = working_response(A, z, coef, m.robust["k"], m.robust["scale"])
        rss, tss = float(np.sum((working - fitted) ** 2)), float(np.sum((working - working.mean()) ** 2))
        m.r2, m.adj_r2 = _r2(rss, tss), _adj_r2(rss, tss, z.size, A.shape[1])
        m.noise = ols_noise(A, data_rss)
        if m.robust:
            on = "" if m.transform == "none" else f" on the {m.transform} scale"
            extra = (f"With them the residual scale is {m.robust['scale']:.3g}{on} and R² is {fmt_r2(m.r2)} on the "
                     f"pseudo-observations, {fmt_r2(data_r2)} on the data (the robust fit's figures above are "
                     f"before the cells)")
        else:
            extra = f"With them R² is {fmt_r2(m.r2)}"
        return m, extra

    def _robust_score(self, model: StepwiseModel, A: np.ndarray, z: np.ndarray, y: np.ndarray,
                      pseudo: bool) -> tuple[float, float, np.ndarray, np.ndarray]:
        """How well a candidate of the robust fit predicts its rows left out: the mean leave-one-out
        error on the response scale, scored as :meth:`_loo` scores (the transform and the pruning
        are chosen by the same figure), from the hat values of its design applied to its working
        response (the data for the least-squares model, its pseudo-observations for a Huber round).
        *A* is its design on the training rows. Returns (score, MAD scale of its residuals, working
        response, design)."""
        coef = np.asarray(model.coefficients, dtype=float)
        s = mad_scale(z - A @ coef)
        working = working_response(A, z, coef, ROBUST_K, s) if pseudo and s > 0 else z
        return float(np.mean(self._loo_errors(A, working, y, model.transform, z))), s, working, A

    def _loo_errors(self, A: np.ndarray, working: np.ndarray, y: np.ndarray, transform: str,
                    z: np.ndarray) -> np.ndarray:
        """Leave-one-out errors of least squares on *working* with the columns *A* (exact from the hat
        values), bounded as predictions are and compared with *y* as :meth:`_loo` compares them."""
        zl = loo_predictions(ordered_basis(A), working)
        lo_z, hi_z = float(z.min()), float(z.max())
        w = (hi_z - lo_z) * (self.bound_margin if self.bound_margin is not None else 1e6)
        lo, hi = _FINITE_Z[transform]
        zl = np.clip(zl, max(lo, lo_z - w), min(hi, hi_z + w))
        err = np.abs(inverse_transform(zl, transform) - y)
        return err / y if np.all(y > 0) else err

    def _loo(self, st: _OLSState, z: np.ndarray, y: np.ndarray, marks: list[tuple[int, int, int]],
             floor: int) -> list[tuple[tuple[int, int, int], float, float]]:
        """(mark, leave-one-out error, RSS) for every prefix of the selection path with more than
        *floor* terms. The leave-one-out predictions of a least-squares fit are exact from the
        hat values (z − e/(1 − h); a row of leverage 1 is predicted by the prefix before the column that
        reaches it alone, :func:`.fitted.loo_predictions`, not by its own value); they are bounded as predictions
        are, back-transformed, and scored by their mean relative error (mean absolute error when the
        response has zeros or negative values), so scores of different response transforms compare."""
        q = st.q
        c = q.T @ z
        lo_z, hi_z = float(z.min()), float(z.max())
        w = (hi_z - lo_z) * (self.bound_margin if self.bound_margin is not None else 1e6)
        lo, hi = _FINITE_Z[self.response_transform]
        lo, hi = max(lo, lo_z - w), min(hi, hi_z + w)
        relative = bool(np.all(y > 0))
        out = []
        for mark in marks:
            r = mark[2]
            if mark[0] <= floor:
                continue
            e = z - q[:, :r] @ c[:r]
            zl = np.clip(loo_predictions(q[:, :r], z, c[:r]), lo, hi)
            err = np.abs(inverse_transform(zl, self.response_transform) - y)
            out.append((mark, float(np.mean(err / y if relative else err)), float(e @ e)))
        return out

    def _prune(self, st: _OLSState, z: np.ndarray, y: np.ndarray, marks: list[tuple[int, int, int]],
               terms: list[str], columns: list, n_forced: int, step_no: int) -> TraceStep | None:
        """Keep the prefix of the selection path with the lowest leave-one-out error (:meth:`_loo`).

        Every accepted term is a point on the path; every prefix with at least one searched term
        (forced terms always stay) is scored. Terms after the best prefix are dropped (``terms``
        and ``columns`` are shortened in place). The F-test asks whether a term is real; this asks
        whether the rows at hand estimate it well enough to predict better with it than without
        (BFS on the built-in simulator: 155 columns from 300 rows pass p < 0.001, and the
        prefix of 109 predicts better). Sets ``_loo_error_`` to the kept prefix's score."""
        path = self._loo(st, z, y, marks, n_forced)
        if not path:
            return None
        self._loo_error_ = min(err for _, err, _ in path)
        if len(path) < 2:
            return None
        scores = {f"through {terms[m[0] - 1]}": err for m, err, _ in path}
        keep, err, rss = min(path, key=lambda p: p[1])
        label = f"through {terms[keep[0] - 1]}"
        pruned = keep[0] < len(terms)
        if pruned:
            del terms[keep[0]:]
            del columns[keep[1]:]
        return TraceStep(step_no, "prune", "loo_error", scores, {}, label, pruned, err, list(terms),
                         _r2(rss, st.tss), _adj_r2(rss, st.tss, z.size, keep[2]))

    def _info(self, rss: float, n: int, rank: int) -> float:
        pen = 2.0 if self.criterion == "aic" else math.log(n)
        return -2.0 * _llf(rss, n) + pen * rank

    def _score(self, rss: float, st: _OLSState, rank: int, n: int, added: int) -> float:
        if self.criterion == "adjr2":
            return _adj_r2(rss, st.tss, n, rank)
        if self.criterion in ("aic", "bic"):
            return self._info(rss, n, rank)
        from scipy import stats

        dof = n - rank
        if rss <= 0:
            return 0.0
        f = ((st.rss - rss) / added) / (rss / dof)
        return float(stats.f.sf(f, added, dof))

    def _finish(self, X, cols, z, bases, columns, terms, st, names, response, notes) -> StepwiseModel:
        """Coefficients of the selected columns by least squares on the cached basis blocks."""
        A = _design(cols, columns, z.size)
        labels = ["Intercept"] + [" * ".join(bases[p].column_names[i] for p, i in zip(t, lab)) for t, lab in columns]
        coef, *_ = np.linalg.lstsq(A, z, rcond=None)
        fitted = A @ coef
        rss = float(np.sum((z - fitted) ** 2))
        used = sorted({p for t, _ in columns for p in t}, key=names.index)
        used_bases = {p: bases[p] for p in used}
        inter = list(dict.fromkeys(tuple(t) for t, _ in columns if len(t) > 1))
        settings = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.get_params().items()
                    if k not in ("params",)}
        r2 = _r2(rss, st.tss)
        notes = [note for note in notes if note.split(":")[0] in used_bases]
        saturated = saturation_warning(A.shape[1], int(z.size), r2)
        if saturated:
            notes.append(saturated)
        return StepwiseModel(
            response=response, transform=self.response_transform, interactions=self.interactions,
            bases=used_bases, columns=[(list(t), list(lab)) for t, lab in columns],
            column_labels=labels, coefficients=coef.tolist(), terms=list(terms), n=int(z.size),
            r2=r2, adj_r2=_adj_r2(rss, st.tss, z.size, A.shape[1]), settings=settings,
            support=Support.build(X, used_bases, inter), z_range=(float(z.min()), float(z.max())),
            bound_margin=None if self.bound_margin is None else float(self.bound_margin),
            notes=notes, unseen=self.unseen, noise=ols_noise(A, rss),
        )



def _pseudo_observations(fitted: np.ndarray, z: np.ndarray, transform: str, tiny: float) -> np.ndarray | None:
    """Huber's pseudo-observations of a fit (Huber 1981, §7.8): the fitted values plus the residuals,
    centred on their median (a fit pulled up by slow rows first moves to the bulk of them), clipped at
    ``ROBUST_K`` times their MAD scale, divided by the share inside (:func:`.fitted.huber_residuals`);
    non-negative on the square-root scale. None when the residuals have no spread above *tiny*."""
    e = z - fitted
    s = mad_scale(e)
    if not s > tiny:
        return None
    zs = fitted + float(np.median(e)) + huber_residuals(e, ROBUST_K, s)
    return np.maximum(zs, 0.0) if transform == "sqrt" else zs


SATURATION = 0.5  # coefficients per training row from which a fit is called near-saturated


def saturation_warning(n_coef: int, n_rows: int, r2: float | None = None) -> str | None:
    """A warning when a model has at least SATURATION coefficients per training row: it can follow its
    own data (R² near 1) whatever it does between them, so only held-out points judge it."""
    if n_rows <= 0 or n_coef < SATURATION * n_rows:
        return None
    fit = f" (R² {fmt_r2(r2)} on them)" if r2 is not None and np.isfinite(r2) else ""
    return (f"{n_coef} coefficients on {n_rows} training rows{fit}: the model is close to interpolating its data, "
            f"so its R² says little. Judge it on held-out points (Accuracy page, gpudse validate), draw more "
            f"samples, or raise the search's thresholds (θ, φ).")


def check_response(data: pd.DataFrame, response: str) -> None:
    """The response column is there and is not a True/False column (which would be fitted as 1/0)."""
    from ..dataio import is_boolean_column

    if response not in data.columns:
        hint = suggest(str(response), list(map(str, data.columns)))
        raise FitError(f"response column {response!r} is not in the data" + (f" (did you mean {hint!r}?)" if hint else "")
                       + f"; columns: {', '.join(map(str, data.columns))}")
    if is_boolean_column(data[response]):
        raise FitError(f"response column {response!r} holds True/False values, not a measurement: a model of it would "
                       f"fit them as 1/0; choose a numeric column as the response")


def fit_stepwise(data: pd.DataFrame, response: str, callback: Callable[[TraceStep], None] | None = None,
                 transform: str | None = None, **kw: Any) -> StepwiseModel:
    """Fit Algorithm 1 on a results table; returns the model (its ``trace`` holds every step).

    ``transform`` is the response transform (``response_transform`` of the estimator)."""
    check_response(data, response)
    if transform is not None:
        kw["response_transform"] = transform
    return note_constant_response(StepwiseRegression(response=response, **kw).fit(data, callback=callback).model_,
                                  data, response)
