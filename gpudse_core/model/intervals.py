"""Prediction intervals: where a simulation of a design is expected to land, at a stated level.

* **Stepwise spline models** — the classical OLS prediction interval (Lee & Brooks §2.4's regression
  on the transformed response): ``ẑ ± t(df, (1+level)/2) · σ · sqrt(1 + x (X'X)⁺ x')``, with σ the
  residual standard error, ``df`` its degrees of freedom and ``x`` the design's row of the model's
  columns; its ends go through the model's bound and back-transform (monotone), so on the log scale
  the interval is multiplicative around the predicted median. The fit stores σ, ``df`` and a root
  of (X'X)⁺ (``StepwiseModel.noise``). It ignores the uncertainty of the stepwise *selection* itself,
  hence the coverage check below.
* **Learners** (forest, boosting, hybrid, EBM) have no such formula: their interval is
  *cross-conformal* — the model is refitted on K folds of its training rows, and the residuals of
  the held-out rows (transformed scale) give the half-width: their ``⌈(n+1)·level⌉``-th smallest
  absolute value. For a forest the residual is first divided by the spread of its trees'
  predictions at that design (:func:`spread`; normalised conformal prediction), so the interval is
  wide where the trees disagree and narrow where they agree. The folds are refitted once per
  model object and cached.

Measured (tests/test_intervals.py; the coverage table in docs/cli.md): nominal 95 % intervals cover at least
90 % of 1,000 held-out simulations on the built-in kernels after fitting 300 samples at 1 % noise. That is
coverage of designs drawn like the training rows; the designs a model *recommends* are the ones it is most
optimistic about, and their intervals (explore's best designs) are calibrated on held-out refits instead
(:mod:`.calibration`) whenever the training rows are at hand.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..errors import GpudseError

FOLDS = 5  # refits of a learner for its conformal residuals
SPREAD_FLOOR = 0.05  # share of the median tree spread added to every spread (no zero-width interval)
LEARNER_KINDS = ("forest", "boosting", "hybrid", "ebm")


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.5 <= float(level) < 1:
        raise GpudseError(f"interval level must be a number in [0.5, 1), e.g. 0.95 (got {level!r})")
    return float(level)


def predict_interval(model: Any, X: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per row of *X*: ``predicted`` (as ``model.predict``), ``lower`` and ``upper`` (original scale)
    of the *level* prediction interval (see the module docstring for each kind of model)."""
    level = _check_level(level)
    kind = getattr(model, "kind", "")
    if kind == "stepwise":
        return _ols_interval(model, X, level)
    if kind in LEARNER_KINDS:
        return _conformal_interval(model, X, level)
    raise GpudseError(f"no prediction interval for a {kind or type(model).__name__!r} model")


def available(model: Any) -> bool:
    """True when :func:`predict_interval` can answer for *model* (a stepwise model saved with its noise)."""
    kind = getattr(model, "kind", "")
    return (kind == "stepwise" and getattr(model, "noise", None) is not None) or kind in LEARNER_KINDS


# ---- stepwise: the OLS prediction interval ---------------------------------------------------------
def _ols_interval(model: Any, X: pd.DataFrame, level: float) -> pd.DataFrame:
    from scipy import stats

    from .fitted import design_matrix, inverse_transform

    noise = model.noise
    if noise is None:
        raise GpudseError("this model was saved without its residual spread, so it has no prediction interval; "
                          "refit it with this version of gpudse")
    z, _, held = model.guarded(X)  # about the prediction shown (held where the envelope held it)
    z = np.asarray(z, dtype=float)
    root = np.asarray(noise["root"], dtype=float).reshape(len(model.coefficients), -1)
    lev = np.einsum("ij,ij->i", *(2 * [design_matrix(model, X) @ root])) if root.size else np.zeros(len(X))
    fb = getattr(model, "fallback", None)
    if fb is not None:  # the blend's variance: the two forecasts' inverse-variance sum, 1 / (1/h + 1/c) = c w
        # (units of sigma^2); the forest's alone, c, where it alone predicts (model/fallback.py)
        lev = fb.c * np.where(np.asarray(held, dtype=bool), 1.0, fb.weight_of(lev))  # the leverage just computed
    half = float(stats.t.ppf((1 + level) / 2, noise["df"])) * noise["sigma"] * np.sqrt(1.0 + lev)
    lo = inverse_transform(model.bound(z - half)[0], model.transform)
    hi = inverse_transform(model.bound(z + half)[0], model.transform)
    return pd.DataFrame({"predicted": inverse_transform(z, model.transform), "lower": lo, "upper": hi},
                        index=X.index)  # model.predict(X), without a second pass through the guard


