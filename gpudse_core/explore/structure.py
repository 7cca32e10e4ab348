"""Which designs a scan must tell apart: the used parameters' sub-space, exactly.

A fitted model reads only some parameters; the designs that agree on those share one prediction.
:func:`build_structure` splits a design space into independent *parts* — free dimensions and the
constrained components of :attr:`DesignSpace.analysis`, plus one component for ``--where`` merging
every part it touches, each enumerated exactly — and restricts each part to the dimensions that are
*used* (by the model or a cost), giving one *axis* per part that has any:

* a free used dimension is an axis over its values;
* a component is an axis over its distinct combinations of used dimensions, each with the number of
  feasible completions over the component's other dimensions.

Every cell of the product of the axes is feasible and stands for all its completions (the product
of the other parts' rows). Because the parts are independent, the index of a cell's *first*
completion in index order is a sum over the axes of per-value numbers (:meth:`Structure.weights`),
and a cell's completions can be listed in index order without visiting the others
(:meth:`Structure.completions`). Design indices beyond 2**62 are handled as several 62-bit *words*
compared lexicographically.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from .. import limits
from ..errors import GpudseError
from ..space.design import DesignSpace, decode_mixed_radix
from ..space.expr import Expression

WORD_LIMIT = 1 << 62  # one word of a design index


def enumeration_limit() -> int:
    """Combinations of the ``--where`` component enumerated exactly: what a space's own constrained
    components may have (``limits.feasibility_points``; 2**22 where that limit does not exist)."""
    return int(getattr(limits.current(), "feasibility_points", 1 << 22))


@dataclass
class Part:
    """Independent dimensions (sorted) and their feasible digit rows in index order."""

    dims: tuple[int, ...]
    rows: np.ndarray  # (size, len(dims)) int64

    @property
    def size(self) -> int:
        return int(self.rows.shape[0])


@dataclass
class Axis:
    """A part restricted to its used dimensions: one value per distinct combination of them."""

    part: int
    dims: tuple[int, ...]  # used dims of the part
    digits: np.ndarray  # (size, len(dims)) digits of those dims for each value, in lexicographic order
    first: np.ndarray  # (size,) the part's row holding each value's first completion
    order: np.ndarray  # the part's rows grouped by value, index order within a value
    start: np.ndarray  # (size + 1,) offsets of each value's rows in `order`

    @property
    def size(self) -> int:
        return int(self.digits.shape[0])

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.start)

    def value_of(self, digits: Sequence[int]) -> int:
        """The value whose digits (of :attr:`dims`) are *digits*, or -1: the values are in
        lexicographic order, so one binary search per column (not a comparison with every value)."""
        lo, hi = 0, self.size
        for j, d in enumerate(digits):
            col = self.digits[lo:hi, j]
            lo, hi = lo + int(np.searchsorted(col, d, "left")), lo + int(np.searchsorted(col, d, "right"))
            if lo >= hi:
                return -1
        return lo


@dataclass
class Structure:
    space: DesignSpace
    parts: list[Part]
    axes: list[Axis]
    dim_axis: dict[int, tuple[int, int]]  # used dim -> (axis, column of Axis.digits)
    dim_word: np.ndarray  # word of each dim (0 = most significant)
    dim_weight: list[int]  # weight of each dim within its word
    n_words: int

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)

    @property
    def cells(self) -> int:
        return math.prod(self.sizes)

    @property
    def feasible(self) -> int:
        return math.prod(p.size for p in self.parts)

    def _row_words(self, part: Part, rows: np.ndarray) -> np.ndarray:
        out = np.zeros((rows.shape[0], self.n_words), dtype=np.int64)
        for j, d in enumerate(part.dims):
            out[:, self.dim_word[d]] += part.rows[rows, j] * np.int64(self.dim_weight[d])
        return out

    def weights(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Per axis, the (size × words) contribution of each value to its cells' first-completion
        index, and the constant contribution of the parts without an axis."""
        tables = [self._row_words(self.parts[a.part], a.first) for a in self.axes]
        const = np.zeros(self.n_words, dtype=np.int64)
        with_axis = {a.part for a in self.axes}
        for i, p in enumerate(self.parts):
            if i not in with_axis:
                const += self._row_words(p, np.zeros(1, dtype=np.int64))[0]
        return tables, const

    def first_digits(self, values: np.ndarray) -> np.ndarray:
        """Digits of the first completion of each cell (n × axes array of axis values)."""
        values = np.asarray(values, dtype=np.int64)
        out = np.zeros((values.shape[0], len(self.space.radices)), dtype=np.int64)
        with_axis = {a.part: i for i, a in enumerate(self.axes)}
        for i, p in enumerate(self.parts):
            if i in with_axis:
                ax = self.axes[with_axis[i]]
                out[:, list(p.dims)] = p.rows[ax.first[values[:, with_axis[i]]]]
            else:
                out[:, list(p.dims)] = p.rows[0]
        return out

    def completions(self, values: Sequence[int], limit: int) -> Iterator[tuple[int, np.ndarray]]:
        """The first *limit* designs of one cell in index order, as (index, digits)."""
        radices = self.space.radices
        full_weight = [math.prod(radices[d + 1:]) for d in range(len(radices))]
        with_axis = {a.part: i for i, a in enumerate(self.axes)}
        lists = []  # per part: (row ids, their index contributions) in index order
        for i, p in enumerate(self.parts):
            if i in with_axis:
                ax = self.axes[with_axis[i]]
                v = int(values[with_axis[i]])
                rows = ax.order[ax.start[v]:min(ax.start[v + 1], ax.start[v] + limit)]
            else:
                rows = np.arange(min(p.size, limit))
            contrib = [sum(int(p.rows[r, j]) * full_weight[d] for j, d in enumerate(p.dims)) for r in rows.tolist()]
            lists.append((rows, contrib))
        n = len(lists)
        start = tuple([0] * n)
        heap = [(sum(c[0] for _, c in lists), start, 0)]
        emitted = 0
        while heap and emitted < limit:
            total, pos, last = heapq.heappop(heap)
            digits = np.zeros(len(radices), dtype=np.int64)
            for (rows, _), p, k in zip(lists, self.parts, pos):
                digits[list(p.dims)] = p.rows[rows[k]]
            yield total, digits
            emitted += 1
            # each tuple has one parent (its last non-zero position decremented), so no repeats
            for j in range(last, n):
                if pos[j] + 1 < len(lists[j][0]):
                    nxt = pos[:j] + (pos[j] + 1,) + pos[j + 1:]
                    heapq.heappush(heap, (total - lists[j][1][pos[j]] + lists[j][1][pos[j] + 1], nxt, j))


