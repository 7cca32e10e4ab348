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
``LOCAL_SHARE`` of the proposals are, for ``SPAN`` simulations, designs not yet simulated within
Hamming distance 1 (designs differing in one parameter; 2, 3 once that ball holds too few) of the
``LOCAL_CENTRES`` best designs simulated (labelled ``local`` in the history), then for ``SPAN``
simulations designs as far as possible from every design simulated (a space-filling restart that keeps
what is known; ``far``), then the region again, and so on; the share grows by ``LOCAL_SHARE`` each
``SPAN`` the stall lasts, up to ``MAX_SHARE``; the rest of each batch stays the models'. An improvement
ends the stall, and the models have the whole batch again.

The region is **walked by what has not been tried, not ranked by the model** (a pattern search, as
Hooke & Jeeves 1961 poll each coordinate of the incumbent): the model that stalled is the one that
learned the optimum's value as bad, and ranked by it the region's designs never reached the one design
that matters. Each candidate is a move from its nearest centre (the parameters it changes, and their
new values); the nearest go first, then the directions least tried from their centre (:func:`polled`),
then the most novel moves (:func:`novelty`: values never simulated, or simulated only far from here),
then the model's score.

Measured (docs/search.md, "Exploration once the search stalls"; batches of 5, 10 seeds): stalled
after 20 simulations with half the batch, the model-ranked region cured conv-MI250X's stalled seed but
raised conv-A100's median regret at 100 simulations from 3.7 % to 14.3 %; after 40, a fifth, it left
every median unchanged and cured no stalled seed. The walk with the growing share leaves every median
of the tables as it was or lower, and improves stalled seeds (MI250X's seed 2 at 200: 48.5 % → 15.5;
A4000's seeds 10, 14 and 16: 23.6 % → 0.4) — but moves others the other way (A100's seed 1: 11.2 %
→ 43.0): a seed's figure at 200 is chaotic.
"""

from __future__ import annotations

import math

import numpy as np

STALL = 40  # simulations without improving the best after which the search is stalled
LOCAL_SHARE = 0.2  # of the proposals made while stalled: the trust region's
LOCAL_CENTRES = 3  # the best designs simulated whose neighbourhood is the region
MAX_RADIUS = 3  # the region grows up to this many differing parameters while it has nothing left
SPAN = 20  # simulations of a stall spent in the region, then as many on a restart far from all simulated, …
MAX_SHARE = 0.6  # the share grows by LOCAL_SHARE each SPAN the stall lasts, up to this


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


def share_at(since: int, share: float, stall: int | None = None, span: int | None = None) -> float:
    """The share of the proposals the exploration takes after a stall of *since* simulations: *share* in
    the stall's first SPAN simulations, one *share* more each further SPAN, up to MAX_SHARE (or *share*
    when it is larger): the longer nothing improves, the less the models that stalled are trusted."""
    stall = STALL if stall is None else stall
    span = SPAN if span is None else span
    if share <= 0 or since < stall:
        return 0.0
    p = (since - stall) // span if span > 0 else 0
    return float(min(max(share, MAX_SHARE), share * (1 + p)))


def phase_start(since: int, stall: int | None = None, span: int | None = None) -> int:
    """The stall's length when its current phase (SPAN simulations of one share and one kind) began."""
    stall = STALL if stall is None else stall
    span = SPAN if span is None else span
    return stall + ((since - stall) // span) * span if span > 0 else stall


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


def novelty(cand: np.ndarray, centres: np.ndarray, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How untried each candidate's moves are in its context, and which parameters it moves.

    A candidate *moves* the parameters in which it differs from its nearest centre (the first, best,
    of equally near ones). Its novelty is the least number of parameters in which it differs from a
    simulated design (*done*) that has the same values of the moved parameters — small when the move
    was tried next to it, large when the moved values were simulated only elsewhere (a tile height tried
    only with a wide tile, where it is slow, counts as untried beside a narrow one), and ``P + 1`` (P
    parameters) when no simulated design has them. Returns (novelty, moved mask)."""
    cand = np.asarray(cand, dtype=np.int64)
    centres = np.asarray(centres, dtype=np.int64)
    done = np.asarray(done, dtype=np.int64).reshape(-1, cand.shape[1])
    far = np.stack([(cand != c[None, :]).sum(axis=1) for c in centres])
    moved = cand != centres[np.argmin(far, axis=0)]
    nov = np.full(len(cand), cand.shape[1] + 1, dtype=np.int64)
    for d in done:
        nov = _closer(nov, cand, moved, d)
    return nov, moved


def _closer(nov: np.ndarray, cand: np.ndarray, moved: np.ndarray, d: np.ndarray) -> np.ndarray:
    """*nov* lowered where the design *d* has a candidate's moved values, to their differing parameters."""
    eq = cand == d[None, :]
    same = (eq | ~moved).all(axis=1)
    return np.where(same, np.minimum(nov, (~eq).sum(axis=1)), nov)


def polled(cand: np.ndarray, centres: np.ndarray, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How often each candidate's direction was tried from its centre already: the simulated designs that
    differ from the candidate's nearest centre in exactly the parameters the candidate moves (any values),
    and each candidate's key of (centre, moved parameters) — a pattern search polls every parameter of the
    incumbent before it polls one twice."""
    from .pool import row_keys

    cand = np.asarray(cand, dtype=np.int64)
    centres = np.asarray(centres, dtype=np.int64)
    done = np.asarray(done, dtype=np.int64).reshape(-1, cand.shape[1])
    near = np.argmin(np.stack([(cand != c[None, :]).sum(axis=1) for c in centres]), axis=0)
    key = row_keys(np.column_stack([near, cand != centres[near]]))  # (centre, the parameters moved)
    tried: dict = {}
    for i, c in enumerate(centres):
        for k in row_keys(np.column_stack([np.full(len(done), i), done != c[None, :]])):
            tried[k.tobytes()] = tried.get(k.tobytes(), 0) + 1
    return np.array([tried.get(k.tobytes(), 0) for k in key], dtype=np.int64), key


def local_picks(cand: np.ndarray, score: np.ndarray, centres: np.ndarray, done: np.ndarray, n: int,
                max_radius: int = MAX_RADIUS) -> np.ndarray:
    """Indices of up to *n* candidates in the trust region, walked by what has not been tried rather
    than by the model (a pattern search from the centres): the designs within the smallest Hamming
    radius (1 to *max_radius*) of *centres* that holds *n* candidates (or the largest that holds any),
    nearest first, then the directions least tried from their centre (:func:`polled`: every parameter
    before any twice), then the most novel moves (:func:`novelty`; *done*: the designs simulated), then
    the best *score*; each pick counts as tried for the next. The model that stalled ranks a move it
    learned as bad last, so a region ranked by it never reaches the one design that matters
    (docs/search.md)."""
    if n <= 0 or not len(cand) or not len(centres):
        return np.zeros(0, dtype=np.int64)
    dist = hamming(cand, centres)
    inside = np.zeros(0, dtype=np.int64)
    for r in range(1, max_radius + 1):
        inside = np.flatnonzero(dist <= r)
        if len(inside) >= n:
            break
    if not len(inside):
        return np.zeros(0, dtype=np.int64)
    c = np.asarray(cand, dtype=np.int64)[inside]
    nov, moved = novelty(c, centres, done)
    tries, key = polled(c, centres, done)
    s = np.where(np.isfinite(score[inside]), score[inside], -np.inf)
    chosen: list[int] = []
    for _ in range(min(n, len(inside))):
        order = np.lexsort((-s, -nov, tries, dist[inside]))  # the last key sorts first
        i = int(next(j for j in order if j not in chosen))
        chosen.append(i)
        nov = _closer(nov, c, moved, c[i])
        tries = tries + (key == key[i])
    return inside[np.array(chosen, dtype=np.int64)]