# ---- learners: cross-conformal ------------------------------------------------------------------------
def spread(model: Any, X: pd.DataFrame) -> np.ndarray:
    """Standard deviation of a forest's trees' predictions at each row (transformed scale)."""
    if getattr(model, "kind", "") != "forest":
        raise GpudseError(f"the spread of trees needs a forest (got a {getattr(model, 'kind', '?')!r} model)")
    model._fitted()
    P = model._points(X)
    if len(P) == 0:
        return np.empty(0)
    from .learners import _columns

    per_tree = model.frozen_.per_tree(_columns(P, model.parameters), len(P)).T  # the saved trees themselves
    return per_tree.std(axis=0)


def _z(model: Any, X: pd.DataFrame) -> np.ndarray:
    """The model's guarded prediction on the transformed scale."""
    from .learners import guard

    z, _ = guard(np.asarray(model.linear_predictor(X), dtype=float), model.bounds_, model.median_)
    return z


def _calibration(model: Any) -> tuple[np.ndarray, float]:
    """Held-out conformity scores of the K refits (and, for forests, the spread floor); cached."""
    cached = getattr(model, "_conformal_", None)
    if cached is not None:
        return cached
    from .fitted import transform_response
    from .learners import fit_learner

    train = model.train_
    n = len(train)
    if n < 2 * FOLDS:
        raise GpudseError(f"a prediction interval needs at least {2 * FOLDS} training rows (this model has {n})")
    fold = np.random.default_rng(model.seed).permutation(n) % FOLDS
    z = transform_response(train[model.response].to_numpy(float), model.transform, model.response)
    resid = np.empty(n)
    scale = np.ones(n)
    for k in range(FOLDS):
        out = fold == k
        sub = fit_learner(model.kind, train[~out], model.response, model.parameters, model.transform, model.seed,
                          model.settings)
        held = train[out]
        resid[out] = np.abs(z[out] - _z(sub, held))
        if model.kind == "forest":
            scale[out] = spread(sub, held)
    floor = 0.0
    if model.kind == "forest":
        floor = SPREAD_FLOOR * float(np.median(scale)) or 1e-12
        resid = resid / (scale + floor)
    model._conformal_ = (np.sort(resid), floor)
    return model._conformal_


def _conformal_interval(model: Any, X: pd.DataFrame, level: float) -> pd.DataFrame:
    from .fitted import inverse_transform
    from .learners import guard

    scores, floor = _calibration(model)
    n = scores.size
    rank = math.ceil((n + 1) * level)  # the conformal quantile; beyond n the interval is unbounded
    q = float(scores[rank - 1]) if rank <= n else np.inf
    zhat = _z(model, X)
    half = q * (spread(model, X) + floor) if model.kind == "forest" else np.full(len(X), q)
    lo = guard(zhat - half, model.bounds_, model.median_)[0]
    hi = guard(zhat + half, model.bounds_, model.median_)[0]
    return pd.DataFrame({"predicted": model.predict(X), "lower": inverse_transform(lo, model.transform),
                         "upper": inverse_transform(hi, model.transform)}, index=X.index)