def _words(radices: Sequence[int]) -> tuple[np.ndarray, list[int], int]:
    word = np.zeros(len(radices), dtype=np.int64)
    weight = [0] * len(radices)
    w, cur = 0, 1
    for d in range(len(radices) - 1, -1, -1):
        if cur * radices[d] > WORD_LIMIT:
            w, cur = w + 1, 1
        word[d], weight[d] = w, cur
        cur *= radices[d]
    return (w - word), weight, w + 1  # word 0 is the most significant


def parameter_dims(space: DesignSpace) -> dict[str, int]:
    return {p.name: i for i, d in enumerate(space.dimensions) for p in d.parameters}


def _merge(space: DesignSpace, parts: list[Part], where: Expression, text: str) -> Part | None:
    """The parts *where* touches, merged into one part whose rows satisfy it (None: too large)."""
    dim_of = parameter_dims(space)
    touched = sorted({i for i, p in enumerate(parts) for d in p.dims if d in {dim_of[n] for n in where.names
                                                                                if n in dim_of}})
    sizes = [parts[i].size for i in touched]
    total = math.prod(sizes)
    if total > enumeration_limit():
        return None
    dims = tuple(sorted(d for i in touched for d in parts[i].dims))
    pos = {d: j for j, d in enumerate(dims)}
    kept = []
    step = 1 << 20
    for s in range(0, total, step):
        n = min(step, total - s)
        sel = decode_mixed_radix(np.arange(s, s + n, dtype=np.int64), sizes)
        rows = np.empty((n, len(dims)), dtype=np.int64)
        for j, i in enumerate(touched):
            rows[:, [pos[d] for d in parts[i].dims]] = parts[i].rows[sel[:, j]]
        kept.append(rows[where.mask(space.columns(rows, dims), n)])
    rows = np.concatenate(kept)
    if rows.shape[0] == 0:
        extra = " together with the space's constraints" if space.constraints else ""
        raise GpudseError(f"--where {text!r}: no design of space {space.name!r} satisfies it{extra}; "
                          f"loosen the condition")
    rows = rows[np.lexsort(rows.T[::-1])]
    return Part(dims, rows)


