"""Weighted K-means for Zatel's colour quantisation (paper 002 §III-B, Fig. 3 step 2; speed at scale).

A heatmap has few distinct colours (the three LumiBench heatmaps: 826–1,240 among 262,144 pixels),
and K-means over the pixels is exactly K-means over the distinct colours weighted by their pixel
counts: the same objective (inertia Σ w·‖x − c‖²), the same partitions, the same centres. This module
is scikit-learn's ``KMeans(algorithm="lloyd")`` specialised to that small weighted problem:

* seeding: greedy k-means++ as in scikit-learn (the first centre drawn ∝ weight, each next one the
  best of 2 + ⌊ln k⌋ candidates drawn ∝ weight·D², both by inverse CDF over cumulative sums, which
  are exact for integer colours and counts);
* Lloyd iterations until no label changes (scikit-learn's "strict convergence", i.e. ``tol=0``), an
  empty cluster being moved to the point farthest from its centre, as scikit-learn does;
* the best of ``n_init`` seedings by inertia.

Why not scikit-learn itself: importing it costs about 1 s here, more than the whole ``gpudse pixels``
budget, and its per-call overhead dominates on a thousand points. ``tests/test_kmeans.py``
checks this against scikit-learn: from the same initial centres the labels, centres and inertia are
equal, and from its own seeding the inertia is no worse than scikit-learn's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ROWS_PER_PASS = 1 << 15  # points per distance block: bounds the n x k x d temporary


@dataclass
class KMeansResult:
    centres: np.ndarray  # k x d
    labels: np.ndarray  # n, cluster of each point
    inertia: float  # sum of weight * squared distance to the point's centre
    n_iter: int  # Lloyd iterations of the chosen run


def sq_distances(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (n × k), computed as Σ (x − c)² (exact for integer colours)."""
    out = np.empty((x.shape[0], centres.shape[0]))
    for a in range(0, x.shape[0], ROWS_PER_PASS):
        diff = x[a:a + ROWS_PER_PASS, None, :] - centres[None, :, :]
        np.einsum("nkd,nkd->nk", diff, diff, out=out[a:a + ROWS_PER_PASS])
    return out


def assign(x: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of every point (ties to the lower index) and its squared distance."""
    labels = np.empty(x.shape[0], dtype=np.intp)
    dist = np.empty(x.shape[0])
    for a in range(0, x.shape[0], ROWS_PER_PASS):
        d = sq_distances(x[a:a + ROWS_PER_PASS], centres)
        labels[a:a + ROWS_PER_PASS] = d.argmin(axis=1)
        dist[a:a + ROWS_PER_PASS] = d[np.arange(d.shape[0]), labels[a:a + ROWS_PER_PASS]]
    return labels, dist


def kmeans_plusplus(x: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Greedy weighted k-means++ seeding (scikit-learn's ``_kmeans_plusplus``)."""
    n = x.shape[0]
    trials = 2 + int(math.log(k))
    centres = np.empty((k, x.shape[1]))
    # the first centre drawn ∝ weight by inverse CDF: with integer weights (pixel counts) the cumulative sums are
    # exact, so the same draw picks the same colour whether one walks distinct colours or pixels sorted by colour
    centres[0] = x[min(int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right")), n - 1)]
    closest = sq_distances(x, centres[:1])[:, 0]
    potential = float(closest @ w)
    for c in range(1, k):
        cum = np.cumsum(w * closest)
        cand = np.minimum(np.searchsorted(cum, rng.uniform(size=trials) * potential), n - 1)
        d = np.minimum(closest[:, None], sq_distances(x, x[cand]))  # n x trials
        pots = w @ d
        best = int(pots.argmin())
        potential, closest = float(pots[best]), d[:, best]
        centres[c] = x[cand[best]]
    return centres


def lloyd(x: np.ndarray, w: np.ndarray, centres: np.ndarray, max_iter: int = 300) -> KMeansResult:
    """Lloyd iterations from *centres* until no label changes (or *max_iter*)."""
    k = centres.shape[0]
    centres = centres.astype(np.float64, copy=True)
    labels, dist = assign(x, centres)
    it = 0
    for it in range(1, max_iter + 1):
        wsum = np.bincount(labels, weights=w, minlength=k)
        empty = np.flatnonzero(wsum == 0)
        if empty.size:  # move each empty cluster to one of the points farthest from their centre
            far = np.argsort(-dist, kind="stable")[: empty.size]
            centres[empty] = x[far]
            labels[far] = empty
            wsum = np.bincount(labels, weights=w, minlength=k)
        for j in range(x.shape[1]):
            centres[:, j] = np.bincount(labels, weights=w * x[:, j], minlength=k) / np.maximum(wsum, 1e-300)
        new, dist = assign(x, centres)
        if np.array_equal(new, labels):
            break
        labels = new
    return KMeansResult(centres, labels, float(dist @ w), it)


def kmeans(x: np.ndarray, w: np.ndarray, k: int, *, n_init: int = 10, max_iter: int = 300,
           seed: int = 0) -> KMeansResult:
    """Best of *n_init* seeded Lloyd runs of weighted K-means of the points *x* (n × d) with weights *w*.

    *k* must be between 1 and the number of distinct points (the caller checks and says so)."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if x.ndim != 2 or w.shape != (x.shape[0],) or not 1 <= k <= x.shape[0]:
        raise ValueError(f"kmeans: {x.shape} points, {w.shape} weights, k = {k}")
    rng = np.random.default_rng(seed)
    best: KMeansResult | None = None
    for _ in range(max(1, n_init)):
        run = lloyd(x, w, kmeans_plusplus(x, w, k, rng), max_iter)
        if best is None or run.inertia < best.inertia:
            best = run
    return best  # type: ignore[return-value]
