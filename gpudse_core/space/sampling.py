"""Uniform-at-random sampling of design points (Stargazer §5.1 Phase 1; Lee & Brooks §3.4 "UAR").

The request is one of the three forms Stargazer §5.1 names:

* ``n`` — a number of points;
* ``fraction`` — a fraction of the whole (feasible) space: ``n = round(fraction × |feasible space|)``;
  a fraction that rounds to no point at all is refused, with the number of points it gives and the
  smallest fraction that gives one (1e-300 must not silently become one point);
* ``per_dim_fraction`` — a fraction of each dimension. The paper does not define it further; we read
  it, by default (``per_dim_mode="count"``), as a way of stating the *number* of points,
  ``n = Π ceil(f × |S_i|)``, those points then drawn uniformly from the whole space like the others.
  The other reading, a random sub-grid keeping ``ceil(f × |S_i|)`` values of each dimension and every
  feasible point of their product, is ``per_dim_mode="subgrid"``. Where ``f × |S_i| < 1`` the ceiling
  keeps one value of that dimension, and the result carries a note saying so.

Points are drawn without replacement, uniformly over the *feasible* points, reproducibly from
``seed`` (NumPy's PCG64). Uniform draws exploit the structure computed by
:attr:`DesignSpace.analysis`: unconstrained dimensions are drawn independently, and each small
constrained component is drawn as a row of its table of feasible combinations, so constraints cost
no rejections; only components too large to enumerate use rejection, drawing about ``1/share`` candidates per
point wanted; a component whose feasible share is unknown (no random probe was feasible) is refused
with the reason instead of rejecting forever. Small spaces (or requests for
a large share of a space) draw distinct integer keys directly; otherwise i.i.d. draws are
de-duplicated in draw order, which yields a uniformly random subset. The product of all values is
never materialised.

``method="lhs"`` gives a Latin hypercube over the discrete levels: every dimension's values appear
``floor(n/|S_i|)`` or ``ceil(n/|S_i|)`` times. Rows that are duplicates or infeasible are re-drawn
uniformly (their number is reported as ``replaced``), so balance is exact only when none is.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field, fields
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

import numpy as np

from .. import limits
from ..limits import fmt_amount
from ..choices import PER_DIM_MODES, SAMPLING_METHODS
from ..errors import GpudseError, SamplingError, where
from ..jsonutil import json_default
from .design import DesignSpace, decode_mixed_radix

DENSE_LIMIT = 1 << 26  # draw distinct keys directly when the key space is at most this ...
DENSE_SHARE = 8  # ... and the request is at least 1/DENSE_SHARE of it
STALL_ROUNDS = 20  # rejection rounds in a row that find no new point before giving up
ROUND_ROWS = 1 << 20  # candidate rows drawn per rejection round, at most
METHODS = SAMPLING_METHODS
CSV_ROWS = 1 << 15  # rows converted to Python objects at a time when writing CSV

if TYPE_CHECKING:  # a sample set keeps plain arrays; its DataFrame is built (and pandas imported) on first use
    import pandas as pd


@dataclass(eq=False)
class SampleSet:
    """Sampled design points with the request that produced them (Stargazer Phase 1 output).

    ``columns`` maps each parameter to its values (NumPy arrays, one row per point); ``points`` is the
    same as a DataFrame, built on first use, so that drawing and saving samples as CSV or JSON (what
    ``gpudse sample`` does) never imports pandas (a 300-point sample in ≤ 0.6 s, whole process).
    """

    space_name: str
    method: str
    seed: int | None
    request: dict
    columns: dict[str, np.ndarray]
    indices: np.ndarray
    replaced: int = 0
    feasible_size: int | None = None
    space_size: int = 0
    notes: list[str] = field(default_factory=list)

    # Workspaces store the points as a table (Parquet keeps the column order; a JSON object would not),
    # under the name they always had: the stored bytes, and so the stage's digest, are those of before.
    _RENAMED_FIELDS: ClassVar[dict[str, str]] = {"points": "columns"}

    def _stored_fields(self) -> dict[str, Any]:
        return {("points" if f.name == "columns" else f.name): (self.points if f.name == "columns"
                                                               else getattr(self, f.name)) for f in fields(self)}

    def __post_init__(self) -> None:
        if hasattr(self.columns, "to_numpy"):  # a DataFrame: keep its columns as arrays
            self.columns = {str(c): self.columns[c].to_numpy() for c in self.columns.columns}
        self.columns = {str(k): np.asarray(v) for k, v in self.columns.items()}

    def __len__(self) -> int:
        return len(self.indices)

    @cached_property
    def points(self) -> pd.DataFrame:
        """One column per parameter (a DataFrame; treat it as read-only, :meth:`table` gives a copy)."""
        import pandas as pd

        return pd.DataFrame(self.columns, index=pd.RangeIndex(len(self)))

    def _index_column(self) -> np.ndarray:
        idx = np.asarray(self.indices)
        return idx.astype(str) if idx.dtype == object else idx  # beyond 2^63: the exact integer as text

    def table_columns(self, with_index: bool = False) -> dict[str, np.ndarray]:
        """:meth:`table` as name → array, without pandas."""
        return ({"design_index": self._index_column()} if with_index else {}) | dict(self.columns)

    def table(self, with_index: bool = False) -> pd.DataFrame:
        """One column per parameter; with ``with_index`` a leading ``design_index`` column."""
        if not with_index:
            return self.points.copy()
        df = self.points.copy()
        df.insert(0, "design_index", self._index_column())
        return df

    def meta(self) -> dict:
        return {
            "space": self.space_name, "method": self.method, "seed": self.seed, "request": self.request,
            "count": len(self), "replaced": self.replaced, "space_size": self.space_size,
            "feasible_size": self.feasible_size, "notes": self.notes,
        }

    def to_json(self) -> str:
        """The request (meta) and the points with their design indices, as one JSON document."""
        buf = io.StringIO()
        self.write_json(buf)
        return buf.getvalue()

    def write_json(self, fh: Any, max_bytes: int | None = None) -> None:
        """:meth:`to_json` written to *fh* a block of points at a time; with *max_bytes*, raises
        :class:`SamplingError` as soon as the document (UTF-8) would be longer."""
        head = json.dumps({"meta": self.meta(), "points": []}, indent=1, default=json_default)
        assert head.endswith('"points": []\n}')
        written = 0

        def put(text: str) -> None:
            nonlocal written
            written += len(text.encode("utf-8"))
            if max_bytes is not None and written > max_bytes:
                raise SamplingError(f"{len(self):,} points make a JSON document of more than {max_bytes:,} bytes, "
                                    f"more than gpudse reads back as JSON (json_table_bytes); save them as .csv or "
                                    f".parquet")
            fh.write(text)

        cols = self.table_columns(True)
        names = list(cols)
        n = len(self)
        put(head[:-len("]\n}")] if n else head)
        for lo in range(0, n, CSV_ROWS):
            rows = [dict(zip(names, r)) for r in zip(*(cols[c][lo:lo + CSV_ROWS].tolist() for c in names))]
            text = json.dumps(rows, indent=1, default=json_default)  # the rows at the depth of 'points'
            text = text[1:-1].strip("\n").replace("\n", "\n ")
            put(("\n  " if lo == 0 else ",\n  ") + text.lstrip())
        if n:
            put("\n ]\n}")

    def to_arrow(self, with_index: bool = True) -> Any:
        """The table as a pyarrow Table, built from the arrays (no DataFrame in between)."""
        import pyarrow as pa

        return pa.table({k: (v.tolist() if v.dtype == object else v)
                         for k, v in self.table_columns(with_index).items()})

    def to_parquet_bytes(self, with_index: bool = True) -> bytes:
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        pq.write_table(self.to_arrow(with_index), buf)
        return buf.getvalue()

    def save(self, path: str | Path, with_index: bool = False, precision: int | str | None = "exact") -> Path:
        """Write CSV, Parquet or JSON according to the suffix (JSON carries the request too). Memory
        stays bounded: rows are converted a block at a time; a JSON document longer than gpudse reads
        back (``json_table_bytes``) is refused and nothing is left behind. Whole or not at all: a file
        already there stays as it was until the new one is complete (:mod:`gpudse_core.atomicfile`)."""
        from ..atomicfile import replacing

        path = Path(path)
        suffix = path.suffix.lower()
        with replacing(path) as tmp:
            if suffix == ".parquet":
                import pyarrow.parquet as pq

                pq.write_table(self.to_arrow(with_index), tmp)
            elif suffix == ".json":
                with open(tmp, "w", encoding="utf-8") as fh:
                    self.write_json(fh, max_bytes=limits.current().json_table_bytes)
            else:
                with open(tmp, "w", encoding="utf-8", newline="") as fh:
                    write_csv(fh, self.table_columns(with_index), precision)
        return path


def write_csv(fh: Any, columns: Mapping[str, np.ndarray], precision: int | str | None = "exact") -> None:
    """Columns as CSV through the one CSV writer (:func:`gpudse_core.csvout.write_columns`): byte for
    byte what pandas writes by default (*precision* ``"exact"``); None, the data's own precision, or a
    number of significant digits for float columns (:func:`gpudse_core.report.fmt.csv_floats`)."""
    from ..csvout import write_columns

    write_columns(fh, columns, precision)


def sample_size(space: DesignSpace, n: int | None = None, fraction: float | None = None,
                per_dim_fraction: float | None = None) -> int:
    """Number of points a request asks for (see the module docstring)."""
    given = [x is not None for x in (n, fraction, per_dim_fraction)]
    if sum(given) != 1:
        raise SamplingError("say how many points to sample in exactly one way: n, fraction or per_dim_fraction")
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise SamplingError(f"the number of points must be a whole number of at least 1 (got {n!r})")
        return int(n)
    f = fraction if fraction is not None else per_dim_fraction
    what = "fraction" if fraction is not None else "per-dimension fraction"
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not (0 < f <= 1) or math.isnan(f):
        raise SamplingError(f"the {what} must be a number in (0, 1] (got {f!r})")
    if fraction is not None:
        total = space.feasible_size_rational()
        if total is None:
            raise SamplingError(f"the feasible size of space {space.name!r} is unknown (see its notes), so a fraction "
                                f"of it cannot be turned into a number of points; ask for a number of points instead")
        what_total = f"{space.feasible_size_text()} {'feasible ' if space.constraints else ''}points"
        count = round(Fraction(repr(float(f))) * total)
        if count < 1:  # so total < 0.5 / f: every float below is finite
            smallest = float(Fraction(1, 2) / total)
            raise SamplingError(
                f"a fraction of {f:g} of the space's {what_total} is {float(Fraction(repr(float(f))) * total):.3g} "
                f"points, which rounds to none; ask for a fraction above {smallest:.3g} (one point) or for a number "
                f"of points instead")
        return count
    return math.prod(max(1, math.ceil(Fraction(repr(float(f))) * m)) for m in space.radices)


def sample(space: DesignSpace, n: int | None = None, *, fraction: float | None = None,
           per_dim_fraction: float | None = None, per_dim_mode: str = "count", seed: int | None = None,
           method: str = "uniform") -> SampleSet:
    """Sample design points without replacement, uniformly over the feasible space (or by LHS)."""
    if method not in METHODS:
        raise SamplingError(f"unknown sampling method {method!r}; choose one of {', '.join(METHODS)}")
    if per_dim_mode not in PER_DIM_MODES:
        raise SamplingError(f"unknown per-dimension mode {per_dim_mode!r}; choose {' or '.join(PER_DIM_MODES)}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise SamplingError(f"the seed must be a non-negative whole number (got {seed!r})")
    rng = np.random.default_rng(seed)
    request: dict[str, Any] = {k: v for k, v in (("n", n), ("fraction", fraction),
                                                 ("per_dim_fraction", per_dim_fraction)) if v is not None}
    feasible = space.feasible_size
    notes: list[str] = []
    if per_dim_fraction is not None and per_dim_mode == "subgrid":
        request["per_dim_mode"] = "subgrid"
        notes += _per_dim_note(space, per_dim_fraction)
        digits = _subgrid(space, per_dim_fraction, rng)
        replaced = 0
    else:
        count = sample_size(space, n, fraction, per_dim_fraction)
        request["count"] = count
        limits.check("sample_points", count, f"{count:,} points requested", "sample in parts")
        limits.check("table_cells", count * len(space.parameters),
                     f"{count:,} points × {len(space.parameters)} parameters", "sample in parts")
        if per_dim_fraction is not None:
            notes += _per_dim_note(space, per_dim_fraction)
        if feasible is not None and count > feasible:
            what = "feasible points" if space.constraints else "points"
            raise SamplingError(
                f"{count:,} points requested but the space has only {feasible:,} {what}; ask for at most {feasible:,}"
            )
        if feasible is None:
            notes.append(f"feasible size {space.feasible_size_text()}")
        if method == "uniform":
            digits, replaced = _uniform(space, count, rng), 0
        else:
            digits, replaced = _lhs(space, count, rng)
    notes = list(space.notes) + notes
    return SampleSet(
        space_name=space.name, method=method, seed=seed, request=request, columns=space.column_arrays(digits),
        indices=space.encode(digits), replaced=replaced, feasible_size=feasible, space_size=space.size,
        notes=notes,
    )


# ---- uniform sampling over independent blocks ---------------------------------------------------
@dataclass(frozen=True)
class _Block:
    dims: tuple[int, ...]
    size: int  # number of choices of this block (feasible rows, or raw size when rejecting)
    table: np.ndarray | None  # feasible digit rows for dims, or None
    reject: tuple[int, ...]  # constraints to check on draws (rejection blocks only)
    radices: tuple[int, ...]


def _per_dim_note(space: DesignSpace, f: float) -> list[str]:
    small = [d.name for d in space.dimensions if Fraction(repr(float(f))) * d.size < 1]
    if not small:
        return []
    shown = ", ".join(small[:8]) + (f" and {len(small) - 8} more" if len(small) > 8 else "")
    return [f"a per-dimension fraction of {f:g} is less than one value of {shown}; one value of each is kept "
            f"(ceil(F × |S_i|) ≥ 1)"]


def _blocks(space: DesignSpace) -> list[_Block]:
    a = space.analysis
    out = [_Block((i,), space.radices[i], None, (), (space.radices[i],)) for i in a.free_dims]
    for c in a.components:
        radices = tuple(space.radices[i] for i in c.dims)
        if c.exact:
            out.append(_Block(c.dims, c.feasible_size, c.table, (), radices))
        elif c.feasible_fraction is None:
            names = ", ".join(space.dimensions[i].name for i in c.dims)
            raise SamplingError(
                f"{where(space.source)}cannot sample uniformly: no combination of {names} among {c.probes:,} random "
                f"probes satisfies the constraints, so their feasible share is below {c.fraction_upper:.2g} and "
                f"drawing by rejection would not finish; split the constraint into conditions on fewer parameters, "
                f"narrow the value lists, or raise the limit feasibility_points so the combinations are enumerated")
        else:
            out.append(_Block(c.dims, c.raw_size, None, c.conjuncts, radices))
    return out


def _share(space: DesignSpace, blocks: list[_Block]) -> float:
    """Estimated share of the rejection blocks' draws that are feasible (1 without rejection)."""
    share = 1.0
    for c in space.analysis.components:
        if not c.exact and c.feasible_fraction:
            share *= c.feasible_fraction
    return share


