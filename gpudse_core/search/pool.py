"""The candidates a search scores: the whole feasible design space, never a point twice.

A search scores candidates over the *whole* feasible space. A space (or a lookup table's rows) with at
most ``ENUMERATE`` feasible points is enumerated once (:class:`FinitePool`); a larger one is streamed
(:class:`StreamingPool`): each round a fresh uniform sample of the feasible space (rejection-free,
:func:`gpudse_core.space.sampling.sample`) plus every one-parameter move around the best designs found
so far (the local search SMAC interleaves with random candidates, Hutter et al. 2011 §4.3). Points
already simulated — successes and failures — are removed, so nothing is proposed twice.

Designs are rows of *digits* (each dimension's value position, :meth:`DesignSpace.decode`); the
surrogate's features are the digits mapped to the rank of their value (a tree is invariant to any
monotone map of a feature, so ranks lose nothing and need no scaling).
"""

from __future__ import annotations

from typing import Any

import numpy as np

ENUMERATE = 200_000  # feasible points scored exhaustively every round
POOL = 5_000  # random candidates per round for a larger space
LOCAL_CENTRES = 5  # incumbents whose one-parameter neighbours are scored each round


def rank_tables(space: Any) -> list[np.ndarray]:
    """Per dimension: digit → rank of its value (numbers by value, categories in listed order)."""
    out = []
    for dim in space.dimensions:
        p = dim.parameters[0]
        if p.kind == "numeric" and len(dim.parameters) == 1:
            order = np.argsort(np.asarray(p.values, dtype=float), kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            out.append(rank)
        else:
            out.append(np.arange(dim.size, dtype=np.int64))
    return out


def row_keys(digits: np.ndarray) -> np.ndarray:
    """One hashable key per digit row (a void view: exact for any number of dimensions)."""
    d = np.ascontiguousarray(np.asarray(digits, dtype=np.int64))
    return d.view(np.dtype((np.void, d.dtype.itemsize * d.shape[1]))).ravel()


class _Pool:
    def __init__(self, space: Any):
        self.space = space
        self.ranks = rank_tables(space)
        self.radices = np.array(space.radices, dtype=np.int64)
        self.seen: set[bytes] = set()

    def features(self, digits: np.ndarray) -> np.ndarray:
        d = np.asarray(digits, dtype=np.int64)
        return np.column_stack([self.ranks[j][d[:, j]] for j in range(d.shape[1])]).astype(np.float64)

    def unit(self, digits: np.ndarray) -> np.ndarray:
        """Features scaled to [0, 1] per dimension (for distances)."""
        return self.features(digits) / np.maximum(self.radices - 1, 1)

    def mark(self, digits: np.ndarray) -> None:
        for k in row_keys(digits):
            self.seen.add(k.tobytes())

    def _fresh(self, digits: np.ndarray) -> np.ndarray:
        if not len(digits):
            return digits
        keys = row_keys(digits)
        _, first = np.unique(keys, return_index=True)
        first.sort()
        keep = [i for i in first if keys[i].tobytes() not in self.seen]
        return digits[np.array(keep, dtype=np.int64)] if keep else digits[:0]


class FinitePool(_Pool):
    """Every feasible design, enumerated (a small space, or the rows of a lookup table)."""

    def __init__(self, space: Any, digits: np.ndarray):
        super().__init__(space)
        self.all = np.asarray(digits, dtype=np.int64).reshape(-1, len(space.radices))
        self.keys = row_keys(self.all)
        self.left = np.ones(len(self.all), dtype=bool)
        self._where = {k.tobytes(): i for i, k in enumerate(self.keys)}

    @property
    def size(self) -> int:
        return len(self.all)

    def mark(self, digits: np.ndarray) -> None:
        super().mark(digits)
        for k in row_keys(digits):
            i = self._where.get(k.tobytes())
            if i is not None:
                self.left[i] = False

    def remaining(self) -> int:
        return int(self.left.sum())

    def initial(self, n: int, rng: np.random.Generator, method: str = "uniform") -> np.ndarray:
        idx = np.flatnonzero(self.left)
        n = min(n, len(idx))
        if method == "lhs" and n > 1:  # stratify each dimension, then take the nearest unused rows
            return _nearest_rows(self, self.all[idx], _lhs_targets(self.radices, n, rng))
        return self.all[rng.choice(idx, size=n, replace=False)]

    def candidates(self, rng: np.random.Generator, incumbents: np.ndarray) -> np.ndarray:
        return self.all[self.left]


class StreamingPool(_Pool):
    """A space too large to enumerate: a fresh uniform sample plus local moves each round."""

    def __init__(self, space: Any, pool: int = POOL, centres: int = LOCAL_CENTRES):
        super().__init__(space)
        self.pool, self.centres = pool, centres

    @property
    def size(self) -> int | None:
        return self.space.feasible_size

    def remaining(self) -> int:
        size = self.size
        return 1 << 62 if size is None else size - len(self.seen)

    def _uniform(self, n: int, rng: np.random.Generator, method: str = "uniform") -> np.ndarray:
        from ..space.sampling import sample

        size = self.space.feasible_size
        if size is not None:
            n = min(n, size)
        s = sample(self.space, n, seed=int(rng.integers(0, 2**31 - 1)), method=method)
        return self.space.decode(s.indices) if s.indices is not None else self._digits(s)

    def _digits(self, s: Any) -> np.ndarray:
        cols = s.points
        return np.array([self.space.digits_of_point(r) for r in cols.to_dict(orient="records")], dtype=np.int64)

    def initial(self, n: int, rng: np.random.Generator, method: str = "uniform") -> np.ndarray:
        return self._fresh(self._uniform(n, rng, method))

    def candidates(self, rng: np.random.Generator, incumbents: np.ndarray) -> np.ndarray:
        parts = [self._uniform(self.pool, rng)]
        if len(incumbents):
            parts.append(self.neighbours(incumbents[: self.centres]))
        d = np.concatenate(parts)
        return self._fresh(d)

    def neighbours(self, centres: np.ndarray) -> np.ndarray:
        """Every feasible design that differs from a centre in one dimension."""
        rows = []
        for c in np.asarray(centres, dtype=np.int64):
            for j, r in enumerate(self.radices):
                if r < 2:
                    continue
                block = np.repeat(c[None, :], r, axis=0)
                block[:, j] = np.arange(r)
                rows.append(block)
        if not rows:
            return np.zeros((0, len(self.radices)), dtype=np.int64)
        d = np.concatenate(rows)
        if self.space.constraints:
            d = d[self.space.feasible_mask(d)]
        return d


def _lhs_targets(radices: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n unit-cube points, each dimension stratified into n equal bins (McKay et al. 1979)."""
    u = (np.argsort(rng.random((len(radices), n)), axis=1).T + rng.random((n, len(radices)))) / n
    return u


def _nearest_rows(pool: _Pool, rows: np.ndarray, targets: np.ndarray) -> np.ndarray:
    unit = pool.unit(rows)
    taken = np.zeros(len(rows), dtype=bool)
    out = []
    for t in targets:
        dist = np.abs(unit - t).sum(axis=1)
        dist[taken] = np.inf
        i = int(np.argmin(dist))
        taken[i] = True
        out.append(i)
    return rows[np.array(out)]


def make_pool(space: Any, feasible_digits: np.ndarray | None = None, enumerate_up_to: int = ENUMERATE) -> _Pool:
    """The pool for *space*: its given feasible rows, its enumeration when small, else a stream."""
    if feasible_digits is not None:
        return FinitePool(space, feasible_digits)
    size = space.feasible_size
    if size is not None and size <= enumerate_up_to and space.size <= 4 * enumerate_up_to:
        d = space.decode_range(0, space.size)
        if space.constraints:
            d = d[space.feasible_mask(d)]
        return FinitePool(space, d)
    return StreamingPool(space)
