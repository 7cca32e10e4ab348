"""Block-by-block evaluation of a model over a grid of cells, in NumPy.

Both evaluators split their grid into *blocks*, the unit of work, of pruning, of progress and of
distribution over a Dask cluster:

* :class:`AdditiveGrid` — an additive model as factors over axes (:mod:`.terms`). The axes are split
  into *outer* and *inner* ones; a block is one outer cell with every inner cell, laid out as an
  inner-shaped array. The inner-only factors are summed once; a block costs one broadcast add per
  group of factors that cross the split (no decoding of indices, no DataFrame), in float32 where
  that keeps the error bound small. :meth:`AdditiveGrid.bounds` gives every block a lower bound on
  its predictions (and costs) from the factors' minima, for branch and bound. For a scan of every
  point the axes are the space's dimensions and the inner ones a suffix, so a block is a range of
  design indices.
* :class:`PredictStream` — any model (forests too): a block is a range of design indices, decoded
  to a DataFrame and passed to ``model.predict``.

Feasibility (constraints and ``--where``) is applied per block when the grid is the whole space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..space.design import DesignSpace, decode_mixed_radix
from ..space.expr import Expression
from .terms import Cost, Factor

PROBE_CELLS = 1 << 10  # inner cells a block bound enumerates exactly (see _Side.lower) ...
PROBE_BUDGET = 200_000_000  # ... within this many table lookups for all blocks (about 0.5 s)
EXPRESSION_PIECE = 1 << 13  # points per piece when evaluating constraint and cost expressions
F32_RELATIVE = 1e-4  # float32 is used when its error bound is below this share of the prediction range


@dataclass
class Block:
    f: np.ndarray  # predictions (transformed scale, sign applied: lower is better) of the kept cells
    c: np.ndarray | None  # their costs
    local: np.ndarray | None  # positions of the kept cells in the block (None: all of them)

    @property
    def n(self) -> int:
        return int(self.f.shape[0])


def _lexmin(w: np.ndarray) -> np.ndarray:
    return w[np.lexsort(w.T[::-1])[0]] if w.shape[0] else np.zeros(w.shape[1], dtype=np.int64)


class _Side:
    """The factors of one objective (prediction or cost) split into outer, inner and crossing."""

    def __init__(self, grid: "AdditiveGrid", factors: Sequence[Factor], intercept: float, dtype: Any):
        self.dtype = dtype
        A, B = grid.outer, grid.inner
        self.vb = np.zeros(grid.inner_shape, dtype=np.float64)
        self.a_only: list[Factor] = []
        self.cross: list[Factor] = []
        groups: dict[tuple[int, ...], list] = {}
        self.intercept = float(intercept)
        for axes, t in factors:
            sa = [x for x in axes if x in A]
            sb = [x for x in axes if x in B]
            if not sa:
                self.vb += _place(t, axes, B, grid.sizes)
            elif not sb:
                self.a_only.append((axes, t))
            else:
                self.cross.append((axes, t))
                perm = [axes.index(x) for x in sa + sb]
                tt = np.transpose(t, perm)
                rows = math.prod(grid.sizes[x] for x in sa)
                shape = [grid.sizes[x] if x in sb else 1 for x in B]
                groups.setdefault(tuple(sb), []).append((tuple(sa), tt.reshape(rows, *shape)))
        self.groups = [(sb, [(sa, r.astype(dtype)) for sa, r in fs], [(sa, r) for sa, r in fs])
                       for sb, fs in groups.items()]
        self.vb_fast = self.vb.astype(dtype)
        self.scale = abs(self.intercept) + sum(float(np.abs(t).max()) for _, t in factors if t.size)
        self.n_factors = len(factors)

    def block_const(self, grid: "AdditiveGrid", b: int, digits: Sequence[int]) -> float:
        """Intercept plus the outer-only factors of block *b* (tabulated for all blocks at first use)."""
        table = self.__dict__.get("_consts")
        if table is None and grid.n_blocks <= 1 << 22:
            table = np.empty(grid.n_blocks)
            step = 1 << 16  # (the outer digits of a million blocks at once would be tens of MB)
            for s in range(0, grid.n_blocks, step):
                e = min(grid.n_blocks, s + step)
                d = decode_mixed_radix(np.arange(s, e, dtype=np.int64), grid.outer_shape) if grid.outer \
                    else np.zeros((e - s, 0), dtype=np.int64)
                table[s:e] = self.outer_const(grid, d)
            self._consts = table
        if table is not None:
            return float(table[b])
        return float(self.outer_const(grid, np.asarray([digits], dtype=np.int64))[0])

    def outer_const(self, grid: "AdditiveGrid", digits: np.ndarray) -> np.ndarray:
        """Intercept plus the outer-only factors for rows of outer digits (float64)."""
        out = np.full(digits.shape[0], self.intercept)
        for axes, t in self.a_only:
            out += t[tuple(digits[:, grid.outer.index(x)] for x in axes)]
        return out

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_buf", "_consts")}

    def block(self, grid: "AdditiveGrid", digits: Sequence[int], const: float) -> np.ndarray:
        """The values of one block (an outer cell), in a buffer reused by the next call: block-sized
        allocations are avoided because Dask workers return freed memory to the system at once
        (MALLOC_TRIM_THRESHOLD_), which made each block several times slower."""
        z = self.__dict__.get("_buf")
        if z is None:
            z = self._buf = np.empty(self.vb_fast.shape, dtype=self.dtype)
        np.add(self.vb_fast, const, out=z, dtype=self.dtype)
        for _, fast, _ in self.groups:
            acc = None
            for sa, r in fast:
                row = r[_row(grid, sa, digits)]
                acc = row if acc is None else acc + row
            z += acc
        return z.reshape(-1)

    def lower(self, grid: "AdditiveGrid", digits: np.ndarray) -> np.ndarray:
        """A lower bound on every cell of each outer cell's block (float64): the larger of two.

        * Each group of crossing factors at its minimum over the inner axes, the inner-only part at
          its minimum.
        * Exact over the *probe* axes (a few inner axes the crossing factors read most): for every
          value of them, each factor at its minimum over the other inner axes; then the minimum over
          the probe values. This keeps most of what strong interactions cost.
        """
        base = self.outer_const(grid, digits)
        lb = base + (float(self.vb.min()) if self.vb.size else 0.0)
        for _, _, exact in self.groups:
            acc = None
            for sa, r in exact:
                idx = np.zeros(digits.shape[0], dtype=np.int64)
                for x in sa:
                    idx = idx * grid.sizes[x] + digits[:, grid.outer.index(x)]
                rows = r.reshape(r.shape[0], -1)[idx]  # a group's factors share their inner axes
                acc = rows if acc is None else acc + rows
            lb += acc.min(axis=1)
        if not grid.probe or not self.cross:
            return lb
        probe, pd1 = grid.probe, grid.probe_digits
        B = grid.inner
        other = tuple(j for j, x in enumerate(B) if x not in probe)
        vb1 = self.vb.min(axis=other) if other else self.vb  # over the probe axes, in B order
        vb1 = np.transpose(vb1, [sorted(probe, key=B.index).index(x) for x in probe]).reshape(-1)
        m = base[:, None] + vb1[None, :]
        for axes, t in self.cross:
            sa = [x for x in axes if x in grid.outer]
            s1 = [x for x in axes if x in probe]
            s2 = tuple(j for j, x in enumerate(axes) if x not in sa and x not in s1)
            t2 = t.min(axis=s2) if s2 else t
            rest = [x for x in axes if x in sa or x in s1]
            t2 = np.transpose(t2, [rest.index(x) for x in sa + s1])
            t2 = t2.reshape(math.prod(grid.sizes[x] for x in sa), -1)
            ra = np.zeros(digits.shape[0], dtype=np.int64)
            for x in sa:
                ra = ra * grid.sizes[x] + digits[:, grid.outer.index(x)]
            r1 = np.zeros(pd1.shape[0], dtype=np.int64)
            for x in s1:
                r1 = r1 * grid.sizes[x] + pd1[:, probe.index(x)]
            m += t2[ra[:, None], r1[None, :]]
        return np.maximum(lb, m.min(axis=1))


def _probe_axes(sizes: Sequence[int], outer: Sequence[int], inner: Sequence[int], factors: Sequence[Factor],
                limit: int) -> list[int]:
    """Inner axes whose values a block bound enumerates: those the crossing factors read with the
    largest spread, as many as fit in *limit* cells."""
    score = {x: 0.0 for x in inner}
    for axes, t in factors:
        if t.size and any(x in outer for x in axes):
            for x in axes:
                if x in score:
                    score[x] += float(t.max() - t.min())
    chosen, size = [], 1
    for x in sorted(inner, key=lambda x: -score[x]):
        if score[x] > 0 and size * sizes[x] <= limit:
            chosen.append(x)
            size *= sizes[x]
    return chosen


def _row(grid: "AdditiveGrid", sa: Sequence[int], digits: Sequence[int]) -> int:
    i = 0
    for x in sa:
        i = i * grid.sizes[x] + int(digits[grid.outer.index(x)])
    return i


def _place(t: np.ndarray, axes: Sequence[int], B: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """Table *t* over *axes* (all inner) broadcast to the inner shape."""
    order = sorted(axes, key=B.index)
    tt = np.transpose(t, [list(axes).index(x) for x in order])
    shape = [sizes[x] if x in axes else 1 for x in B]
    return tt.reshape(shape)


class AdditiveGrid:
    """An additive model (and optionally a separable cost) over the product of axes, by blocks.

    *factors* are on the transformed scale with the sign applied (lower is better). *weights* are
    per axis the (size × words) first-completion index contributions and *w0* the constant ones
    (:meth:`Structure.weights`). *inner* lists the inner axes. *masks* (expressions over parameter
    names) and *columns* make a scan of the whole space skip infeasible points; then each axis is a
    dimension of *space*.
    """

    def __init__(self, sizes: Sequence[int], factors: Sequence[Factor], intercept: float,
                 weights: Sequence[np.ndarray], w0: np.ndarray, inner: Sequence[int], *,
                 cost_factors: Sequence[Factor] | None = None, cost_intercept: float = 0.0,
                 dtype: Any = None, space: DesignSpace | None = None, masks: Sequence[Expression] = (),
                 cost_expression: Cost | None = None, cost_axes: Sequence[int] = (), eps_extra: float = 1e-9):
        self.sizes = tuple(int(s) for s in sizes)
        self.inner = [int(x) for x in inner]
        self.outer = [x for x in range(len(self.sizes)) if x not in self.inner]
        self.inner_shape = tuple(self.sizes[x] for x in self.inner)
        self.outer_shape = tuple(self.sizes[x] for x in self.outer)
        self.block_cells = math.prod(self.inner_shape)
        self.n_blocks = math.prod(self.outer_shape)
        self.total_cells = self.block_cells * self.n_blocks
        every = list(factors) + list(cost_factors or [])
        n_cross = sum(1 for axes, _ in every if set(axes) & set(self.outer) and set(axes) & set(self.inner))
        self.probe = _probe_axes(self.sizes, self.outer, self.inner, every,
                                 min(PROBE_CELLS, PROBE_BUDGET // max(1, self.n_blocks * n_cross)))
        self.probe_digits = decode_mixed_radix(np.arange(math.prod(self.sizes[x] for x in self.probe),
                                                         dtype=np.int64), [self.sizes[x] for x in self.probe])
        probe = _Side(self, factors, intercept, np.float64)
        spread = self._spread(factors, intercept)
        if dtype is None:
            eps32 = 4 * (probe.n_factors + 3) * 2.0 ** -24 * probe.scale
            dtype = np.float32 if spread > 0 and eps32 <= F32_RELATIVE * spread else np.float64
        self.dtype = dtype
        self.pred = probe if dtype is np.float64 else _Side(self, factors, intercept, dtype)
        u = 2.0 ** -24 if dtype is np.float32 else 2.0 ** -53
        self.eps = 4 * (self.pred.n_factors + 3) * u * self.pred.scale + eps_extra * self.pred.scale
        self.cost = None
        self.eps_c = 0.0
        if cost_factors is not None:
            self.cost = _Side(self, cost_factors, cost_intercept, np.float64)
            self.eps_c = 4 * (self.cost.n_factors + 3) * 2.0 ** -53 * self.cost.scale + eps_extra * self.cost.scale
        self.cost_expression = cost_expression
        model_axes = sorted({x for axes, _ in factors for x in axes})
        front_axes = sorted(set(model_axes) | {x for axes, _ in (cost_factors or []) for x in axes}
                            | set(cost_axes))
        self.group_axes = (model_axes, front_axes)
        self._group_inner: dict[bool, tuple[dict, np.ndarray]] = {}
        self.n_words = int(w0.shape[0])
        self.w0 = w0
        self.w_outer = [weights[x] for x in self.outer]
        inner_digits = decode_mixed_radix(np.arange(self.block_cells, dtype=np.int64), self.inner_shape) \
            if self.inner else np.zeros((1, 0), dtype=np.int64)
        wb = np.zeros((self.block_cells, self.n_words), dtype=np.int64)
        for j, x in enumerate(self.inner):
            wb += weights[x][inner_digits[:, j]]
        self.w_inner = wb
        self.w_inner_min = _lexmin(wb)
        self.space = space
        self.masks = list(masks)
        self._columns: dict[str, np.ndarray] = {}
        self._outer_params: list[tuple[str, int, Any]] = []
        if space is not None and (self.masks or cost_expression is not None):
            names = set().union(*(m.names for m in self.masks)) if self.masks else set()
            if cost_expression is not None:
                names |= set(cost_expression.params)
            for name in sorted(names):
                for d, dim in enumerate(space.dimensions):
                    for p in dim.parameters:
                        if p.name != name:
                            continue
                        if d in self.inner:
                            arr = p.array[inner_digits[:, self.inner.index(d)]]
                            self._columns[name] = arr.astype(np.float64) if arr.dtype.kind in "iub" else arr
                        else:
                            self._outer_params.append((name, self.outer.index(d), p.array))
            self._fixed = {f.name: f.value for f in space.fixed}

    @staticmethod
    def _spread(factors: Sequence[Factor], intercept: float) -> float:
        lo = hi = float(intercept)
        for _, t in factors:
            if t.size:
                lo += float(t.min())
                hi += float(t.max())
        return hi - lo

    # ---- blocks ------------------------------------------------------------------------------
    def outer_digits(self, b: int) -> list[int]:
        out = []
        for s in reversed(self.outer_shape):
            b, r = divmod(b, s)
            out.append(r)
        return out[::-1]

    def evaluate(self, b: int) -> Block:
        digits = self.outer_digits(b)
        f = self.pred.block(self, digits, self.pred.block_const(self, b, digits))
        c = None
        keep = None
        if self.masks or self.cost_expression is not None:
            ok = np.ones(self.block_cells, dtype=bool)
            if self.cost_expression is not None:
                c = np.empty(self.block_cells)
            outer = dict(self._fixed)
            for name, j, arr in self._outer_params:
                outer[name] = arr[digits[j]]
            # expressions allocate a temporary per operation: in pieces under 128 KiB these come from
            # the heap, not from mmap (which Dask workers' malloc settings make slow at every call)
            for s in range(0, self.block_cells, EXPRESSION_PIECE):
                e = min(self.block_cells, s + EXPRESSION_PIECE)
                cols = dict(outer)
                cols.update({k: v[s:e] for k, v in self._columns.items()})
                for m in self.masks:
                    ok[s:e] &= m.mask(cols, e - s)
                if self.cost_expression is not None:
                    c[s:e] = self.cost_expression.evaluate(cols, e - s)
            if not ok.all():
                keep = np.flatnonzero(ok)
        if self.cost is not None:
            c = self.cost.block(self, digits, self.cost.block_const(self, b, digits))
        if keep is not None:
            f = f[keep]
            c = None if c is None else c[keep]
        return Block(f, c, keep)

    def cells(self, b: int, local: np.ndarray) -> np.ndarray:
        return np.int64(b) * np.int64(self.block_cells) + local.astype(np.int64)

    def block_size(self, b: int) -> int:
        return self.block_cells

    def outer_weights(self, digits: np.ndarray) -> np.ndarray:
        w = np.broadcast_to(self.w0, (digits.shape[0], self.n_words)).copy()
        for j, t in enumerate(self.w_outer):
            w += t[digits[:, j]]
        return w

    def weights(self, b: int, local: np.ndarray) -> np.ndarray:
        wa = self.outer_weights(np.asarray([self.outer_digits(b)], dtype=np.int64))[0]
        return self.w_inner[local] + wa

    def bounds(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Lower bounds of the prediction (and cost) in each block, and each block's smallest
        first-completion index (words), for blocks ``start … stop - 1``."""
        stop = self.n_blocks if stop is None else stop
        n = max(0, stop - start)
        lb = np.empty(n)
        lc = np.empty(n) if self.cost is not None else None
        w = np.empty((n, self.n_words), dtype=np.int64)
        width = max((math.prod(r.shape[1:]) for side in (self.pred, self.cost) if side is not None
                     for _, _, fs in side.groups for _, r in fs), default=1)
        # filled in place, a chunk of blocks at a time (millions of blocks: each array is tens of MB)
        step = max(1, min(1 << 18, (1 << 22) // max(width, len(self.probe_digits))))
        for s in range(start, stop, step):
            e = min(stop, s + step)
            d = decode_mixed_radix(np.arange(s, e, dtype=np.int64), self.outer_shape) if self.outer \
                else np.zeros((e - s, 0), dtype=np.int64)
            lb[s - start:e - start] = self.pred.lower(self, d)
            if lc is not None:
                lc[s - start:e - start] = self.cost.lower(self, d)
            w[s - start:e - start] = self.outer_weights(d) + self.w_inner_min
        return lb, lc, w

    def groups(self, b: int, local: np.ndarray, front: bool) -> np.ndarray:
        """Tie groups of cells: their values on the axes the model (with *front*: and the cost) reads,
        as one number (mixed radix over those axes: an outer part plus a precomputed inner part)."""
        axes = self.group_axes[front]
        if front not in self._group_inner:
            stride, part = {}, np.zeros(self.block_cells, dtype=np.int64)
            m = 1
            for x in reversed(axes):
                stride[x] = m
                m *= self.sizes[x]
            digits = decode_mixed_radix(np.arange(self.block_cells, dtype=np.int64), self.inner_shape) \
                if self.inner else np.zeros((1, 0), dtype=np.int64)
            for j, x in enumerate(self.inner):
                if x in stride:
                    part += digits[:, j] * np.int64(stride[x])
            self._group_inner[front] = (stride, part)
        stride, part = self._group_inner[front]
        outer = sum(int(d) * stride[x] for x, d in zip(self.outer, self.outer_digits(b)) if x in stride)
        return part[local] + np.int64(outer)

    def cell_values(self, cells: np.ndarray) -> np.ndarray:
        """Axis values (rows, in axis order) of flat cell numbers."""
        cells = np.asarray(cells, dtype=np.int64)
        b, local = np.divmod(cells, np.int64(self.block_cells))
        out = np.zeros((cells.shape[0], len(self.sizes)), dtype=np.int64)
        if self.outer:
            out[:, self.outer] = decode_mixed_radix(b, self.outer_shape)
        if self.inner:
            out[:, self.inner] = decode_mixed_radix(local, self.inner_shape)
        return out


class PredictStream:
    """Any model over every point of a space, by ranges of design indices through ``model.predict``."""

    eps = 0.0
    eps_c = 0.0
    # model.predict of a block and of the final candidates can differ in the last bits (a matrix
    # product's rounding depends on its number of rows): the pools keep near-ties by this relative margin
    rel = 1e-12
    n_words = 1

    def __init__(self, model: Any, space: DesignSpace, sign: float, masks: Sequence[Expression] = (),
                 cost: Cost | None = None, block: int = 1 << 16):
        from .structure import parameter_dims

        self.model, self.space, self.sign = model, space, float(sign)
        dim_of = parameter_dims(space)
        from .terms import model_parameters

        model_dims = sorted({dim_of[p] for p in model_parameters(model)})
        cost_dims = sorted({dim_of[p] for p in cost.params}) if cost is not None else []
        self.group_dims = (model_dims, sorted(set(model_dims) | set(cost_dims)))
        self.masks = list(masks)
        self.cost = cost
        self.block_cells = int(min(block, space.size))
        self.total_cells = int(space.size)
        self.n_blocks = -(-self.total_cells // self.block_cells)

    def block_size(self, b: int) -> int:
        return min(self.block_cells, self.total_cells - b * self.block_cells)

    def evaluate(self, b: int) -> Block:
        start = b * self.block_cells
        n = self.block_size(b)
        digits = self.space.decode_range(start, n)
        keep = None
        if self.masks:
            cols = self.space.columns(digits)
            ok = np.ones(n, dtype=bool)
            for m in self.masks:
                ok &= m.mask(cols, n)
            if not ok.all():
                keep = np.flatnonzero(ok)
                digits = digits[keep]
        frame = self.space.frame(digits)
        pred = np.asarray(self.model.predict(frame), dtype=np.float64) * self.sign
        f = np.where(np.isnan(pred), np.inf, pred)
        c = None
        if self.cost is not None:
            c = cost_of_digits(self.cost, self.space, digits)
        return Block(f, c, keep)

    def cells(self, b: int, local: np.ndarray) -> np.ndarray:
        return np.int64(b) * np.int64(self.block_cells) + local.astype(np.int64)

    def weights(self, b: int, local: np.ndarray) -> np.ndarray:
        return self.cells(b, local)[:, None]

    def groups(self, b: int, local: np.ndarray, front: bool) -> np.ndarray:
        g = np.zeros(local.shape[0], dtype=np.int64)
        digits = self.space.decode(self.cells(b, local))
        for d in self.group_dims[front]:
            g = g * np.int64(self.space.radices[d]) + digits[:, d]
        return g

    def cell_values(self, cells: np.ndarray) -> np.ndarray:
        return self.space.decode(np.asarray(cells, dtype=np.int64))


def cost_of_digits(cost: Cost, space: DesignSpace, digits: np.ndarray) -> np.ndarray:
    """The cost of designs given by their digits, computed as brute force would."""
    from .structure import parameter_dims

    n = digits.shape[0]
    if cost.expression is not None:
        cols = space.columns(digits)
        return cost.evaluate(cols, n)
    dim_of = parameter_dims(space)
    out = np.zeros(n)
    for (p,), t in cost.summands:
        out = out + t[digits[:, dim_of[p]]]
    return out