def _index_order(c) -> np.ndarray:
    """A component's feasible rows in index order: an enumerated table as it is (the analysis's own
    array, not a copy: it is in index order by construction), a joined one sorted (it is built one
    dimension at a time in the order the join chose, not the space's)."""
    if c.method == "enumerated":
        return c.table
    return c.table[np.lexsort(c.table.T[::-1])]


def _axis(i: int, p: Part, cols: list[int], radices: list[int]) -> Axis:
    """Part *i* restricted to its columns *cols* (of the given radices): its distinct combinations in
    lexicographic order, the first row of each, and its rows grouped by combination in index order.

    The combinations are keyed by one integer (their mixed-radix code) and grouped by a stable sort of
    the keys, which needs a few int64 vectors of the part's length instead of the copies of the rows
    a row-wise unique makes (4.1 M rows of four columns: about 100 MB instead of 900 MB)."""
    n = p.size
    if len(cols) == len(p.dims):  # every dimension used: each (distinct) row is its own value
        rows = np.arange(n)
        return Axis(i, p.dims, p.rows, rows, rows, np.arange(n + 1))
    dims = tuple(p.dims[j] for j in cols)
    if math.prod(radices) >= 1 << 63:  # a code beyond int64: compare the rows themselves
        digits, first, inv, counts = np.unique(p.rows[:, cols], axis=0, return_index=True, return_inverse=True,
                                               return_counts=True)
        return Axis(i, dims, digits, first, np.argsort(inv.ravel(), kind="stable"),
                    np.concatenate([[0], np.cumsum(counts)]))
    key = p.rows[:, cols[0]].astype(np.int64)
    for j, r in zip(cols[1:], radices[1:]):
        key *= r
        key += p.rows[:, j]
    order = np.argsort(key, kind="stable")  # rows grouped by code, index order within a code
    key = key[order]
    start = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    codes = key[start]
    del key
    digits = np.empty((start.size, len(cols)), dtype=p.rows.dtype)
    for k in range(len(cols) - 1, -1, -1):
        codes, digits[:, k] = np.divmod(codes, radices[k])
    return Axis(i, dims, digits, order[start], order, np.append(start, n))


def build_structure(space: DesignSpace, used: set[int], where: Expression | None = None, where_text: str = "",
                    every_dimension: bool = False) -> Structure | None:
    """The parts and axes of *space* for the *used* dims (see the module docstring).

    Returns None when a constrained component (or the ``--where`` component) is too large to
    enumerate; then the caller scans every point instead. With *every_dimension* each dimension is
    its own part (constraints are left to the caller), which is how a full scan is laid out.
    """
    radices = space.radices
    if every_dimension:
        parts = [Part((d,), np.arange(r, dtype=np.int64)[:, None]) for d, r in enumerate(radices)]
    else:
        a = space.analysis
        if not a.exact:
            return None
        parts = [Part((d,), np.arange(radices[d], dtype=np.int64)[:, None]) for d in a.free_dims]
        parts += [Part(c.dims, _index_order(c)) for c in a.components]
        if where is not None:
            dim_of = parameter_dims(space)
            if not any(n in dim_of for n in where.names):
                cols = {f.name: f.value for f in space.fixed}
                if not where.mask(cols, 1)[0]:
                    raise GpudseError(f"--where {where_text!r} is false for the space's fixed values, so no "
                                      f"design satisfies it")
            else:
                merged = _merge(space, parts, where, where_text)
                if merged is None:
                    return None
                parts = [p for p in parts if not set(p.dims) & set(merged.dims)] + [merged]
        parts.sort(key=lambda p: p.dims[0])
    axes, dim_axis = [], {}
    for i, p in enumerate(parts):
        cols = [j for j, d in enumerate(p.dims) if d in used]
        if not cols:
            continue
        ax = _axis(i, p, cols, [radices[p.dims[j]] for j in cols])
        for j, d in enumerate(ax.dims):
            dim_axis[d] = (len(axes), j)
        axes.append(ax)
    word, weight, n_words = _words(radices)
    return Structure(space, parts, axes, dim_axis, word, weight, n_words)