def _fill(space: DesignSpace, block: _Block, rows: np.ndarray, digits: np.ndarray) -> None:
    """Write the digits chosen by *rows* (block row numbers) of *block* into *digits*."""
    if block.table is not None:
        digits[:, block.dims] = block.table[rows]
    elif len(block.dims) == 1:
        digits[:, block.dims[0]] = rows
    else:
        digits[:, block.dims] = decode_mixed_radix(rows, block.radices)


def _draw(space: DesignSpace, blocks: list[_Block], m: int, rng: np.random.Generator) -> np.ndarray:
    """*m* i.i.d. uniform feasible draws (rejection applied; may return fewer than *m*)."""
    digits = np.empty((m, len(space.radices)), dtype=np.int64)
    for b in blocks:
        if b.table is None and len(b.dims) > 1:
            sub = np.column_stack([rng.integers(0, r, m) for r in b.radices])
            digits[:, b.dims] = sub
        else:
            _fill(space, b, rng.integers(0, b.size, m), digits)
    rejecting = [k for b in blocks for k in b.reject]
    if rejecting:
        digits = digits[space.feasible_mask(digits, rejecting)]
    return digits


def _row_keys(digits: np.ndarray) -> np.ndarray:
    d = np.ascontiguousarray(digits, dtype=np.int64)
    return d.view(np.dtype((np.void, d.dtype.itemsize * d.shape[1]))).ravel()


