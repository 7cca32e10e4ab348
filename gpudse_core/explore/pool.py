"""Exact top-k and Pareto candidates kept while blocks stream past, mergeable across workers.

Cells are compared by their *key*, the model's prediction (lower is better once the sign for
``maximize`` is applied), then by the index of their first design. A scan computes an approximate
value ``f`` on the transformed scale, within ``eps`` of the value ``model.predict`` computes; the
bound (a clip to ``[lo, hi]``) and the back-transform are monotone, so a cell's key lies between
``clip(f - eps)`` and ``clip(f + eps)`` after them. Monotone is not strict: the back-transform can
merge two close values into one prediction (a tie the design index decides), so ``eps`` includes what
it merges (:func:`.best._collapse`). The pools keep every cell that might belong to the answer given
those intervals, and nothing that certainly does not:

* :class:`TopK` keeps cells whose lower end is at most the k-th smallest upper end; of cells tied
  exactly at that value (both ends equal, e.g. clipped by the bound) it keeps the k with the
  smallest first design index. With ``distinct`` it keeps one cell per tie group (the one with the
  smallest first design), so its k are k designs the model can tell apart. A block is skipped when k kept cells
  certainly precede every cell it
  could hold.
* :class:`Front` keeps cells that no other cell certainly dominates on (cost, key), ties going to the
  smaller index, and skips a block whose best corner is certainly dominated.

The final answer is decided afterwards on the candidates with ``model.predict`` itself, so it equals
brute force. A pool is plain arrays: workers return theirs and :meth:`merge` combines them exactly.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import GpudseError


def at_most(x: float, dtype: np.dtype) -> np.generic:
    """The largest value of *dtype* not above *x* (comparing float32 values with it is exact)."""
    v = np.asarray(x, dtype=dtype)[()]
    return np.nextafter(v, v.dtype.type(-np.inf)) if float(v) > x else v


def lex_less(w: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Rows of *w* (n × words) lexicographically smaller than *ref* (words)."""
    less = np.zeros(w.shape[0], dtype=bool)
    eq = np.ones(w.shape[0], dtype=bool)
    for j in range(w.shape[1]):
        less |= eq & (w[:, j] < ref[j])
        eq &= w[:, j] == ref[j]
    return less


def lex_order(w: np.ndarray) -> np.ndarray:
    return np.lexsort(w.T[::-1]) if w.shape[1] > 1 else np.argsort(w[:, 0], kind="stable")


def front_indices(cost: np.ndarray, key: np.ndarray, *tiebreak: np.ndarray) -> np.ndarray:
    """The Pareto front of points (cost, key), both lower is better: positions of the points no other
    point beats on both, in increasing cost. Points equal on both go to the smallest *tiebreak*
    (arrays, most significant first; by default the position)."""
    cost, key = np.asarray(cost, dtype=np.float64), np.asarray(key, dtype=np.float64)
    ties = tiebreak or (np.arange(cost.shape[0]),)
    order = np.lexsort((*reversed(ties), key, cost))
    k = key[order]
    best_before = np.minimum.accumulate(np.concatenate([[np.inf], k[:-1]]))
    return order[k < best_before]


