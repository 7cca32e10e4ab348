"""Acquisition functions and the diverse batch.

* :func:`expected_improvement` — Jones, Schonlau & Welch (1998) eq. 15: for a Gaussian prediction with
  mean μ and spread σ, and the best value so far f*, EI = (f* − μ)Φ(u) + σφ(u), u = (f* − μ)/σ
  (minimisation; a maximisation negates the values).
* :func:`lower_confidence_bound` — μ − κσ (Srinivas et al. 2010, as a score to maximise: κσ − μ).
* :func:`hypervolume_improvement` — for two objectives to minimise where the second (a cost computed
  from the parameters) is known exactly: the area a candidate's predicted point adds to the region
  the current front dominates, up to a reference point (Emmerich et al. 2006's hypervolume-based
  improvement, optimistic by one spread).
* :func:`diverse_batch` — greedy batch selection: the best-scoring candidate, then each next one's
  score multiplied by min(1, distance to the chosen / radius) so a batch spreads over distinct regions
  and parallel simulators do not all measure the same corner.
"""

from __future__ import annotations

import math

import numpy as np

RADIUS = 0.5  # a batch member at L1 distance ≥ RADIUS / dimensions from the others keeps its whole score


def _norm_cdf(u: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(u)


def expected_improvement(mu: np.ndarray, sigma: np.ndarray, best: float, xi: float = 0.0) -> np.ndarray:
    sigma = np.maximum(sigma, 1e-12)
    imp = best - mu - xi
    u = imp / sigma
    return np.maximum(imp * _norm_cdf(u) + sigma * np.exp(-0.5 * u * u) / math.sqrt(2 * math.pi), 0.0)


def lower_confidence_bound(mu: np.ndarray, sigma: np.ndarray, kappa: float = 2.0) -> np.ndarray:
    return kappa * sigma - mu


def pareto_mask(y: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Which (y, c) points no other point dominates (both minimised)."""
    order = np.lexsort((y, c))
    keep = np.zeros(len(y), dtype=bool)
    best_y = np.inf
    for i in order:
        if y[i] < best_y:
            keep[i] = True
            best_y = y[i]
    return keep


def hypervolume(y: np.ndarray, c: np.ndarray, ref: tuple[float, float]) -> float:
    m = pareto_mask(y, c) & (y < ref[0]) & (c < ref[1])
    order = np.argsort(c[m])
    ys, cs = y[m][order], c[m][order]
    area, prev_y = 0.0, ref[0]
    for yi, ci in zip(ys, cs):
        area += (ref[1] - ci) * (prev_y - yi) if yi < prev_y else 0.0
        prev_y = min(prev_y, yi)
    return float(area)


def hypervolume_improvement(mu: np.ndarray, sigma: np.ndarray, cost: np.ndarray, front_y: np.ndarray,
                            front_c: np.ndarray, ref: tuple[float, float], kappa: float = 1.0) -> np.ndarray:
    """Area added to the dominated region by each candidate at (μ − κσ, cost)."""
    y = mu - kappa * sigma
    fm = pareto_mask(front_y, front_c)
    fy, fc = front_y[fm], front_c[fm]
    order = np.argsort(fc)
    fy, fc = fy[order], fc[order]
    # for a candidate with cost c, the front's best y among costs ≤ c bounds its improvement from above;
    # the staircase between c and the next front cost with a lower y is what it adds
    out = np.zeros(len(y))
    for i in range(len(y)):
        ci, yi = cost[i], y[i]
        if ci >= ref[1] or yi >= ref[0]:
            continue
        upper = ref[0]
        k = np.searchsorted(fc, ci, side="right")
        if k:
            upper = min(upper, fy[:k].min())
        if yi >= upper:
            continue
        # walk the front points with cost > ci and y between yi and upper
        area, x0, level = 0.0, ci, upper
        for cj, yj in zip(fc[k:], fy[k:]):
            if yj >= level:
                continue
            area += (cj - x0) * (level - max(yj, yi))
            if yj <= yi:
                level = yi
                break
            x0, level = cj, yj
        else:
            area += (ref[1] - x0) * (level - yi)
            level = yi
        out[i] = area
    return out


def diverse_batch(score: np.ndarray, unit: np.ndarray, k: int, radius: float | None = None,
                  shortlist: int = 64) -> np.ndarray:
    """Indices of *k* candidates chosen greedily by score, penalising closeness to those already chosen."""
    n = len(score)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k == 1:
        return np.array([int(np.argmax(score))])
    width = unit.shape[1]
    radius = radius if radius is not None else RADIUS / max(width, 1)
    m = min(n, max(shortlist * k, 256))
    top = np.argpartition(-score, m - 1)[:m] if m < n else np.arange(n)
    s = score[top].astype(float)
    s = s - min(0.0, float(s.min()))  # scores may be negative (LCB): shift to ≥ 0
    u = unit[top]
    factor = np.ones(len(top))
    chosen: list[int] = []
    for _ in range(k):
        val = s * factor
        val[chosen] = -np.inf
        i = int(np.argmax(val))
        chosen.append(i)
        d = np.abs(u - u[i]).sum(axis=1)
        factor = np.minimum(factor, np.minimum(1.0, d / radius))
        factor = np.maximum(factor, 1e-9)  # still ordered by score when everything is close
    return top[np.array(chosen)]
