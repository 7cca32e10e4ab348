"""Intervals on a search's proposals: the value the model expected and a calibrated interval, before simulating.

Each design a search proposes from its models (:mod:`.study`) is recorded with the value predicted for
it by the model that chose it — the forest's mean (its trees' mean on the log scale, so the geometric
mean, for a positive response), or the stepwise model's prediction (:mod:`.choice`) — and a
:data:`LEVEL` (95 %) interval around that value, all computed before the design is simulated, so the
history shows predicted [lower, upper] against the simulated value and whether it fell inside.

The interval is calibrated on held-out residuals the round already has, so it costs no refit:

* **The forest's proposals** (and uniform draws) — each simulated design's *out-of-bag* prediction (the
  mean of the trees whose bootstrap sample left it out; Breiman 2001; Johansson et al. 2014's conformal
  regression forests) and out-of-bag spread; each signed error (truth − prediction, on the log scale for
  a positive response: a multiplicative interval whose lower end is above zero) is divided by
  ``sqrt(spread² + (SPREAD_FLOOR × median spread)²)``, and a proposal's ends are the conformal order
  statistics of those scaled errors times its own scale (locally weighted conformal, Lei et al. 2018
  §5.2). A search proposes where its trees disagree, and the spread is the selection correction that
  measured right there: errors of the designs whose held-out prediction ranked best — the correction
  :mod:`gpudse_core.model.calibration` makes for Explore's top rows — covered 75 % of the proposals on
  the convolution tables, the spread-scaled errors of every design 95 % (docs/search.md).
* **The stepwise model's proposals** (its best predictions, :mod:`.choice`) — its *k*-fold held-out
  errors (the ones :func:`.choice.compare` computes when it refits the model), the best-ranked
  ``SHARE`` of them, as Explore's best designs are calibrated
  (:meth:`gpudse_core.model.calibration.Calibration.ends`: the one implementation of the conformal
  order statistics and of that selection), joined with the forest's interval at the design
  (:func:`joined`): alone they covered 36 % of its proposals on the bench's kernels, joined 97 %.

An end reaches at most RANGE_MARGIN of the simulated values' range past it, and is at least
``MIN_HALF`` from the prediction (never an interval of zero width). A proposal made before any model
(the initial sample), or with fewer than ``MIN_ROWS`` held-out errors, has no interval. Coverage on the
benchmark_hub convolution tables (``python benchmarks/bench_intervals.py --proposals``): docs/search.md,
"Intervals on proposals".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model.calibration import MIN_HALF, MIN_ROWS, Calibration
from ..model.coverage import LEVEL  # the level of every proposal's interval
from ..model.fitted import DEFAULT_BOUND_MARGIN

RANGE_MARGIN = DEFAULT_BOUND_MARGIN  # an end reaches at most this share of the values' range past it (as explore's)
SPREAD_FLOOR = 1.0  # a forest residual is scaled by sqrt(spread² + (SPREAD_FLOOR × the median spread)²)


def _scale(spread: Any, typical: float | None) -> np.ndarray:
    """sqrt(spread² + (SPREAD_FLOOR × typical)²); 1 where residuals are not scaled (*typical* None)."""
    sd = np.asarray(spread, dtype=float)
    return np.ones_like(sd) if typical is None else np.sqrt(sd ** 2 + (SPREAD_FLOOR * typical) ** 2)


@dataclass
class ProposalCalibration:
    """Held-out residuals *cal* (:class:`~gpudse_core.model.calibration.Calibration`), each divided by
    its row's scale — for the forest, its out-of-bag spread floored by the median one, *typical*
    (locally weighted conformal, Lei et al. 2018 §5.2); unscaled (*typical* None) for the stepwise model."""

    cal: Calibration
    typical: float | None = None

    def scale(self, spread: Any) -> np.ndarray:
        """The scale of a design of forest *spread* (its trees' standard deviation, on the model's scale)."""
        return _scale(spread, self.typical)


def held_out_calibration(held_out: np.ndarray, z: np.ndarray, log: bool,
                         spread: np.ndarray | None = None) -> ProposalCalibration | None:
    """A calibration from held-out predictions *held_out* of the values *z* (both on the model's scale:
    log when *log*), the residuals scaled by the held-out *spread* when given (see
    :class:`ProposalCalibration`); rows where any is not finite are left out. None with fewer than
    MIN_ROWS rows."""
    held_out, z = np.asarray(held_out, dtype=float), np.asarray(z, dtype=float)
    sd = np.zeros(held_out.shape) if spread is None else np.asarray(spread, dtype=float)
    use = np.isfinite(held_out) & np.isfinite(z) & np.isfinite(sd)
    n = int(use.sum())
    if n < MIN_ROWS:
        return None
    p, sd = held_out[use], sd[use]
    typical = float(np.median(sd)) if spread is not None and float(np.median(sd)) > 0 else None
    rank = (np.argsort(np.argsort(p, kind="stable"), kind="stable") + 0.5) / n
    y = np.exp(z[use]) if log else z[use]
    resid = (z[use] - p) / _scale(sd, typical)
    return ProposalCalibration(Calibration(resid, rank, "log" if log else "none", 1, (float(y.min()), float(y.max()))),
                               typical)


def tree_predictions(forest: Any, X: np.ndarray) -> np.ndarray:
    """Each tree's predictions of *X* (trees × rows, the model's scale): the trees read float32 rows, so
    they are converted once here rather than checked by every tree (30 times faster than ``predict``)."""
    Xs = np.ascontiguousarray(X, dtype=np.float32)
    return np.stack([t.predict(Xs, check_input=False) for t in forest.model.estimators_])


def forest_calibration(forest: Any, X: np.ndarray, y: np.ndarray,
                       per_tree: np.ndarray | None = None) -> ProposalCalibration | None:
    """The forest's out-of-bag residuals and spreads on its training rows *X*, *y* (no refit: the round's
    forest; a row is predicted by the trees whose bootstrap sample left it out, at least two).
    *per_tree*: the trees' predictions of *X* when already made (:func:`tree_predictions`)."""
    per_tree = tree_predictions(forest, X) if per_tree is None else per_tree
    out = np.ones(per_tree.shape, dtype=bool)
    for k, rows in enumerate(forest.model.estimators_samples_):
        out[k, rows] = False
    n = out.sum(axis=0)
    mean = (per_tree * out).sum(axis=0) / np.maximum(n, 1)
    sd = np.sqrt((((per_tree - mean) ** 2) * out).sum(axis=0) / np.maximum(n, 1))
    mean = np.where(n >= 2, mean, np.nan)
    return held_out_calibration(mean, forest.transform(y), bool(forest.log), sd)


