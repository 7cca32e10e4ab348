"""Level cells: indicator terms for combinations of parameter levels, after the stepwise search.

A tuning space is a grid of a few levels per parameter, and its runtime has corners that no sum of
smooth curves and their products follows: on the A100's 2D convolution (benchmark_hub) the designs
with one tile width and one memory setting run slower than every term of the spline model says,
and a random forest, which splits on levels, finds them. This step gives the stepwise model the
same reach while keeping it a list of readable terms.

The method (``StepwiseRegression(cells=True)``, the robust default; step 10 of :mod:`.stepwise`):

1. **Candidates.** Every conjunction of two or three conditions ``p = v`` on the model's parameters
   (each with at most :data:`.splines.MAX_CELL_LEVELS` distinct training values), that holds for at
   least :data:`MIN_ROWS` training rows and fails for at least as many, is a candidate column
   (1 where it holds, else 0); identical columns are kept once. A numeric parameter of more than
   :data:`STEP_LEVELS` values also has threshold conditions ``p >= v`` (at each value but the lowest): it has
   too few rows per value for an equality to hold for enough of them, and its corners are steps across values
   (Starchart's k-means runs 2× slower from 18 threads per point on with the non-consecutive pattern).
   The work is bounded before it starts: at most :data:`MAX_CANDIDATES` columns, and no more than the
   limits ``cell_bytes`` (the columns' memory) and ``cell_work`` (rows × conjunctions tried) allow,
   pairs first; a triple is only tried where its first two conditions hold for enough rows. With
   ``max_order=2`` only pairs are candidates, and with ``max_terms`` only cells on parameter sets the
   model has a term for.
2. **Selection.** Forward selection by partial F-test against the model's columns: the candidate
   that lowers the residual sum of squares most is accepted while its p-value is below
   ``ALPHA / m`` (Bonferroni over the m candidates: the family of tests is the whole candidate set),
   at most :data:`MAX_CELLS` of them. It runs on the fit's working response (the data for a
   least-squares model, the Huber pseudo-observations for a robust one).
3. **Passes** (a robust model only). Huber's pseudo-observations clip the rows of a large corner
   as outlying, so the corner looks smaller than it is. The selection makes :data:`ROUNDS` passes,
   each on the pseudo-observations of the previous pass's fit with its cells: a corner the cells
   fit is no longer clipped, and the next pass sees it whole.
4. **Keep or not.** Of the passes, the one whose rows left out one at a time are predicted best is
   taken. It replaces the model without cells only when it predicts them more than ``TIE`` better.
   The figure is the leave-one-out error that chooses the transform, the pruning and the robust round.

A cell is an interaction column: it joins the model's term for its parameters (``tile_size_x:use_shmem``
gains one column, ``[tile_size_x=3] * [use_shmem=1]``), so the coefficient table, the ANOVA, the
equation and the explore tables show it like any other column. It is the cell mean of an ANOVA
interaction, or a rule of RuleFit (Friedman & Popescu, *Predictive learning via rule ensembles*,
2008) restricted to equality conditions, fitted by least squares and tested like the other terms.
Measured in docs/models.md ("Real tuning spaces").
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, product
from typing import Any, Callable, Mapping

import numpy as np

from .fitted import column_basis
from .splines import MAX_CELL_LEVELS

ALPHA = 0.05  # family-wise level of the selection (Bonferroni over the candidates)
MIN_ROWS = 8  # a cell must hold for, and fail for, at least this many training rows
MAX_CELLS = 20  # cells accepted at most
MAX_CANDIDATES = 20_000  # candidate columns formed at most (pairs first, then triples while room is left)
ORDERS = (2, 3)  # conditions per cell
STEP_LEVELS = 16  # numeric parameters of more distinct values than this also have threshold conditions p >= v


@dataclass(frozen=True)
class AtLeast:
    """A threshold condition's level: the cell holds where the parameter's value is at least *value*."""

    value: float
TIE = 0.02  # the cells are kept only when their leave-one-out error is lower by more than this share
ROUNDS = 5  # a robust model: selection passes, each on the pseudo-observations of the last fit with its cells


@dataclass
class Candidates:
    """The candidate cell columns (n × m, 0/1), their conditions ``((param, level), …)``, the parameters
    left out for having more than :data:`.splines.MAX_CELL_LEVELS` levels, and whether a budget
    (:data:`MAX_CANDIDATES`, the limits ``cell_bytes`` and ``cell_work``) cut the list short."""

    columns: np.ndarray
    conditions: list[tuple]
    too_many_levels: list[str]
    truncated: bool


def candidates(values: Mapping[str, np.ndarray], text: Mapping[str, bool], orders: tuple[int, ...] = ORDERS,
               allowed: Callable[[tuple[str, ...]], bool] | None = None) -> Candidates:
    """Candidate cell columns from the training *values* of the parameters (``text[p]``: compare by
    text), for conjunctions of as many conditions as *orders* allows and, with *allowed*, only on
    parameter sets it accepts. Bounded before the work: at most :data:`MAX_CANDIDATES` columns and
    ``cell_bytes`` of them, and ``cell_work`` rows × conjunctions tried; a triple is only tried where
    its first two conditions already hold for :data:`MIN_ROWS` rows."""
    from .. import limits

    lim = limits.current()
    names, many = [], []
    for p, v in values.items():
        k = np.unique(_key(v, text[p])).size
        if k > MAX_CELL_LEVELS:
            many.append(p)
        elif k > 1:
            names.append(p)
    n = len(next(iter(values.values()))) if values else 0
    cap = int(min(MAX_CANDIDATES, lim.cell_bytes // (8 * max(n, 1))))
    work_cap = lim.cell_work // max(n, 1)
    conds: dict[str, list[tuple[Any, np.ndarray]]] = {}
    for p in names:
        k = _key(values[p], text[p])
        levels = np.unique(k)
        conds[p] = [(lvl, k == lvl) for lvl in levels]
        if not text[p] and levels.size > STEP_LEVELS:
            conds[p] += [(AtLeast(float(lvl)), k >= lvl) for lvl in levels[1:]]
    cols: list[np.ndarray] = []
    desc: list[tuple] = []
    seen: set[bytes] = set()
    tried = 0
    truncated = False

    def offer(mask: np.ndarray, parts: tuple) -> None:
        nonlocal truncated
        c = int(mask.sum())
        if c < MIN_ROWS or c > n - MIN_ROWS:
            return
        h = np.packbits(mask).tobytes()
        if h in seen:
            return
        if len(cols) >= cap:
            truncated = True
            return
        seen.add(h)
        cols.append(mask)
        desc.append(parts)

    if 2 in orders:
        for a, b in combinations(names, 2):
            if allowed is not None and not allowed((a, b)):
                continue
            for (la, ma), (lb, mb) in product(conds[a], conds[b]):
                if tried >= work_cap:
                    break
                tried += 1
                offer(ma & mb, ((a, la), (b, lb)))
    if 3 in orders:
        for a, b, c in combinations(names, 3):
            if truncated or tried >= work_cap:
                break
            if allowed is not None and not allowed((a, b, c)):
                continue
            for (la, ma), (lb, mb) in product(conds[a], conds[b]):
                if tried >= work_cap:
                    break
                ab = ma & mb
                tried += 1
                if int(ab.sum()) < MIN_ROWS:  # no third condition can make it hold for enough rows
                    continue
                for lc, mc in conds[c]:
                    tried += 1
                    offer(ab & mc, ((a, la), (b, lb), (c, lc)))
    if tried >= work_cap:
        truncated = True
    C = np.column_stack(cols).astype(float) if cols else np.zeros((n, 0))
    return Candidates(C, desc, many, truncated)


def _key(values: np.ndarray, text: bool) -> np.ndarray:
    return np.asarray(values, dtype=object).astype(str) if text else np.asarray(values, dtype=float)


def select(A: np.ndarray, z: np.ndarray, C: np.ndarray) -> list[int]:
    """Forward selection of columns of *C* against the design *A* on the response *z* (step 2 of the
    module docstring); returns the chosen column indices in order of acceptance."""
    from scipy import stats

    n, m = C.shape
    if m == 0:
        return []
    q = column_basis(A)
    rank = q.shape[1]
    R = C - q @ (q.T @ C)
    resid = z - q @ (q.T @ z)
    norms0 = np.einsum("ij,ij->j", C, C)
    rss = float(resid @ resid)
    limit = ALPHA / m
    chosen: list[int] = []
    for _ in range(MAX_CELLS):
        nn = np.einsum("ij,ij->j", R, R)
        ok = nn > 1e-8 * norms0
        if chosen:
            ok[chosen] = False
        if not ok.any():
            break
        gain = np.where(ok, (R.T @ resid) ** 2 / np.where(ok, nn, 1.0), 0.0)
        j = int(np.argmax(gain))
        dof = n - rank - len(chosen) - 1
        if dof < 1 or rss <= 0:
            break
        f = gain[j] / max((rss - gain[j]) / dof, 1e-300)
        if float(stats.f.sf(f, 1, dof)) >= limit:
            break
        chosen.append(j)
        qj = R[:, j] / np.sqrt(nn[j])
        resid = resid - qj * (qj @ resid)
        R -= np.outer(qj, qj @ R)
        rss = float(resid @ resid)
    return chosen


def label(conditions: tuple, fmt) -> str:
    """``tile_size_x=3 & use_shmem=1``: a cell's conditions as text (*fmt* formats a level)."""
    return " & ".join(f"{p}>={fmt(v.value)}" if isinstance(v, AtLeast) else f"{p}={fmt(v)}" for p, v in conditions)
