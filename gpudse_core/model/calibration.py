"""Calibrated intervals for recommended designs: cross-validated, selection-corrected, bounded honestly.

A model's own interval (:mod:`.intervals`: the OLS formula of a stepwise fit, the cross-conformal
spread of a learner) describes a design drawn like the training rows. The designs a review acts on are
not: they are the few the model ranks best out of the whole space, and a model is most optimistic
exactly there (fitted on 100 designs of a real tuning table, the 10 best designs' truth lay above the
prediction in 57–96 % of rows, per table). And the stepwise OLS interval ignores the search that chose the
model's terms. This module calibrates on data the model has not seen, as the model will be used:

* **Cross-validation with refits** (cross-conformal, Vovk 2015; the residuals of CV+, Barber et al. 2021):
  the model is refitted, with its own settings and its own search, on K = 5 folds of its training rows;
  each held-out row gets the signed error of the model that did not see it, on the log scale for a
  positive response (``log y − log ŷ``: an interval multiplicative about the prediction, whose lower end
  is always above zero), else on the response's own scale.
* **Selection correction**: within each fold the held-out rows are ranked by their held-out
  prediction, and the interval of a recommended design takes its quantiles from the rows the fold
  models ranked best — the best :data:`SHARE` of them (at least :data:`MIN_SELECTED` rows), lowest
  predictions for a minimised response, highest for a maximised one. These are the rows where the
  model's optimism shows; their residuals are asymmetric (truth above the prediction), and so is the
  interval. The ends are the conformal order statistics: the ⌊(n + 1)·α/2⌋-th smallest and the
  ⌈(n + 1)·(1 − α/2)⌉-th smallest of the n selected residuals (α = 1 − level), the extreme residual
  when n is too small for that rank.
* **The range the model can predict** (the training range widened by the bound margin,
  :meth:`.fitted.StepwiseModel.bound`): an interval does not reach past it (held-out errors of a factor
  of 200 would otherwise put the upper end of a 1 ms design at 200 ms, beyond every time in the table).
  Where the prediction itself was held at a bound the model cannot place the design: its interval spans
  that whole range, and past it by the calibrated end on the side it was clamped, and the row is flagged
  ``bounded``. A prediction held to the responses of its nearest training designs (:mod:`.envelope`: a
  design outside the training support) gets an interval that covers those responses and the equation's
  own prediction, widened by the calibrated ends — the data cannot say which is right there — and is
  flagged ``bounded`` too. No interval has zero width (each end at least :data:`MIN_HALF` from the prediction on the
  residual scale).

Measured (``python benchmarks/bench_intervals.py``; docs/models.md "Intervals of recommended designs"):
on the three benchmark_hub convolution tables, the default model fitted on 100 uniform designs or on a
search's 100, the top 10 of ``explore``, nominal 95 %: the calibrated intervals covered 96.4 % and 92.4 %
pooled and at least 90.4 % on every table, the model's own 88.7 % and 85.8 % (80.0 % at worst); with the
default's forest blend (:mod:`.fallback`) 94.1 % and 93.6 % pooled, at least 88.5 % on every table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..errors import GpudseError

FOLDS = 5  # refits of the model for its held-out residuals
SHARE = 0.3  # the share of each fold's held-out rows (ranked best by their held-out prediction) a top row takes
MIN_SELECTED = 20  # at least this many rows calibrate a recommended design (all of them when fewer)
MIN_ROWS = 2 * FOLDS  # fewer training rows cannot be cross-validated
MIN_HALF = 1e-3  # the narrowest distance from the prediction to an end, on the residual scale (0.1 % on log)
GOALS = ("min", "max", None)


@dataclass
class Calibration:
    """The held-out errors of a model's refits: ``residuals`` (signed, truth − prediction on ``scale``:
    ``log`` or ``none``), ``rank`` (each row's place among its fold's held-out predictions, 0 = the lowest,
    1 = the highest), ``folds`` and the training response's range ``y_range`` (original scale)."""

    residuals: np.ndarray
    rank: np.ndarray
    scale: str
    folds: int
    y_range: tuple[float, float]

    @property
    def n(self) -> int:
        return int(self.residuals.size)

    def selected(self, goal: str | None) -> np.ndarray:
        """The residuals a design ranked best for *goal* is calibrated on (every row for ``None``)."""
        if goal not in GOALS:
            raise GpudseError(f"goal must be 'min', 'max' or None (got {goal!r})")
        if goal is None or self.n <= MIN_SELECTED:
            return self.residuals
        key = self.rank if goal == "min" else 1.0 - self.rank
        take = self.residuals[key <= SHARE]
        if take.size >= MIN_SELECTED:
            return take
        return self.residuals[np.argsort(key, kind="stable")[:MIN_SELECTED]]

    def ends(self, level: float, goal: str | None) -> tuple[float, float]:
        """(lower, upper) residual quantiles at *level*: the conformal order statistics of the selected
        residuals, the extreme ones when there are too few for that rank, each at least MIN_HALF from 0."""
        r = np.sort(self.selected(goal))
        n = r.size
        alpha = 1.0 - level
        k_lo = min(max(math.floor((n + 1) * alpha / 2), 1), n)
        k_hi = max(min(math.ceil((n + 1) * (1 - alpha / 2)), n), 1)
        return min(float(r[k_lo - 1]), -MIN_HALF), max(float(r[k_hi - 1]), MIN_HALF)


