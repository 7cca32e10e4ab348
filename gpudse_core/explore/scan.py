"""Using a fitted model: response curves, interaction grids, whole-space prediction, best designs.

* :func:`response_curve` — the model's prediction along one parameter with the others held at chosen
  values (Stargazer Fig. 7 is the #blk spline of LPS and RAY), with a pointwise confidence band from
  the OLS coefficient covariance (on the transformed scale, then back-transformed).
* :func:`interaction_grid` — predictions over two parameters (an interaction heatmap).
* :func:`predict_space` — every point of a design space, streamed in chunks with progress, keeping
  only what is needed (top-k and a Pareto front) so spaces far larger than memory work.
* :func:`pareto_front` — designs not beaten on both predicted response and a cost column.
* :func:`sensitivity` — one-at-a-time: each parameter moved to each of its values from a base point.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import GpudseError
from ..model.inference import design_matrix, ols_results
from ..model.stepwise import StepwiseModel, inverse_transform
from ..space.design import DesignSpace
from .pool import front_indices


def _used(model: Any) -> list[str]:
    """The parameters a model reads: a stepwise model's bases, a learner's parameters (a derived quantity counts as
    the parameters it is computed from, :mod:`gpudse_core.model.derived`)."""
    from ..model.derived import inputs

    return inputs(model, list(model.bases) if hasattr(model, "bases") else list(getattr(model, "parameters", ())))


def _grid(model: StepwiseModel, param: str, space: DesignSpace | None, points: int) -> np.ndarray:
    if not hasattr(model, "bases") and space is not None:  # a learner: its prediction at the legal values
        vals = space.parameter(param).values
        return np.array(vals, dtype=object if space.parameter(param).kind == "categorical" else float)
    b = model.bases.get(param)
    if b is None and space is None:
        raise GpudseError(f"the model does not use {param!r}; its parameters: {', '.join(model.bases)}")
    if b is not None and b.kind == "categorical":
        return np.array(b.levels, dtype=object)
    if space is not None:
        vals = space.parameter(param).values
        if b is None:  # read through a derived quantity only: its legal values
            return np.array(vals, dtype=object if space.parameter(param).kind == "categorical" else float)
        if b.kind == "categorical":
            return np.array(vals, dtype=object)
        lo, hi = min(vals), max(vals)
    else:
        lo, hi = b.lo, b.hi
    grid = np.linspace(lo, hi, points)
    if b is not None and b.pow2 and hi > 0:  # the pow2(x) column steps there: show the curve at each
        e = np.arange(max(0, math.ceil(math.log2(max(lo, 1.0)))), math.floor(math.log2(hi)) + 1)
        grid = np.union1d(grid, np.exp2(e)[(np.exp2(e) >= lo) & (np.exp2(e) <= hi)])
    return grid


def response_curve(model: StepwiseModel, data: pd.DataFrame, param: str, base: Mapping[str, Any],
                   space: DesignSpace | None = None, points: int = 100, level: float = 0.95) -> pd.DataFrame:
    """Prediction and confidence band along *param*, the other parameters at *base*."""
    xs = _grid(model, param, space, points)
    frame = pd.DataFrame({p: [base[p]] * len(xs) for p in _used(model) if p != param})
    frame[param] = xs
    res = ols_results(model, data)
    A = design_matrix(model, frame)
    eta = A @ res.params.to_numpy()
    cov = res.cov_params().to_numpy()
    se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", A, cov, A), 0))
    z = stats.t.ppf(0.5 + level / 2, res.df_resid)
    return pd.DataFrame({param: xs, "predicted": inverse_transform(eta, model.transform),
                         "lower": inverse_transform(eta - z * se, model.transform),
                         "upper": inverse_transform(eta + z * se, model.transform)})


def interaction_grid(model: StepwiseModel, x: str, y: str, base: Mapping[str, Any],
                     space: DesignSpace | None = None, points: int = 40,
                     legal_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predictions over two parameters, the others at *base*: on an even grid of *points* per numeric
    parameter, or with *legal_only* (and a *space*) at the legal values only — one cell per design."""
    if x == y:
        raise GpudseError("choose two different parameters for an interaction grid")
    if legal_only and space is not None:
        xs, ys = (np.array(space.parameter(p).values, dtype=object if space.parameter(p).kind == "categorical"
                           else float) for p in (x, y))
    else:
        xs, ys = _grid(model, x, space, points), _grid(model, y, space, points)
    gx, gy = np.meshgrid(np.arange(len(xs)), np.arange(len(ys)))
    frame = pd.DataFrame({p: [base[p]] * gx.size for p in _used(model) if p not in (x, y)})
    frame[x] = xs[gx.ravel()]
    frame[y] = ys[gy.ravel()]
    return xs, ys, model.predict(frame).reshape(len(ys), len(xs))