def forest_intervals(forest: Any, X_ok: np.ndarray, y: np.ndarray, X: np.ndarray,
                     goal: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forest's predicted values of the designs *X* (original scale: the geometric mean of its trees'
    on the log scale) and their intervals (lower, upper), calibrated on its out-of-bag residuals on its
    training rows *X_ok*, *y*, scaled by the spread: one pass of the trees over both."""
    per_tree = tree_predictions(forest, np.vstack([X_ok, X]))
    cal = forest_calibration(forest, X_ok, y, per_tree[:, :len(X_ok)])
    mu, sd = per_tree[:, len(X_ok):].mean(axis=0), per_tree[:, len(X_ok):].std(axis=0)
    pred = np.exp(mu) if forest.log else mu
    return (pred, *interval(pred, cal, goal, spread=sd))


def interval(predicted: np.ndarray, cal: ProposalCalibration | None, goal: str | None, level: float = LEVEL,
             spread: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) around *predicted* (original scale) from *cal* at *level*, calibrated on the rows
    ranked best for *goal* (``min``/``max``; None: every row), the residual ends times the scale of each
    design's forest *spread* (when *cal* is scaled), each end within the calibration rows' range widened
    by RANGE_MARGIN of it on each side (on the residuals' scale) and at least MIN_HALF from the
    prediction. NaN where there is no calibration or no usable prediction (not finite; not positive on
    the log scale)."""
    p = np.asarray(predicted, dtype=float)
    nan = np.full(p.shape, np.nan)
    if cal is None:
        return nan, nan.copy()
    lo_r, hi_r = cal.cal.ends(level, goal)  # each at least MIN_HALF from 0: never an interval of zero width
    k = cal.scale(np.zeros(p.shape) if spread is None else spread)
    k = np.where(np.isfinite(k) & (k > 0), k, 1.0)
    lo_r, hi_r = np.minimum(lo_r * k, -MIN_HALF), np.maximum(hi_r * k, MIN_HALF)
    log = cal.cal.scale == "log"
    a, b = np.log(cal.cal.y_range) if log else np.asarray(cal.cal.y_range, dtype=float)
    a, b = a - RANGE_MARGIN * (b - a), b + RANGE_MARGIN * (b - a)  # the range the interval may reach
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        c = np.log(p) if log else p
        usable = np.isfinite(c)
        lo = np.minimum(np.maximum(c + lo_r, a), c - MIN_HALF)  # within the range, never of zero width
        hi = np.maximum(np.minimum(c + hi_r, b), c + MIN_HALF)
        if log:
            lo, hi = np.exp(lo), np.exp(hi)
    return np.where(usable, lo, np.nan), np.where(usable, hi, np.nan)


def joined(predicted: np.ndarray, first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray],
           log: bool) -> tuple[np.ndarray, np.ndarray]:
    """The interval spanning both (lower, upper) pairs (either may be NaN: the other is taken), widened to
    hold *predicted* at least MIN_HALF inside (on the log scale when *log*); NaN where neither exists."""
    lo, hi = np.fmin(first[0], second[0]), np.fmax(first[1], second[1])
    p = np.asarray(predicted, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        near_lo, near_hi = (p * np.exp(-MIN_HALF), p * np.exp(MIN_HALF)) if log else (p - MIN_HALF, p + MIN_HALF)
        return np.where(np.isfinite(lo), np.fmin(lo, near_lo), np.nan), np.where(np.isfinite(hi),
                                                                                  np.fmax(hi, near_hi), np.nan)