def _refit(model: Any) -> Callable[[pd.DataFrame], Any]:
    """A function fitting *model*'s kind, with its own settings, on other rows."""
    if getattr(model, "kind", "") == "stepwise":
        from .registry import fit_model, stepwise_request

        kind, transform, kw = stepwise_request(getattr(model, "settings", {}) or {})
        params = list(model.parameters)
        return lambda rows: fit_model(kind, rows, model.response, params, transform=transform, stepwise_kw=kw)
    from .learners import fit_learner

    return lambda rows: fit_learner(model.kind, rows, model.response, model.parameters, model.transform, model.seed,
                                    model.settings)


def calibrate(model: Any, data: pd.DataFrame, folds: int = FOLDS, seed: int = 0) -> Calibration:
    """Refit *model* on *folds* folds of *data* (its training rows: the rows with a finite response are
    used) and keep the held-out signed errors and ranks (see the module docstring)."""
    response = model.response
    missing = [c for c in [response, *model.parameters] if c not in data.columns]
    if missing:
        raise GpudseError(f"the rows to calibrate the interval on lack column(s) {', '.join(map(repr, missing))} "
                          f"the model uses; give the results the model was fitted on")
    y_all = pd.to_numeric(data[response], errors="coerce").to_numpy(float)
    keep = np.isfinite(y_all)
    rows = data.loc[keep].reset_index(drop=True)
    y = y_all[keep]
    n = len(rows)
    if n < MIN_ROWS:
        raise GpudseError(f"a calibrated interval needs at least {MIN_ROWS} rows with a response (there are {n})")
    scale = "log" if (y > 0).all() else "none"
    fold = np.random.default_rng(seed).permutation(n) % folds
    pred = np.empty(n)
    rank = np.empty(n)
    refit = _refit(model)
    for k in range(folds):
        out = fold == k
        sub = refit(rows[~out])
        p = np.asarray(sub.predict(rows[out]), dtype=float)
        pred[out] = p
        rank[out] = (np.argsort(np.argsort(p, kind="stable"), kind="stable") + 0.5) / out.sum()
    if scale == "log":
        pred = np.maximum(pred, float(y.min()) * 1e-6)  # a fold model that predicted 0 is off by a factor 1e6
        resid = np.log(y) - np.log(pred)
    else:
        resid = y - pred
    return Calibration(resid, rank, scale, folds, (float(y.min()), float(y.max())))