@dataclass
class SpaceScan:
    points: int
    best: pd.DataFrame  # top-k designs by prediction
    pareto: pd.DataFrame  # Pareto front on (prediction, cost)
    predictions: pd.DataFrame | None  # every point, when small enough to keep


def pareto_front(df: pd.DataFrame, value: str, cost: str, maximize: bool = False) -> pd.DataFrame:
    """Rows not dominated on (value, cost): lower cost and lower value (or higher, with *maximize*)."""
    v = -df[value].to_numpy(dtype=float) if maximize else df[value].to_numpy(dtype=float)
    return df.iloc[front_indices(df[cost].to_numpy(dtype=float), v)].reset_index(drop=True)


def predict_space(model: StepwiseModel, space: DesignSpace, *, cost: Callable[[pd.DataFrame], np.ndarray] | None
                  = None, k: int = 20, maximize: bool = False, keep_all_below: int = 2_000_000,
                  chunk_size: int = 1 << 18, progress: Callable[[int, int], Any] | None = None) -> SpaceScan:
    """Predict every feasible point in chunks; keep the top *k*, the Pareto front and (for small spaces)
    every prediction. *progress(done, total)* returning False stops early."""
    missing = [p for p in _used(model) if p not in space.parameter_names]
    if missing:
        raise GpudseError(f"the model uses {', '.join(missing)}, which space {space.name!r} does not have")
    total = space.size
    keep = total <= keep_all_below
    best = pd.DataFrame()
    front = pd.DataFrame()
    kept = []
    done = 0
    for _, frame in space.iter_chunks(chunk_size=chunk_size):
        pred = model.predict(frame)
        frame = frame.assign(predicted=pred)
        if cost is not None:
            frame = frame.assign(cost=np.asarray(cost(frame), dtype=float))
            front = pareto_front(pd.concat([front, pareto_front(frame, "predicted", "cost", maximize)]),
                                 "predicted", "cost", maximize)
        top = frame.nlargest(k, "predicted") if maximize else frame.nsmallest(k, "predicted")
        best = pd.concat([best, top])
        best = best.nlargest(k, "predicted") if maximize else best.nsmallest(k, "predicted")
        if keep:
            kept.append(frame)
        done += len(frame)
        if progress is not None and progress(done, total) is False:
            break
    return SpaceScan(done, best.reset_index(drop=True), front, pd.concat(kept, ignore_index=True) if keep else None)


def sensitivity(model: StepwiseModel, base: Mapping[str, Any], space: DesignSpace) -> pd.DataFrame:
    """Prediction with each parameter moved to each of its values, the others at *base* (one at a time)."""
    rows = []
    ref = float(model.predict(pd.DataFrame([dict(base)]))[0])
    for p in space.parameters:
        frame = pd.DataFrame([{**base, p.name: v} for v in p.values])
        pred = model.predict(frame) if p.name in _used(model) else np.full(len(frame), ref)
        for v, y in zip(p.values, pred):
            rows.append({"parameter": p.name, "value": v, "predicted": float(y), "change": float(y / ref - 1)})
    return pd.DataFrame(rows)
