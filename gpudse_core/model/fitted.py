"""The fitted spline model: prediction (guarded), additive terms, equation, and its JSON file.

A :class:`StepwiseModel` is what :mod:`gpudse_core.model.stepwise` (Stargazer Algorithm 1) returns:
per-parameter bases (:mod:`.splines`, applied to RAW values), the model columns — each the product
of one basis column of one, two or three parameters — and the least-squares coefficients on the
transformed response scale. Its predictions are guarded:

* :meth:`StepwiseModel.linear_predictor` — the transformed-scale prediction, unbounded; with
  ``unseen="lower-order"`` (the robust default) an interaction term that has doubly non-linear
  columns (a full tensor part, which can take any value in a combination of levels the training
  rows never showed) gives, in such an unseen combination, its lower-order fit instead: the sum of
  its (d − 1)-way margins fitted by least squares to the term's values on the seen combinations
  (:meth:`StepwiseModel.unseen_corrections`). Points where that happens are flagged by
  ``extrapolation`` as not seen in training;
* :meth:`StepwiseModel.bound` — clips to the training response range widened on each side by
  ``bound_margin`` × its width (default 0.25; ``None`` turns bounding off, leaving only a clip
  to the range where the inverse transform is finite; a positive response on the sqrt or raw scale is
  bounded below as the log scale would bound it, never at 0), and says which values were clipped;
* :meth:`StepwiseModel.guarded` — the bounded value, and at a point outside the training support
  (:mod:`.support`) of a model that keeps its training designs (``neighbours``, the robust default) that
  value held to the range of the responses of the point's nearest training designs (:mod:`.envelope`);
* :meth:`StepwiseModel.predict` — the inverse transform of the guarded value: never inf or NaN;
* :meth:`StepwiseModel.predict_details` — value, ``bounded`` flag and an ``extrapolation`` reason
  from the training support (:mod:`.support`);
* :meth:`StepwiseModel.additive_terms` — the model as an intercept plus one table per term over
  given levels of its parameters: what the exact whole-space optimiser and the dashboard use.

Model files are plain JSON read through :func:`gpudse_core.safeload.load_json`; every field is
validated (:meth:`StepwiseModel.from_dict`) and any problem is a :class:`FitError` naming it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..choices import INTERACTION_FORMS, TRANSFORMS
from ..errors import GpudseError
from ..jsonutil import finite_number, json_default
from .envelope import K as NEIGHBOURS
from .envelope import Neighbours
from .fallback import Fallback
from .splines import Basis
from .support import Support

MODEL_SCHEMA = "gpudse.model/2"
READABLE_SCHEMAS = (MODEL_SCHEMA, "gpudse.model/1")  # /1: no support, no bound, linear scales only
DEFAULT_BOUND_MARGIN = 0.25
UNSEEN = ("model", "lower-order")
# trace steps that add a term (the others: "prune" drops a tail of the path, "transform" records
# the response transform chosen by response_transform="auto", "robust" the Huber reruns)
# how a term with a full tensor part predicts an unseen combination
TERM_STEPS = ("forced", "initial", "main", "lookahead", "interaction", "interaction3", "nonlinear", "revisit")
FILL_CELLS = 1 << 18  # largest term table (combinations of levels) the lower-order fill handles
COEF_LIMIT = 1e300  # no sensible transformed-scale model has a coefficient near the float range
# the transformed-scale values whose inverse is finite (exp overflows above 709.78)
_FINITE_Z = {"log": (-745.0, 709.0), "sqrt": (0.0, 1e154), "none": (-1e300, 1e300)}


class FitError(GpudseError):
    """The data cannot be fitted, or a model file is unusable (bad responses, unknown columns …)."""


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


def term_name(params: Sequence[str]) -> str:
    return ":".join(params)


def design_matrix(model: "StepwiseModel", X: pd.DataFrame) -> np.ndarray:
    """The model's columns (intercept first) evaluated on *X* (Lee & Brooks eq. 2's design)."""
    X = model._with_derived(X)
    evaluated = {p: b.evaluate(X[p].to_numpy(), unseen="average") for p, b in model.bases.items()}
    out = np.empty((len(X), len(model.columns) + 1))
    out[:, 0] = 1.0
    for k, (t, lab) in enumerate(model.columns):
        c = evaluated[t[0]][:, lab[0]].copy()
        for p, i in zip(t[1:], lab[1:]):
            c *= evaluated[p][:, i]
        out[:, k + 1] = c
    return out


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
    support: Support | None = None
    z_range: tuple[float, float] | None = None  # training response range on the transformed scale
    bound_margin: float | None = DEFAULT_BOUND_MARGIN
    notes: list[str] = field(default_factory=list)
    unseen: str = "model"
    # the residual spread for prediction intervals (model.intervals): {"sigma": residual standard
    # error, "df": residual degrees of freedom, "root": W (columns × rank) with (X'X)^+ = W W'}
    noise: dict | None = None
    # a Huber fit (StepwiseRegression(robust="huber")): {"method": "huber", "k": ψ's clipping point in
    # scales, "scale": the residuals' MAD scale, "rounds": searches rerun}; None: least squares
    robust: dict | None = None
    # derived quantities among the parameters (name → expression over the others, :mod:`.derived`): computed on
    # the points predicted when they lack the column
    derived: dict = field(default_factory=dict)
    # the training designs and their transformed responses (:mod:`.envelope`): a prediction outside the
    # support is held to the range of its nearest ones; None (the paper model, older files): not held
    neighbours: Neighbours | None = None
    # the forest blended in where the equation's training rows do not pin it down (:mod:`.fallback`); None: the
    # equation alone (the paper model, ``blend="off"``, older files)
    fallback: Fallback | None = None
    _fill: list | None = field(default=None, init=False, repr=False, compare=False)  # cache

    kind = "stepwise"

    @property
    def parameters(self) -> list[str]:
        return list(self.bases)

    # -- the model as a sum of terms --
    def term_groups(self) -> list[tuple[tuple[str, ...], list[int]]]:
        """Model columns grouped by the set of parameters they involve, in order of first appearance;
        each group's params tuple is the order of its first column."""
        groups: dict[frozenset, tuple[tuple[str, ...], list[int]]] = {}
        for k, (t, _) in enumerate(self.columns):
            groups.setdefault(frozenset(t), (tuple(t), []))[1].append(k)
        return list(groups.values())

    def additive_terms(self, levels: Mapping[str, Any]) -> tuple[float, list[tuple[tuple[str, ...], np.ndarray]]]:
        """The transformed-scale prediction as ``intercept + Σ table[…]`` over the given *levels*
        (raw values) of each parameter: one table per term group, of shape
        ``(len(levels[p]) for p in params)``, unbounded. A text level not seen in training gets the
        average of the levels' rows (:meth:`Basis.evaluate` with ``unseen="average"``)."""
        coef = np.asarray(self.coefficients, dtype=float)
        evaluated = {}
        for p, b in self.bases.items():
            if p in levels:
                evaluated[p] = b.evaluate(np.asarray(levels[p]).ravel(), unseen="average")
        out = []
        letters = "abc"
        for t, ks in self.term_groups():
            missing = [p for p in t if p not in evaluated]
            if missing:
                raise FitError(f"levels are missing for parameter(s) {', '.join(map(repr, missing))} the model uses")
            operands, subs = [], []
            for pos, p in enumerate(t):
                # column k's factor for parameter p (columns of one group may list params in any order)
                idx = [self.columns[k][1][self.columns[k][0].index(p)] for k in ks]
                m = evaluated[p][:, idx]
                if pos == 0:
                    m = m * coef[np.asarray(ks) + 1]
                operands.append(m)
                subs.append(f"{letters[pos]}k")
            table = np.einsum(",".join(subs) + "->" + letters[:len(t)], *operands, optimize=len(t) > 2)
            out.append((t, table))
        return float(coef[0]), out

    def linear_predictor(self, X: pd.DataFrame) -> np.ndarray:
        """Prediction on the transformed scale, unbounded. Each term is tabulated over the distinct
        values (or value combinations) of its parameters and gathered: no n × p design matrix."""
        X = self._with_derived(X)
        missing = [p for p in self.bases if p not in X.columns]
        if missing:
            raise FitError(f"the points lack column(s) {', '.join(map(repr, missing))} that the model uses")
        codes, uniq = {}, {}
        for p, b in self.bases.items():
            codes[p], uniq[p] = _codes(X[p], p, numeric=b.kind != "categorical" or b.numeric_levels)
        try:
            intercept, tables = self.additive_terms(uniq)
        except GpudseError as e:
            if isinstance(e, FitError):
                raise
            raise FitError(str(e)) from None
        out = np.full(len(X), intercept)
        with np.errstate(over="ignore", invalid="ignore"):
            for t, table in tables:
                out += table[tuple(codes[p] for p in t)]
            if self.unseen == "lower-order" and self.support is not None:
                for t, corr in self.unseen_corrections():
                    cells = [self.support.params[p].cells(X[p].to_numpy())[0] for p in t]
                    ok = np.all([c >= 0 for c in cells], axis=0)
                    out[ok] += corr[tuple(c[ok] for c in cells)]
        return out

    def unseen_corrections(self) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """Per interaction term with doubly non-linear columns whose support records unseen level
        combinations: (its parameters, a table over their training levels that is 0 on the seen
        combinations and, on the unseen ones, the term's lower-order fit minus its own value).

        Why: a restricted term (at most one non-linear factor per column) is smooth enough that
        its value in an unseen combination follows from the seen ones; a full tensor part can
        interpolate a step in two parameters at once (ray tracing's texture cache × block count) but
        in a combination it never saw it is unconstrained (up to 20 % off on the built-in RAY
        kernel from 300 rows). The lower-order fit keeps every (d − 1)-way pattern of the term and
        assumes no further interaction in that one combination, which is Algorithm 1's own
        hierarchy (docs/models.md "Regression choices"). Computed once per model and cached."""
        if self._fill is None:
            self._fill = self._corrections()
        return self._fill

    def _corrections(self) -> list[tuple[tuple[str, ...], np.ndarray]]:
        sup = self.support
        if sup is None:
            return []
        coef = np.asarray(self.coefficients, dtype=float)
        groups: dict[frozenset, list[int]] = {}
        for k, (t, lab) in enumerate(self.columns):
            if len(t) > 1:
                groups.setdefault(frozenset(t), []).append(k)
        out = []
        for key, ks in groups.items():
            doubly = any(sum(i not in self.bases[p].linear_columns for p, i in zip(*self.columns[k])) >= 2
                         for k in ks)
            t = next((u for u in sup.seen if frozenset(u) == key), None)
            if not doubly or t is None or any(sup.params[p].kind == "bins" for p in t):
                continue
            shape = tuple(sup.params[p].size for p in t)
            seen = sup.seen[t].reshape(shape)
            if seen.all() or not seen.any() or seen.size > FILL_CELLS:
                continue
            ev = {p: self.bases[p].evaluate(_support_levels(sup.params[p]), unseen="average") for p in t}
            table = np.zeros(shape)
            for k in ks:
                cols, lab = self.columns[k]
                term = np.asarray(coef[k + 1])
                for pos, p in enumerate(t):
                    v = ev[p][:, lab[cols.index(p)]]
                    term = np.multiply.outer(term, v) if pos else term * v
                table += term
            corr = np.where(seen, 0.0, _lower_order_fit(table, seen) - table)
            out.append((tuple(t), corr))
        return out

    # -- guarded prediction --
    def bounds(self) -> tuple[float, float]:
        """The interval :meth:`bound` clips to (transformed scale)."""
        lo, hi = _FINITE_Z[self.transform]
        if self.bound_margin is not None and self.z_range is not None:
            a, b = self.z_range
            w = (b - a) * self.bound_margin
            lo, hi = max(lo, a - w), min(hi, b + w)
            if self.transform != "log" and a > 0:  # a positive response is never predicted at or below 0:
                lo = max(lo, _positive_floor(a, b, self.transform, self.bound_margin))  # the log scale's bound
        return lo, hi

    def bound(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(z clipped to :meth:`bounds`, mask of the values that were clipped). NaN (only from absurd
        inputs) becomes the middle of the interval and is flagged."""
        z = np.asarray(z, dtype=float)
        lo, hi = self.bounds()
        nan = np.isnan(z)
        mask = nan | (z < lo) | (z > hi)
        out = np.clip(np.where(nan, (lo + hi) / 2, z), lo, hi)
        return out, mask

    def guarded(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the guarded prediction on the transformed scale, mask of the values :meth:`bound` clipped or the
        envelope held, mask of the values held): :meth:`bound`, then at the points outside the support
        the clip to the responses of the ``NEIGHBOURS`` nearest training designs (:mod:`.envelope`); at a
        point outside only by a union of overlapping terms (:func:`.support.joint_combinations`) the clip
        from below only (off with the bound, ``bound_margin`` None, and for a model without ``neighbours``).
        A model with a forest (:mod:`.fallback`) instead gives the forest's prediction at the points outside the
        support, unseen corners of overlapping terms included (flagged as held), and elsewhere the bounded
        equation blended with the forest by the design's leverage; the mask still says where the equation was
        clipped."""
        X = self._with_derived(X)
        z, mask = self.bound(self.linear_predictor(X))
        held = np.zeros(z.shape, dtype=bool)
        blend = self.fallback is not None and self.noise is not None
        guard = self.bound_margin is not None and self.support is not None
        envelope = guard and self.neighbours is not None
        if not z.size or not (blend or envelope):
            return z, mask, held
        # the blend, the support and the envelope read only the model's parameters: each computed once per
        # distinct design of them (on the whole Stargazer space, 540 of 933,120 for bfs's five parameters)
        groups, first = self._distinct(X)
        U = X.iloc[first]
        own, joint = self.support.outside_parts(U) if guard else (np.zeros(len(U), dtype=bool),) * 2
        if blend:  # outside the support (unseen corners of overlapping terms included) the forest alone: an
            # average of training responses needs no envelope, and is never faster than the fastest of them;
            # elsewhere the equation blended with it by leverage (docs/models.md, "Leverage-weighted forest": the
            # envelope's neighbours held unseen corners up to 37 % off where the forest was within 2 %)
            outside = own | joint
            z = self.fallback.blend(self, U, z[first], forest_only=outside)[groups]
            held = outside[groups]
            return z, mask | held, held
        out = np.flatnonzero(own | joint)
        if out.size:
            lo, hi = np.full(len(U), -np.inf), np.full(len(U), np.inf)
            lo[out], hi[out] = self.neighbours.envelope(U.iloc[out], self.bases)
            # a combination only a union of overlapping terms never saw is held from below only: its
            # optimistic prediction (faster than every neighbour) is what a recommendation lands on, and
            # holding it from above too clipped true extremes (docs/models.md, "Unseen corners")
            hi[joint] = np.inf
            kept = np.clip(z, lo[groups], hi[groups])
            held = kept != z
            z = kept
        return z, mask | held, held

    def design(self, X: pd.DataFrame) -> np.ndarray:
        """The model's columns evaluated on *X* (:func:`design_matrix`)."""
        return design_matrix(self, X)

    def _distinct(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(each row's group of equal values of the model's parameters, the first row of each group)."""
        cols = list(self.bases)
        groups = (X[cols].groupby(cols, sort=False, dropna=False).ngroup().to_numpy() if len(X) > 1
                  else np.zeros(len(X), dtype=int))
        return groups, np.unique(groups, return_index=True)[1]

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted response on the original scale: the inverse transform of the guarded linear
        predictor (:meth:`guarded`). Never inf or NaN."""
        return inverse_transform(self.guarded(X)[0], self.transform)

    def extrapolation(self, X: pd.DataFrame) -> np.ndarray:
        """Per row: "" inside the training support, else why not (see :mod:`.support`)."""
        if self.support is None:
            return np.full(len(X), "", dtype=object)
        return self.support.reasons(self._with_derived(X))

    def _with_derived(self, X: pd.DataFrame) -> pd.DataFrame:
        if not self.derived:
            return X
        from .derived import add_columns

        try:
            return add_columns(X, self.derived)
        except GpudseError as e:
            raise FitError(str(e)) from None

    def predict_details(self, X: pd.DataFrame) -> pd.DataFrame:
        """``predicted``, ``bounded`` (the bound or the neighbour envelope was applied) and ``extrapolation``
        per row (why the point lies outside the support; where the envelope held the prediction, it says so)."""
        z, mask, held = self.guarded(X)
        why = self.extrapolation(X)
        if held.any():
            why = why.copy()
            note = (f"prediction held to the responses of the {NEIGHBOURS} nearest training designs"
                    if self.fallback is None else "predicted by the model's forest alone")
            why[held] = [f"{w}; {note}" if w else note for w in why[held]]
        return pd.DataFrame({"predicted": inverse_transform(z, self.transform), "bounded": mask,
                             "extrapolation": why}, index=X.index)

    # -- summaries --
    def contributions(self) -> list[tuple[str, float]]:
        """R² gained by each accepted term in selection order (the data of Stargazer Fig. 3). For a
        Huber fit (``robust``) these are the gains of its last search, on its pseudo-observations."""
        out, last = [], 0.0
        for step in self.trace:
            if step.get("kind") == "prune":  # the terms after the kept prefix were dropped
                kept = set(step.get("terms") or [])
                out = [(t, g) for t, g in out if t in kept]
                continue
            if step.get("kind") == "cells" and step.get("accepted") and step.get("r2") is not None:
                out.append((self._cells_term(step), step["r2"] - last))  # Lee & Brooks' cells: their own bar
                last = step["r2"]
                continue
            if step.get("kind") not in TERM_STEPS:
                continue
            if step.get("accepted") and step.get("chosen"):
                out.append((step["chosen"], step["r2"] - last))
                last = step["r2"]
        return out

    def _cells_term(self, step: dict) -> str:
        """The name of an accepted level-cells step: its cells, e.g. ``level cells: [a=80] * [flag=1]``
        (the cell columns are the model's last ones, as many as the step's "k cells" says)."""
        try:
            k = int(str(step["chosen"]).split()[0])
        except (ValueError, IndexError):
            k = 0
        labels = list(self.column_labels[-k:]) if 0 < k <= len(self.column_labels) else []
        return "level cells: " + ", ".join(labels) if labels else "level cells"

    def equation(self, digits: int = 6) -> str:
        """The fitted equation with each spline written as truncated cubics, as ``rms::Function`` does; an
        ``ns`` spline (Stargazer 1.0) by its columns, with R's call that makes them on following lines."""
        coef = self.coefficients
        lhs = {"none": self.response, "log": f"log({self.response})", "sqrt": f"sqrt({self.response})"}[self.transform]
        parts = [f"{coef[0]:.{digits}g}"]

        def spline_text(b: Basis, col: int) -> str:
            if col == b.pow2_column or b.is_cell_column(col):
                return f"[{b.column_names[col]}]"
            if b.kind != "rcs" or col == 0:
                return b.column_names[col] if b.kind != "categorical" else f"[{b.column_names[col]}]"
            t = b.knots
            k = len(t)
            j = col - 1
            s = (t[-1] - t[0]) ** 2 if b.norm == "harrell" else 1.0
            a1 = 1 / s
            a2 = -(t[-1] - t[j]) / (t[-1] - t[-2]) / s
            a3 = (t[-2] - t[j]) / (t[-1] - t[-2]) / s
            x = b.label
            return (f"({a1:.{digits}g}*pmax({x}-{t[j]:g},0)^3 {a2:+.{digits}g}*pmax({x}-{t[k - 2]:g},0)^3 "
                    f"{a3:+.{digits}g}*pmax({x}-{t[k - 1]:g},0)^3)")

        for k, (t, lab) in enumerate(self.columns):
            c = coef[k + 1]
            term = "*".join(spline_text(self.bases[p], i) for p, i in zip(t, lab))
            parts.append(f"{'-' if c < 0 else '+'} {abs(c):.{digits}g}*{term}")
        ns = [f"ns({b.label}) = splines::ns({b.label}, knots = "
              f"c({', '.join(f'{t:.{digits}g}' for t in b.knots[1:-1])}), Boundary.knots = c({b.knots[0]:.{digits}g}, "
              f"{b.knots[-1]:.{digits}g}))"
              for b in self.bases.values() if b.kind == "ns"]
        return f"{lhs} = " + " ".join(parts) + "".join(f"\n  where {w}" for w in ns)

    # -- JSON --
    def to_dict(self) -> dict:
        d = {
            "schema": MODEL_SCHEMA, "kind": self.kind, "response": self.response, "transform": self.transform,
            "interactions": self.interactions, "bases": [b.to_dict() for b in self.bases.values()],
            "terms": self.terms, "columns": [{"params": t, "index": lab} for t, lab in self.columns],
            "column_labels": self.column_labels, "coefficients": [float(c) for c in self.coefficients],
            "n": self.n, "r2": self.r2, "adj_r2": self.adj_r2, "settings": self.settings, "notes": self.notes,
            "z_range": list(self.z_range) if self.z_range is not None else None, "bound_margin": self.bound_margin,
            "unseen": self.unseen,
            "support": self.support.to_dict() if self.support is not None else None, "trace": self.trace,
        }
        if self.noise is not None:
            d["noise"] = {"sigma": float(self.noise["sigma"]), "df": int(self.noise["df"]),
                          "root": [[float(v) for v in row] for row in self.noise["root"]]}
        if self.derived:
            d["derived"] = dict(self.derived)
        if self.neighbours is not None:
            d["neighbours"] = self.neighbours.to_dict()
        if self.fallback is not None:
            d["fallback"] = self.fallback.to_dict()
        if self.robust is not None:
            d["robust"] = {"method": "huber", "k": float(self.robust["k"]), "scale": float(self.robust["scale"]),
                           "rounds": int(self.robust["rounds"])}
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, default=json_default)

    def save(self, path: Any) -> None:
        from ..atomicfile import write_text

        write_text(path, self.to_json())  # whole or not at all

    @classmethod
    def from_dict(cls, d: Any, source: str = "model") -> StepwiseModel:
        """Validate and load; plain data only (JSON never executes anything). Every problem is a
        :class:`FitError` naming the file and the field."""
        try:
            return cls._from_dict(d, source)
        except FitError:
            raise
        except GpudseError as e:
            raise FitError(f"{source}: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError) as e:
            raise FitError(f"{source}: malformed model file ({type(e).__name__}: {str(e)[:200]})") from None

    @classmethod
    def _from_dict(cls, d: Any, source: str) -> StepwiseModel:
        from .. import limits

        if not isinstance(d, dict):
            raise FitError(f"{source}: not a gpudse model (expected a JSON object)")
        if d.get("schema") not in READABLE_SCHEMAS:
            raise FitError(f"{source}: schema {d.get('schema')!r} is not {MODEL_SCHEMA!r}; refit the model "
                           f"with this version of gpudse")
        if d.get("kind", "stepwise") != "stepwise":
            raise FitError(f"{source}: a {d.get('kind')!r} model, not a stepwise spline model")
        raw_bases, raw_columns, raw_coef = d["bases"], d["columns"], d["coefficients"]
        if not all(isinstance(v, list) for v in (raw_bases, raw_columns, raw_coef)):
            raise FitError(f"{source}: 'bases', 'columns' and 'coefficients' must be lists")
        limits.check("model_columns", len(raw_columns), f"{source}: model columns")
        bases: dict[str, Basis] = {}
        for b in raw_bases:
            basis = Basis.from_dict(b)
            if basis.name in bases:
                raise FitError(f"{source}: parameter {basis.name!r} has two bases")
            bases[basis.name] = basis
        columns = []
        for c in raw_columns:
            if not isinstance(c, dict) or not isinstance(c.get("params"), list) or not isinstance(c.get("index"), list):
                raise FitError(f"{source}: each column needs 'params' and 'index' lists")
            t, lab = c["params"], c["index"]
            if not 1 <= len(t) <= 3 or len(lab) != len(t) or len(set(map(str, t))) != len(t) \
                    or any(not isinstance(p, str) or p not in bases for p in t):
                raise FitError(f"{source}: column {t}/{lab} refers to unknown parameters")
            for p, i in zip(t, lab):
                if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < bases[p].width:
                    raise FitError(f"{source}: basis column {i!r} of {p!r} does not exist")
            columns.append((list(t), list(lab)))
        if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in raw_coef):
            raise FitError(f"{source}: coefficients must be finite numbers")
        coef = [float(c) for c in raw_coef]
        if not all(math.isfinite(c) and abs(c) < COEF_LIMIT for c in coef):
            raise FitError(f"{source}: coefficients must be finite numbers (below {COEF_LIMIT:g} in size); "
                           f"this file has {sum(not (math.isfinite(c) and abs(c) < COEF_LIMIT) for c in coef)} "
                           f"that are not — refit the model")
        if len(coef) != len(columns) + 1:
            raise FitError(f"{source}: {len(coef)} coefficients for {len(columns)} columns (+ intercept)")
        transform, interactions = d["transform"], d["interactions"]
        if transform not in TRANSFORMS or interactions not in INTERACTION_FORMS:
            raise FitError(f"{source}: unknown transform or interaction form")
        labels = d.get("column_labels") or []
        if not isinstance(labels, list) or (labels and len(labels) != len(coef)):
            raise FitError(f"{source}: column_labels must list one label per coefficient")
        terms = d["terms"]
        if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
            raise FitError(f"{source}: terms must be a list of names")
        z_range = d.get("z_range")
        if z_range is not None:
            if not (isinstance(z_range, list) and len(z_range) == 2 and all(finite_number(v) for v in z_range)
                    and z_range[0] <= z_range[1]):
                raise FitError(f"{source}: z_range must be [low, high], two finite numbers (got {z_range!r})")
            z_range = (float(z_range[0]), float(z_range[1]))
        margin = d.get("bound_margin", DEFAULT_BOUND_MARGIN if z_range is not None else None)
        if margin is not None and not (finite_number(margin) and 0 <= margin <= 1e6):
            raise FitError(f"{source}: bound_margin must be a non-negative number or null (got {margin!r})")
        support = Support.from_dict(d["support"], bases) if d.get("support") is not None else None
        unseen = d.get("unseen", "model")
        if unseen not in UNSEEN:
            raise FitError(f"{source}: unseen must be one of {', '.join(UNSEEN)} (got {unseen!r})")
        for key in ("settings",):
            if not isinstance(d.get(key, {}), dict):
                raise FitError(f"{source}: {key} must be an object")
        for key in ("trace", "notes"):
            if not isinstance(d.get(key, []), list):
                raise FitError(f"{source}: {key} must be a list")
        n, r2, adj = d["n"], d["r2"], d.get("adj_r2")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise FitError(f"{source}: n must be a whole number")
        noise = d.get("noise")
        if noise is not None:
            root = noise.get("root") if isinstance(noise, dict) else None
            ok = (isinstance(root, list) and len(root) == len(coef) and all(isinstance(r, list) for r in root)
                  and len({len(r) for r in root}) <= 1 and len(root[0]) <= len(coef)
                  and all(finite_number(v) for r in root for v in r)
                  and finite_number(noise.get("sigma")) and noise["sigma"] >= 0
                  and isinstance(noise.get("df"), int) and not isinstance(noise["df"], bool) and noise["df"] >= 1)
            if not ok:
                raise FitError(f"{source}: noise must be {{'sigma': number >= 0, 'df': whole number >= 1, 'root': "
                               f"one row of numbers per coefficient}}; refit the model")
            noise = {"sigma": float(noise["sigma"]), "df": int(noise["df"]), "root": root}
        from .derived import check_saved

        derived = check_saved(d.get("derived"), list(bases), source)
        robust = d.get("robust")
        if robust is not None:
            ok = (isinstance(robust, dict) and robust.get("method") == "huber"
                  and finite_number(robust.get("k")) and 0 < robust["k"] <= 1e6
                  and finite_number(robust.get("scale")) and 0 <= robust["scale"] <= 1e300
                  and isinstance(robust.get("rounds"), int) and not isinstance(robust["rounds"], bool)
                  and 0 <= robust["rounds"] <= 1000)
            if not ok:
                raise FitError(f"{source}: robust must be {{'method': 'huber', 'k': number > 0, 'scale': number >= 0, "
                               f"'rounds': whole number}} or absent; refit the model")
            robust = {"method": "huber", "k": float(robust["k"]), "scale": float(robust["scale"]),
                      "rounds": int(robust["rounds"])}
        neighbours = Neighbours.from_dict(d["neighbours"], bases) if d.get("neighbours") is not None else None
        fallback = None
        if d.get("fallback") is not None:
            if noise is None:
                raise FitError(f"{source}: a model with a 'fallback' forest needs its 'noise' (the leverage's root); "
                               f"refit the model")
            try:
                fallback = Fallback.from_dict(d["fallback"], list(bases), source)
            except GpudseError as e:
                raise FitError(str(e)) from None
        model = cls(response=str(d["response"]), transform=transform, interactions=interactions,
                    bases=bases, columns=columns, column_labels=[str(x) for x in labels], coefficients=coef,
                    terms=list(terms), n=n, r2=float(r2) if r2 is not None else float("nan"),
                    adj_r2=float(adj) if adj is not None else float("nan"), settings=dict(d.get("settings", {})),
                    trace=list(d.get("trace", [])), support=support, z_range=z_range,
                    bound_margin=None if margin is None else float(margin), notes=[str(x) for x in d.get("notes", [])],
                    unseen=unseen, noise=noise, robust=robust, derived=derived, neighbours=neighbours,
                    fallback=fallback)
        model._check_finite(source)
        return model

    def _check_finite(self, source: str) -> None:
        """Every term must be finite over the training range (else the file is refused)."""
        levels = {}
        for p, b in self.bases.items():
            if b.kind == "categorical":
                levels[p] = np.asarray(b.levels, dtype=float if b.numeric_levels else object)
            else:
                lo = b.lo if b.lo is not None else (2.0 ** b.knots[0] if b.scale == "log2" and b.knots else
                                                    (b.knots[0] if b.knots else 0.0))
                hi = b.hi if b.hi is not None else (2.0 ** b.knots[-1] if b.scale == "log2" and b.knots else
                                                    (b.knots[-1] if b.knots else 1.0))
                grid = np.linspace(lo, hi, 9)
                if b.scale == "log2":
                    grid = np.exp2(np.linspace(np.log2(lo), np.log2(hi), 9))
                levels[p] = grid
        with np.errstate(all="ignore"):
            intercept, tables = self.additive_terms(levels)
            worst = abs(intercept) + sum(float(np.max(np.abs(t))) if t.size else 0.0 for _, t in tables)
        if not math.isfinite(worst) or worst > COEF_LIMIT:
            raise FitError(f"{source}: the coefficients must be finite and give finite predictions over the training "
                           f"range; these overflow — refit the model")

    @classmethod
    def load(cls, path: Any) -> StepwiseModel:
        from pathlib import Path

        from ..safeload import load_json

        p = Path(path)
        try:
            raw = p.read_bytes() if p.stat().st_size <= _max_bytes() else None
        except FileNotFoundError:
            raise FitError(f"{p}: no such model file") from None
        except (IsADirectoryError, PermissionError, OSError) as e:
            raise FitError(f"{p}: cannot read the model file ({e.strerror or e})") from None
        if raw is None:
            raise FitError(f"{p}: larger than the limit for a model file (document_bytes); check it is the right file")
        try:
            d = load_json(raw, source=str(p))
        except GpudseError as e:
            raise FitError(str(e)) from None
        return cls.from_dict(d, source=str(p))


def _positive_floor(a: float, b: float, transform: str, margin: float) -> float:
    """The lower bound (on the *transform* scale, sqrt or none) of a model of a positive response whose
    training range is [a, b] there: the training minimum divided by (max / min) ** margin, as the log
    scale bounds it, so a sqrt or raw-scale model never predicts a time of 0 or below (on a benchmark_hub
    table, a sqrt fit's 25 % margin below the fastest design reached 0 ms)."""
    y_lo, y_hi = (a * a, b * b) if transform == "sqrt" else (a, b)
    floor = y_lo * (y_lo / y_hi) ** margin if y_hi > 0 else y_lo
    return math.sqrt(floor) if transform == "sqrt" else floor


def _max_bytes() -> int:
    from .. import limits

    return limits.current().document_bytes


def _support_levels(ps: Any) -> np.ndarray:
    """The training levels a parameter's support records (its cells), as basis inputs."""
    return np.asarray(ps.levels, dtype=object if ps.kind == "text" else float)


def _lower_order_fit(table: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The least-squares fit of *table* on its *seen* cells by the sum of all its (d − 1)-way
    margins (for a pair: a row and a column effect), evaluated on every cell. Margins no seen
    cell determines get the minimum-norm value (LSQR from zero)."""
    from itertools import combinations

    import scipy.sparse
    import scipy.sparse.linalg

    shape = table.shape
    idx = np.indices(shape).reshape(len(shape), -1)
    blocks, offset = [], 0
    rows = np.arange(idx.shape[1])
    for sub in combinations(range(len(shape)), len(shape) - 1):
        sub_shape = tuple(shape[i] for i in sub)
        code = np.ravel_multi_index(tuple(idx[i] for i in sub), sub_shape) if sub else np.zeros(rows.size, int)
        blocks.append(code + offset)
        offset += int(np.prod(sub_shape)) if sub else 1
    data_cols = np.concatenate(blocks)
    data_rows = np.tile(rows, len(blocks))
    A = scipy.sparse.csr_matrix((np.ones(data_cols.size), (data_rows, data_cols)), shape=(rows.size, offset))
    s = seen.ravel()
    target = table.ravel()[s]
    centre = float(target.mean())
    sol = scipy.sparse.linalg.lsqr(A[s], target - centre, atol=1e-12, btol=1e-12, iter_lim=10 * offset + 100)[0]
    return (A @ sol + centre).reshape(shape)


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


MAD_NORMAL = 0.6744897501960817  # the median absolute deviation of a standard normal variable


def mad_scale(e: np.ndarray) -> float:
    """The residuals' scale as the median absolute deviation from their median, made consistent for
    the normal distribution (Huber's MAD)."""
    return float(np.median(np.abs(e - np.median(e)))) / MAD_NORMAL


def working_response(A: np.ndarray, z: np.ndarray, coefficients: np.ndarray, k: float, scale: float) -> np.ndarray:
    """The pseudo-observations of a Huber fit with columns *A* (Huber 1981, §7.8): the fitted values
    f plus the residuals, centred on their median, clipped at *k* × *scale* and divided by the share m
    of residuals inside the clip (Huber's correction, so their spread gives the M-estimator's covariance), with their
    part
    along the columns removed, so that least squares on them gives the model's *coefficients*
    exactly. The coefficient table, the F-tests and the intervals of a robust model are those of
    least squares on this response."""
    fitted = A @ np.asarray(coefficients, dtype=float)
    r = huber_residuals(z - fitted, k, scale)  # (its centre is a constant the intercept absorbs)
    return fitted + r - A @ np.linalg.lstsq(A, r, rcond=None)[0]


def huber_residuals(e: np.ndarray, k: float, scale: float) -> np.ndarray:
    """Residuals *e* as Huber's pseudo-observations take them: centred on their median, clipped at
    *k* × *scale* and divided by the share m of them inside the clip (Huber's correction, so their
    spread is the data's where nothing is clipped rather than less)."""
    e = e - np.median(e) if e.size else e
    limit = k * scale
    m = max(float(np.mean(np.abs(e) <= limit)), 1.0 / max(e.size, 1))
    return np.clip(e, -limit, limit) / m


def column_basis(A: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column space of the design *A* (n × rank, from its SVD with the
    usual rank tolerance, so aliased columns count once): its hat values are the rows' squared norms."""
    u, s, _ = np.linalg.svd(A, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(A.shape) * np.finfo(float).eps)) if s.size else 0
    return u[:, :rank]


ALONE = 1e-6  # 1 − h below this: least squares fits the row whatever its value (leverage 1)


def ordered_basis(A: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """An orthonormal basis of the column space of *A* built in column order (Q of its QR factors,
    a column whose part new to the columns before it is below *tol* of its norm dropped, as the
    search drops an aliased column): its first k columns span the model's first independent ones."""
    norms = np.linalg.norm(A, axis=0)
    keep = np.flatnonzero(norms > 0)
    while keep.size:
        q, r = np.linalg.qr(A[:, keep])
        bad = np.abs(np.diag(r)) <= tol * norms[keep]
        if not bad.any():
            return q
        keep = keep[~bad]
    return np.empty((A.shape[0], 0))


def loo_predictions(q: np.ndarray, z: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out predictions of least squares on the orthonormal columns *q* for the response
    *z*: exact from the hat values, z − e/(1 − h). *q*'s columns are in the model's order (the
    search's basis, or :func:`ordered_basis` of the design).

    A row of leverage 1 (1 − h < ALONE) has none: left out, the model's column that completes its
    leverage (the first with which the columns so far reach it alone) is not identified. It is
    predicted as the largest prefix of the model that does not reach it alone predicts it left out:
    the columns before that one, the lower-order model (as a prediction at an unseen level
    combination takes a term's lower-order fit), not its own value. (R's ``lm`` refit would drop only
    that column and keep the later ones; measured in docs/models.md "One-row guard", it let RAY's
    worst error reach 5.9× the forest's on one draw.) *c* is ``q.T @ z`` when the caller has it."""
    c = q.T @ z if c is None else c
    fitted = q @ c
    h = np.einsum("ij,ij->i", q, q)
    out = z - (z - fitted) / np.maximum(1.0 - h, ALONE)
    alone = np.flatnonzero(1.0 - h < ALONE)
    if alone.size:
        qa = q[alone]
        cum = np.cumsum(qa * qa, axis=1)
        reached = cum >= 1.0 - ALONE
        j = np.where(reached.any(axis=1), np.argmax(reached, axis=1), q.shape[1] - 1)
        k = np.arange(alone.size)
        h2 = np.minimum(cum[k, j] - qa[k, j] ** 2, 1.0 - ALONE)  # the prefix's leverage of the row
        f2 = np.einsum("ij,ij->i", np.where(np.arange(q.shape[1]) < j[:, None], qa, 0.0), np.broadcast_to(c, qa.shape))
        out[alone] = (f2 - h2 * z[alone]) / (1.0 - h2)
    return out


def ols_noise(A: np.ndarray, rss: float) -> dict | None:
    """What an OLS prediction interval needs (:mod:`.intervals`): the residual standard error, its
    degrees of freedom and a root W of the pseudo-inverse (X'X)^+ = W W' (from the SVD of the design,
    so a rank-deficient design is handled). None when no degrees of freedom are left."""
    n, p = A.shape
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(n, p) * np.finfo(float).eps)) if s.size else 0
    df = n - rank
    if df < 1:
        return None
    root = vt[:rank].T / s[:rank]
    return {"sigma": float(np.sqrt(rss / df)), "df": int(df), "root": root.tolist()}


def constant_response_note(response: str, y: np.ndarray) -> str | None:
    """A warning when the training response *y* holds one value: any model of it predicts that value
    for every design point, which is almost never what a study means (a wrong column, or runs that
    all failed the same way); None otherwise."""
    y = np.asarray(y, dtype=float)
    if y.size == 0 or np.ptp(y) != 0:
        return None
    return (f"column {response!r} has the same value ({y[0]:.6g}) in all {y.size:,} training rows, so this model "
            f"predicts {y[0]:.6g} for every design point; is it the right response column, or did every simulation "
            f"fail the same way?")


def note_constant_response(model: Any, data: Any, response: str) -> Any:
    """*model*, with :func:`constant_response_note` among its notes when its training response is
    constant (once: a learner says it already when it checks its rows)."""
    import pandas as pd

    note = constant_response_note(response, pd.to_numeric(data[response], errors="coerce").to_numpy(float))
    notes = getattr(model, "notes", None)
    if note and isinstance(notes, list) and note not in notes:
        notes.append(note)
    return model