def _guarded(model: Any, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(the prediction shown, original scale; the rows it was held at the model's bound; the rows the
    neighbour envelope held (:mod:`.envelope`); the equation's own bounded prediction at those rows, NaN
    elsewhere), from one evaluation of the linear predictor over *X* (and one over the held rows only,
    whose own value the envelope replaced)."""
    from .fitted import inverse_transform

    if getattr(model, "kind", "") != "stepwise":
        from .learners import guard

        z, clamped = guard(np.asarray(model.linear_predictor(X), dtype=float), model.bounds_, model.median_)
        none = np.zeros(len(X), dtype=bool)
        return inverse_transform(z, model.transform), np.asarray(clamped, dtype=bool), none, np.full(len(X), np.nan)
    z, mask, held = model.guarded(X)  # mask: clamped or held; where not held, exactly the bound's flags
    clamped = np.asarray(mask, dtype=bool).copy()
    own = np.full(len(X), np.nan)
    rows = np.flatnonzero(held)
    if rows.size:
        own_z, clamped[rows] = model.bound(model.linear_predictor(X.iloc[rows]))
        own[rows] = inverse_transform(own_z, model.transform)
    return inverse_transform(z, model.transform), clamped, np.asarray(held, dtype=bool), own


def _predictable_range(model: Any, cal: Calibration) -> tuple[float, float]:
    """The original-scale range the model can predict (its bounds), within the calibration's own."""
    from .fitted import inverse_transform

    bounds = model.bounds() if getattr(model, "kind", "") == "stepwise" else getattr(model, "bounds_", None)
    lo, hi = cal.y_range
    if bounds is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            b = inverse_transform(np.asarray(bounds, dtype=float), model.transform)
        lo = min(lo, float(b[0])) if np.isfinite(b[0]) else lo
        hi = max(hi, float(b[1])) if np.isfinite(b[1]) else hi
    if cal.scale == "log" and not lo > 0:
        lo = cal.y_range[0] / 4.0  # never a lower end at or below zero for a positive response
    return lo, hi


def calibrated_interval(model: Any, X: pd.DataFrame, cal: Calibration, level: float = 0.95,
                        goal: str | None = "min") -> pd.DataFrame:
    """Per row of *X*: ``predicted`` (``model.predict``), ``lower``, ``upper`` (see the module
    docstring; *goal* ``min``/``max`` calibrates on the rows ranked best that way, None on every row)
    and ``bounded`` (the prediction was held at the model's bound: the interval spans the range the
    model can predict, and beyond it on the side the model was clamped by the calibrated end). Every
    interval lies within the range the model can predict except where the calibrated end of a clamped
    row goes past it, and each end is at least MIN_HALF from the prediction."""
    from .intervals import _check_level

    level = _check_level(level)
    lo_r, hi_r = cal.ends(level, goal)
    pred, clamped, held, own = _guarded(model, X)
    floor, ceiling = _predictable_range(model, cal)
    log = cal.scale == "log"
    if log:
        clamped = clamped | ~(pred > 0)
        pred = np.where(pred > 0, pred, floor)

    def shift(v: Any, r: float) -> Any:  # v moved by a residual r on the calibration's scale
        return v * np.exp(r) if log else v + r

    low = clamped & (pred <= math.sqrt(floor * ceiling) if log else pred <= (floor + ceiling) / 2)
    high = clamped & ~low
    lo = np.where(low, shift(floor, lo_r), np.where(high, floor, np.maximum(shift(pred, lo_r), floor)))
    hi = np.where(high, shift(ceiling, hi_r), np.where(low, ceiling, np.minimum(shift(pred, hi_r), ceiling)))
    if held.any():  # held to its neighbours: the interval covers what they measured and what the equation
        nb_lo, nb_hi = _neighbour_range(model, X, held)
        a, b = np.fmin(nb_lo, own), np.fmax(nb_hi, own)  # says, by the calibrated ends too
        lo = np.where(held, np.minimum(lo, np.maximum(shift(a, lo_r), floor)), lo)
        hi = np.where(held, np.maximum(hi, np.minimum(shift(b, hi_r), ceiling)), hi)
    lo = np.minimum(lo, shift(pred, -MIN_HALF))  # never zero width, whatever the bounds
    hi = np.maximum(hi, shift(pred, MIN_HALF))
    return pd.DataFrame({"predicted": pred, "lower": lo, "upper": hi, "bounded": clamped | held}, index=X.index)


def _neighbour_range(model: Any, X: pd.DataFrame, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The original-scale range of the responses of the training designs nearest to each *held* row
    (:mod:`.envelope`); NaN elsewhere."""
    from .fitted import inverse_transform

    lo, hi = np.full(len(X), np.nan), np.full(len(X), np.nan)
    rows = np.flatnonzero(held)
    z_lo, z_hi = model.neighbours.envelope(model._with_derived(X).iloc[rows], model.bases)
    lo[rows] = inverse_transform(np.asarray(z_lo, dtype=float), model.transform)
    hi[rows] = inverse_transform(np.asarray(z_hi, dtype=float), model.transform)
    return lo, hi