def per_group(g: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Mask keeping, of each group, the *k* members with the smallest first-design index."""
    n = g.shape[0]
    if n <= k:
        return np.ones(n, dtype=bool)
    order = np.lexsort((*w.T[::-1], g))
    gs = g[order]
    pos = np.arange(n)
    start = np.maximum.accumulate(np.where(np.concatenate([[True], gs[1:] != gs[:-1]]), pos, 0))
    keep = np.zeros(n, dtype=bool)
    keep[order[pos - start < k]] = True
    return keep


class _Pool:
    """Cells with their value ``f``, first-design index ``w`` (words) and *tie group* ``g``: cells of
    one group read the same values of every parameter the model (and cost) reads, so their
    predictions are equal and only the smallest indices among them can matter."""

    def __init__(self, eps: float, lo: float, hi: float, n_words: int, rel: float = 0.0):
        self.eps, self.lo, self.hi = float(eps), float(lo), float(hi)
        self.rel = float(rel)  # a margin relative to the value as well (model.predict's last bits, see margin)
        self.cell = np.zeros(0, dtype=np.int64)
        self.f = np.zeros(0)
        self.w = np.zeros((0, n_words), dtype=np.int64)
        self.g = np.zeros(0, dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self.cell.shape[0])

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_mask"}

    def margin(self, f):
        """How far a scanned value may lie from ``model.predict``'s: ``eps``, plus ``rel`` times its size
        (a scan through ``model.predict`` itself: the last bits of a matrix product depend on how many
        rows it is given, so a block's value and the final batch's can differ by a few ulps)."""
        return self.eps + self.rel * np.abs(f) if self.rel else self.eps

    def key_range(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = self.margin(f)
        return np.clip(f - m, self.lo, self.hi), np.clip(f + m, self.lo, self.hi)

    def _take(self, keep: np.ndarray) -> None:
        for name in self._arrays:
            setattr(self, name, getattr(self, name)[keep])


class TopK(_Pool):
    _arrays = ("cell", "f", "w", "g")

    def __init__(self, k: int, eps: float, lo: float, hi: float, n_words: int, cap: int = 1 << 62,
                 distinct: bool = False, rel: float = 0.0):
        super().__init__(eps, lo, hi, n_words, rel)
        self.k, self.cap = int(k), int(cap)
        self.per_group = 1 if distinct else self.k  # distinct: one cell (the first design) per tie group
        self._u = np.zeros(0)
        self._t = np.inf

    @property
    def threshold(self) -> float:
        """The k-th smallest upper key: no cell above it can be in the answer."""
        return self._t

    def _threshold(self) -> float:
        if self.n < self.k:
            return np.inf
        return float(np.partition(self._u, self.k - 1)[self.k - 1])

    def select(self, f: np.ndarray) -> np.ndarray:
        """Positions of a block's values (float32 or float64, lower is better) that may enter the pool."""
        t = self.threshold
        # a block's own k-th value bounds the answer only when its k cells are k answers (not when
        # several of them may be one tie group of a distinct top-k)
        if f.shape[0] >= self.k and self.k > 0 and not np.isfinite(t) and self.per_group == self.k:
            kth = float(np.partition(f, self.k - 1)[self.k - 1])
            t = min(t, float(np.clip(kth + self.margin(kth), self.lo, self.hi)))
        if t >= self.hi or not np.isfinite(t):
            return np.arange(f.shape[0])
        mask = self.__dict__.get("_mask")
        if mask is None or mask.shape[0] != f.shape[0]:
            mask = self._mask = np.empty(f.shape[0], dtype=bool)
        np.less_equal(f, at_most(t + self.eps + 2 * self.rel * abs(t), f.dtype), out=mask)
        return np.flatnonzero(mask)

    def add(self, cell: np.ndarray, f: np.ndarray, w: np.ndarray, g: np.ndarray) -> None:
        self.cell = np.concatenate([self.cell, cell.astype(np.int64)])
        self.f = np.concatenate([self.f, f.astype(np.float64)])
        self.w = np.concatenate([self.w, w.astype(np.int64)])
        self.g = np.concatenate([self.g, g.astype(np.int64)])
        self._take(per_group(self.g, self.w, self.per_group))
        self._trim()

    def merge(self, other: "TopK") -> None:
        """Add another pool's cells (e.g. a worker's); cells both hold are kept once."""
        new = ~np.isin(other.cell, self.cell)
        self.add(other.cell[new], other.f[new], other.w[new], other.g[new])

    def beyond(self, lower: float) -> bool:
        """True when no cell whose values are at least *lower* can enter the answer."""
        return self.n >= self.k and float(np.clip(lower - self.margin(lower), self.lo, self.hi)) > self.threshold

    def _trim(self) -> None:
        lo, up = self.key_range(self.f)
        self._u = up
        t = self._threshold()
        keep = lo <= t
        tie = np.flatnonzero(keep & (lo == up) & (up == t))
        if tie.shape[0] > self.k:
            keep[tie[lex_order(self.w[tie])[self.k:]]] = False
        self._take(keep)
        self._u = up[keep]
        self._t = self._threshold()
        if self.n > self.cap:
            raise GpudseError(f"more than {self.cap:,} designs are within the scan's error margin of the best "
                              f"{self.k:,}; ask for fewer (--top) or restrict the space with --where")

    def prunable(self, lower: float, wmin: np.ndarray) -> bool:
        """True when k kept cells certainly precede every cell of a block whose values are at least
        *lower* and whose first design indices are at least *wmin*."""
        if self.n < self.k:
            return False
        lk = float(np.clip(lower - self.margin(lower), self.lo, self.hi))
        if lk != self._t:  # below the k-th smallest upper key fewer than k cells precede for sure
            return lk > self._t
        before = int(np.count_nonzero(self._u < lk))
        eq = self._u == lk
        if eq.any():
            before += int(np.count_nonzero(lex_less(self.w[eq], wmin)))
        return before >= self.k


class Front(_Pool):
    _arrays = ("cell", "f", "c", "w", "g")

    def __init__(self, eps: float, eps_c: float, lo: float, hi: float, n_words: int, cap: int, label: str = "cost",
                 rel: float = 0.0):
        super().__init__(eps, lo, hi, n_words, rel)
        self.eps_c = float(eps_c)
        self.c = np.zeros(0)
        self.cap, self.label = int(cap), label
        self._stair()

    def _stair(self) -> None:
        lo, up = self.key_range(self.f)
        self._lk, self._uk = lo, up
        self._uc = self.c + self.eps_c
        order = np.argsort(self._uc, kind="stable")
        self._ucs = self._uc[order]
        self._pm = np.concatenate([[np.inf], np.minimum.accumulate(up[order])]) if self.n else np.array([np.inf])

    def dominated(self, lc: np.ndarray, lk: np.ndarray) -> np.ndarray:
        """Which (lower cost, lower key) pairs a kept cell certainly dominates strictly."""
        if self.n == 0:
            return np.zeros(np.shape(lc), dtype=bool)
        na = np.searchsorted(self._ucs, lc, "left")  # kept cells with upper cost < lc
        nb = np.searchsorted(self._ucs, lc, "right")  # ... <= lc
        return (self._pm[na] <= lk) | (self._pm[nb] < lk)

    def select(self, f: np.ndarray, c: np.ndarray) -> np.ndarray:
        lk = np.clip(f - self.margin(f), self.lo, self.hi)
        return np.flatnonzero(~self.dominated(c - self.eps_c, lk))

    def add(self, cell: np.ndarray, f: np.ndarray, c: np.ndarray, w: np.ndarray, g: np.ndarray) -> None:
        self.cell = np.concatenate([self.cell, cell.astype(np.int64)])
        self.f = np.concatenate([self.f, f.astype(np.float64)])
        self.c = np.concatenate([self.c, c.astype(np.float64)])
        self.w = np.concatenate([self.w, w.astype(np.int64)])
        self.g = np.concatenate([self.g, g.astype(np.int64)])
        self._take(per_group(self.g, self.w, 1))  # a group is one point (cost, prediction): its first design
        self._stair()
        keep = ~self.dominated(self.c - self.eps_c, self._lk)
        # exact ties (cost and key both certain and equal): only the smallest first index can be on the front
        certain = np.flatnonzero(keep & (self._lk == self._uk) & (self.eps_c == 0))
        if certain.shape[0] > 1:
            sub = certain[np.lexsort((*self.w[certain].T[::-1], self._uk[certain], self.c[certain]))]
            same = np.concatenate([[False], (self.c[sub][1:] == self.c[sub][:-1])
                                   & (self._uk[sub][1:] == self._uk[sub][:-1])])
            keep[sub[same]] = False
        self._take(keep)
        self._stair()
        if self.n > self.cap:
            raise GpudseError(f"--pareto {self.label!r}: more than {self.cap:,} designs may lie on the Pareto front; "
                              f"restrict the space with --where or use a coarser cost")

    def merge(self, other: "Front") -> None:
        new = ~np.isin(other.cell, self.cell)
        self.add(other.cell[new], other.f[new], other.c[new], other.w[new], other.g[new])

    def prunable(self, lower: float, lower_c: float, wmin: np.ndarray) -> bool:
        lk = float(np.clip(lower - self.margin(lower), self.lo, self.hi))
        lc = lower_c - self.eps_c
        if bool(self.dominated(np.array([lc]), np.array([lk]))[0]):
            return True
        weak = (self._uc <= lc) & (self._uk <= lk)
        return bool(weak.any() and lex_less(self.w[weak], wmin).any())


def run_blocks(ev, blocks: np.ndarray, topk: TopK | None, front: Front | None,
               bounds: tuple[np.ndarray, np.ndarray | None, np.ndarray] | None = None, ascending: bool = False,
               stop: Callable[[], bool] | None = None, tick: Callable[[int], None] | None = None
               ) -> tuple[int, int, bool, int]:
    """Evaluate *blocks* of evaluator *ev* in order into the pools, skipping blocks the pools rule out.

    *bounds* holds, aligned with *blocks*, each block's lower bound on the value and on the cost and
    its smallest first-design index; with *ascending* (blocks sorted by the value bound) the scan
    ends at the first block beyond the top-k threshold. Returns (cells evaluated, blocks skipped,
    finished, feasible cells seen); *stop()* returning True ends it early with what was done kept.
    """
    lb, lc, wmin = bounds if bounds is not None else (None, None, None)
    evaluated = skipped = seen = 0
    blocks = np.asarray(blocks)
    for i in range(blocks.shape[0]):  # (not .tolist(): millions of blocks would be as many Python ints)
        b = int(blocks[i])
        if stop is not None and stop():
            return evaluated, skipped, False, seen
        if lb is not None:
            if ascending and front is None and topk is not None and topk.beyond(lb[i]):
                skipped += len(blocks) - i
                if tick is not None:
                    tick((len(blocks) - i) * ev.block_cells)  # ascending scans have equal blocks
                break
            if (topk is None or topk.prunable(lb[i], wmin[i])) and \
                    (front is None or front.prunable(lb[i], lc[i], wmin[i])):
                skipped += 1
                if tick is not None:
                    tick(ev.block_size(b))
                continue
        blk = ev.evaluate(b)
        evaluated += ev.block_size(b)
        seen += blk.n
        if blk.n:
            f = blk.f
            if topk is not None:
                sel = topk.select(f)
                if sel.size:
                    loc = sel if blk.local is None else blk.local[sel]
                    cells = ev.cells(b, loc)
                    topk.add(cells, f[sel], ev.weights(b, loc), ev.groups(b, loc, front=False))
            if front is not None:
                sel = front.select(f.astype(np.float64), blk.c)
                if sel.size:
                    loc = sel if blk.local is None else blk.local[sel]
                    cells = ev.cells(b, loc)
                    front.add(cells, f[sel], blk.c[sel], ev.weights(b, loc), ev.groups(b, loc, front=True))
        if tick is not None:
            tick(ev.block_size(b))
    return evaluated, skipped, True, seen