def _uniform(space: DesignSpace, count: int, rng: np.random.Generator,
             keep: np.ndarray | None = None) -> np.ndarray:
    """*count* distinct feasible points, uniformly at random, none equal to a row of *keep*."""
    blocks = _blocks(space)
    exact = all(not b.reject for b in blocks)
    total = math.prod(b.size for b in blocks) if exact else None
    n_keep = 0 if keep is None else keep.shape[0]
    if exact and total <= DENSE_LIMIT and (count + n_keep) * DENSE_SHARE >= total:
        return _dense(space, blocks, total, count, rng, keep)
    want = n_keep + count
    # Distinct rows are kept in draw order. Rows are told apart by their design index (one int64 per
    # row) where the space allows, so a request at the limits costs its digits once (at
    # most 1 GB), and by their bytes beyond 2^63 points.
    keyed = space.fits_int64
    out = np.empty((want, len(space.radices)), dtype=np.int64)
    have = 0
    if keep is not None and n_keep:
        out[:n_keep] = keep
        have = n_keep
    have_keys = space.encode(out[:have]) if keyed else None
    stalls = drawn = 0
    share = _share(space, blocks)
    if not exact:
        _check_rejection_work(space, blocks, count, share)
    while have < want:
        need = want - have
        m = int(min(ROUND_ROWS, (64 << 20) // (8 * len(space.radices)) + 1, max(need * 1.25 + 64, need * 1.25 / share)))
        drawn += m
        new = _draw(space, blocks, m, rng)
        if keyed:
            merged_keys = np.concatenate([have_keys, space.encode(new)])
            _, first = np.unique(merged_keys, return_index=True)
        else:
            _, first = np.unique(_row_keys(np.concatenate([out[:have], new])), return_index=True)
        first.sort()
        first = first[:want]
        take = first[first >= have] - have  # the rows kept so far are distinct and come first: all stay
        out[have:have + take.size] = new[take]
        if keyed:
            have_keys = merged_keys[first]
        stalls = stalls + 1 if take.size == 0 else 0
        have += take.size
        # With exact feasible counts the request is known to fit, so the loop ends (coupon collector);
        # with a rejection component the feasible size is only estimated and may be too small.
        if not exact and stalls >= STALL_ROUNDS:
            raise SamplingError(
                f"found only {have - n_keep:,} distinct feasible points of the {count:,} requested in "
                f"{drawn:,} random draws; the constraints seem to leave fewer feasible points than that (feasible "
                f"size {space.feasible_size_text()}) — ask for fewer"
            )
    return out[n_keep:]


def _check_rejection_work(space: DesignSpace, blocks: list[_Block], count: int, share: float) -> None:
    """Refuse, before drawing, a request whose rejection would evaluate more than ``sampling_work``
    syntax nodes: about *count* / *share* draws, each checking the rejection blocks' constraints (a
    chain ``p0 < p1 < … < p6`` over seven 1,000-value parameters keeps one draw in 5,040)."""
    nodes = space._cost([k for b in blocks for k in b.reject])
    draws = math.ceil(count * 1.25 / share) if share > 0 else math.inf
    names = ", ".join(space.dimensions[i].name for b in blocks if b.reject for i in b.dims)
    limits.check("sampling_work", draws * nodes,
                 f"{where(space.source)}drawing {count:,} points by rejection (the constraints on {names} keep about "
                 f"{share:.2g} of random draws: about {fmt_amount(draws)} draws × {nodes:,} syntax nodes)",
                 "ask for fewer points, or split the constraint into conditions on fewer parameters so that "
                 "their combinations are enumerated")


def _dense(space: DesignSpace, blocks: list[_Block], total: int, count: int, rng: np.random.Generator,
           keep: np.ndarray | None) -> np.ndarray:
    """Distinct keys of the block mixed radix drawn directly (small spaces, large shares)."""
    if keep is None or keep.shape[0] == 0:
        keys = rng.choice(total, size=count, replace=False)
    else:
        taken = _block_keys(space, blocks, keep)
        pool = np.setdiff1d(np.arange(total, dtype=np.int64), taken, assume_unique=False)
        if count > pool.shape[0]:
            raise SamplingError(f"only {pool.shape[0]:,} feasible points remain; cannot draw {count:,} more")
        keys = rng.choice(pool, size=count, replace=False)
    digits = np.empty((count, len(space.radices)), dtype=np.int64)
    sizes = [b.size for b in blocks]
    rows = decode_mixed_radix(np.asarray(keys, dtype=np.int64), tuple(sizes))
    for j, b in enumerate(blocks):
        _fill(space, b, rows[:, j], digits)
    return digits


def _block_keys(space: DesignSpace, blocks: list[_Block], digits: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_dense`'s decoding for rows of feasible digits."""
    key = np.zeros(digits.shape[0], dtype=np.int64)
    for b in blocks:
        if b.table is not None:
            lookup = {k: i for i, k in enumerate(_row_keys(b.table.astype(np.int64)).tolist())}
            sub = _row_keys(digits[:, b.dims])
            rows = np.array([lookup[k] for k in sub.tolist()], dtype=np.int64)
        else:
            rows = digits[:, b.dims[0]]
        key = key * b.size + rows
    return key


def _lhs(space: DesignSpace, count: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    digits = np.empty((count, len(space.radices)), dtype=np.int64)
    for j, m in enumerate(space.radices):
        digits[:, j] = rng.permutation((np.arange(count, dtype=np.int64) * m) // count)
    ok = space.feasible_mask(digits) if space.constraints else np.ones(count, dtype=bool)
    _, first = np.unique(_row_keys(digits), return_index=True)
    unique = np.zeros(count, dtype=bool)
    unique[first] = True
    good = ok & unique
    kept = digits[good]
    missing = count - kept.shape[0]
    if missing:
        extra = _uniform(space, missing, rng, keep=kept)
        out = digits.copy()
        out[~good] = extra
        return out, missing
    return digits, 0


def _subgrid(space: DesignSpace, f: float, rng: np.random.Generator) -> np.ndarray:
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not (0 < f <= 1):
        raise SamplingError(f"the per-dimension fraction must be a number in (0, 1] (got {f!r})")
    chosen = [np.sort(rng.choice(m, size=max(1, math.ceil(Fraction(str(f)) * m)), replace=False))
              for m in space.radices]
    sizes = tuple(len(c) for c in chosen)
    grid = math.prod(sizes)
    limits.check("sample_points", grid, f"the sub-grid would have {grid:,} points",
                 "use a smaller fraction or per_dim_mode='count'")
    limits.check("table_cells", grid * len(space.parameters),
                 f"the sub-grid's {grid:,} points × {len(space.parameters)} parameters",
                 "use a smaller fraction or per_dim_mode='count'")
    pos = decode_mixed_radix(np.arange(grid, dtype=np.int64), sizes)
    digits = np.column_stack([chosen[j][pos[:, j]] for j in range(len(sizes))]).astype(np.int64)
    if space.constraints:
        digits = digits[space.feasible_mask(digits)]
        if digits.shape[0] == 0:
            raise SamplingError("no point of the random sub-grid satisfies the constraints; use a larger fraction")
    return digits


def sample_set_from_dict(doc: Any, space: DesignSpace, source: str = "samples.json") -> SampleSet:
    """A :class:`SampleSet` from the document :meth:`SampleSet.to_json` writes, checked against *space*:
    every point a point of the space (groups consistent), ``design_index`` (if given) its index,
    no unknown columns, the request's fields of the right types. Raises :class:`SamplingError`."""
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        got = "a list" if isinstance(doc, list) else f"a {type(doc).__name__}"
        raise SamplingError(f"{source}: expected an object with 'meta' and a 'points' list (got {got}); "
                            f"save the samples again with gpudse")
    meta = doc.get("meta", {})
    if not isinstance(meta, dict):
        raise SamplingError(f"{source}: 'meta' must be an object")
    rows = doc["points"]
    limits.check("sample_points", len(rows), f"{source}: {len(rows):,} points")
    params = set(space.parameter_names)
    digits = np.empty((len(rows), len(space.radices)), dtype=np.int64)
    given_index: list[Any] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SamplingError(f"{source}: point {i + 1} is not an object of parameter: value pairs")
        extra = [k for k in row if k not in params and k != "design_index"]
        if extra:
            raise SamplingError(f"{source}: point {i + 1} has column(s) {', '.join(map(repr, extra[:5]))} that are not "
                                f"parameters of space {space.name!r}; are these samples of another space?")
        try:
            digits[i] = space.digits_of_point(row)
        except GpudseError as e:
            raise SamplingError(f"{source}: point {i + 1}: {e}") from None
        if "design_index" in row:
            given_index.append((i, row["design_index"]))
    indices = space.encode(digits)
    if len(rows) > 1:
        _, first, counts = np.unique(_row_keys(digits), return_index=True, return_counts=True)
        if (counts > 1).any():
            j = int(np.sort(first[counts > 1])[0])
            again = [i for i in range(j + 1, len(rows)) if np.array_equal(digits[i], digits[j])][0]
            raise SamplingError(f"{source}: point {again + 1} repeats point {j + 1}; samples are drawn without "
                                f"replacement, so each design point appears once")
    for i, v in given_index:
        try:
            ok = int(str(v)) == int(indices[i])
        except ValueError:
            ok = False
        if not ok:
            raise SamplingError(f"{source}: point {i + 1}: design_index {str(v)[:30]} is not the index of its point "
                                f"({indices[i]}); are these samples of another space?")
    method = meta.get("method", "uniform")
    if method not in METHODS:
        raise SamplingError(f"{source}: meta.method {str(method)[:30]!r} is not one of {', '.join(METHODS)}")
    seed = meta.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise SamplingError(f"{source}: meta.seed must be a non-negative whole number or null")
    request = meta.get("request", {})
    replaced = meta.get("replaced", 0)
    notes = meta.get("notes", [])
    if not isinstance(request, dict) or isinstance(replaced, bool) or not isinstance(replaced, int) or \
            not isinstance(notes, list):
        raise SamplingError(f"{source}: meta.request must be an object, meta.replaced a number and meta.notes a list")
    return SampleSet(space_name=str(meta.get("space", space.name)), method=method, seed=seed, request=request,
                     columns=space.column_arrays(digits), indices=indices, replaced=replaced,
                     feasible_size=space.feasible_size, space_size=space.size, notes=[str(n) for n in notes])
