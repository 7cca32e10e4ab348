"""Exploration once the search stalls: a local trust region around the best designs simulated.

A forest's expected improvement can settle in one basin of a sharp space: the few designs it simulated
with a parameter's best value also had bad values of another (a tile height that is fast only with a
narrow tile), so the trees learn that value as bad and the spread there is small; the search then
goes on refining the basin it is in and never tries the design one parameter away from its second-best
design that is the optimum (conv-MI250X, batches of 5, seed 2: 48.5 % from the best from its 83rd
simulation to its 200th). Trust-region methods for discrete spaces (CASMOPOLITAN, Wan et al. 2021; TuRBO,
Eriksson et al. 2019, for continuous ones) search a Hamming ball around the incumbent instead of the
whole space, and restart elsewhere when the region fails. Here both are a stall-triggered share of
each batch, not the whole of it: once the best has not improved for ``STALL`` simulations,
``LOCAL_SHARE`` of the proposals are, for ``SPAN`` simulations, the best-scored designs not yet
simulated within Hamming distance 1 (designs differing in one parameter; 2, 3 while that ball has
nothing left) of the ``LOCAL_CENTRES`` best designs simulated (labelled ``local`` in the history),
then for ``SPAN`` simulations designs as far as possible from every design simulated (a space-filling
restart that keeps what is known; ``far``), then the region again, and so on; the rest of each batch
stays the models'. An improvement ends the stall, and the models have the whole batch again.

Measured (docs/search.md, "Exploration once the search stalls"; batches of 5, 10 seeds): stalled
after 20 simulations with half the batch, the region alone cured conv-MI250X's stalled seed but raised
conv-A100's median regret at 100 simulations from 3.7 % to 14.3 %; the default (after 40, a fifth)
leaves every median of the convolution tables and the MGPUSim study unchanged.
"""

from __future__ import annotations

import math

import numpy as np

STALL = 40  # simulations without improving the best after which the search is stalled
LOCAL_SHARE = 0.2  # of the proposals made while stalled: the trust region's
LOCAL_CENTRES = 3  # the best designs simulated whose neighbourhood is the region
MAX_RADIUS = 3  # the region grows up to this many differing parameters while it has nothing left
SPAN = 20  # simulations of a stall spent in the region, then as many on a restart far from all simulated, …


def stalled_for(values: list, sign: float) -> int:
    """Simulations since the best value last improved (*values*: each trial's value or None, in order;
    *sign*: 1 to minimise, -1 to maximise); 0 before any success."""
    best, since = None, 0
    for v in values:
        if v is not None and (best is None or sign * v < sign * best):
            best, since = v, 0
        else:
            since += 1
    return since if best is not None else 0


def owed(counted: list, labels: tuple, share: float, k: int) -> int:
    """How many of the next *k* proposals are *labels*' (surrogate labels), so that their part of
    *counted* (the labels of the proposals since the share applies) and the *k* reaches the whole part
    of *share*: batches of 1 and of 10 give them the same part of the simulations."""
    if share <= 0:
        return 0
    have = sum(c in labels for c in counted)
    return int(min(k, max(0, math.floor((len(counted) + k) * share) - have)))


def hamming(cand: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each candidate's least number of differing parameters from any centre (digit rows)."""
    d = np.full(len(cand), cand.shape[1] if cand.ndim == 2 else 0, dtype=np.int64)
    for c in np.asarray(centres, dtype=np.int64):
        d = np.minimum(d, (cand != c[None, :]).sum(axis=1))
    return d


def phase(since: int, stall: int | None = None, span: int | None = None) -> str:
    """What a stall of *since* simulations explores: ``""`` (not stalled), ``"local"`` (the trust
    region, for SPAN simulations) or ``"far"`` (a restart: designs far from everything simulated, for
    SPAN simulations), then the region again, and so on."""
    stall = STALL if stall is None else stall
    span = SPAN if span is None else span
    if since < stall:
        return ""
    return "local" if span <= 0 or ((since - stall) // span) % 2 == 0 else "far"


def far_picks(cand: np.ndarray, unit: np.ndarray, score: np.ndarray, done_unit: np.ndarray, n: int) -> np.ndarray:
    """Indices of up to *n* candidates chosen one by one as the farthest (L1 on the unit scale) from
    every design simulated and every one already chosen — a space-filling restart conditioned on what
    has been simulated (maximin; ties go to the better *score*)."""
    if n <= 0 or not len(cand):
        return np.zeros(0, dtype=np.int64)
    dist = np.full(len(cand), np.inf)
    for u in np.asarray(done_unit):
        dist = np.minimum(dist, np.abs(unit - u[None, :]).sum(axis=1))
    order = np.argsort(-score, kind="stable")  # ties of distance: the best score first
    chosen: list[int] = []
    for _ in range(min(n, len(cand))):
        d = dist[order].copy()
        d[np.isin(order, chosen)] = -np.inf
        i = int(order[int(np.argmax(d))])
        chosen.append(i)
        dist = np.minimum(dist, np.abs(unit - unit[i][None, :]).sum(axis=1))
    return np.array(chosen, dtype=np.int64)


def local_picks(cand: np.ndarray, unit: np.ndarray, score: np.ndarray, centres: np.ndarray, n: int,
                max_radius: int = MAX_RADIUS) -> np.ndarray:
    """Indices of up to *n* candidates in the trust region — within the smallest Hamming radius (1 to
    *max_radius*) of *centres* that holds any candidate — chosen by *score* as a diverse batch; empty
    when no candidate is that close."""
    from .acquisition import diverse_batch

    if n <= 0 or not len(cand) or not len(centres):
        return np.zeros(0, dtype=np.int64)
    dist = hamming(cand, centres)
    for r in range(1, max_radius + 1):
        inside = np.flatnonzero(dist <= r)
        if len(inside):
            return inside[diverse_batch(score[inside], unit[inside], n)]
    return np.zeros(0, dtype=np.int64)
