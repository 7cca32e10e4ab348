"""Design spaces: parameters, groups, fixed baseline, constraints, exact size and indexing.

Implements the design-space side of Stargazer §5.1 (parameters P_i with value sets S_i, the space
being their cartesian product, Table 2) and Lee & Brooks §3.4 (groups of parameters varied together,
Table 2, ``i::j::k`` ranges).

* A :class:`Parameter` has a name, unit, label, description and an ordered set of values (numbers or
  categories). A :class:`Group` is one *dimension* whose index drives several parameters at once.
  :class:`Fixed` values are the baseline that is not explored (Stargazer Table 3).
* The size of the space is the exact product of the dimension sizes, a Python ``int`` (no overflow
  at 2**63 or beyond). Index ↔ design point is a mixed-radix bijection with the *first* dimension
  most significant, so index order equals ``itertools.product`` order. The cartesian product is never
  materialised: :meth:`DesignSpace.iter_chunks` streams it.
* Feasibility constraints are expressions over parameter (and fixed) names, compiled by
  :mod:`gpudse_core.expr` (never ``eval``). :meth:`DesignSpace.analysis` splits the constrained
  dimensions into independent components; a component of up to ``ENUMERATION_LIMIT`` raw points is
  enumerated exactly (giving the exact feasible size and allowing rejection-free uniform sampling),
  a larger one is probed at random. A constraint set with no feasible point is an error at load time.
"""

from __future__ import annotations

import difflib
import json
import keyword
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from ..errors import SpaceError, where
from .expr import FUNCTIONS, NUM, TEXT, Expression, compile_expression
from .values import Value, format_values, parse_values, to_number

ENUMERATION_LIMIT = 1 << 22  # raw points of one constrained component enumerated exactly
PROBE_POINTS = 1 << 16  # random points probed when a component is too large to enumerate
INT64_LIMIT = (1 << 63) - 1
SCHEMA = "gpudse.space/1"

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = set(keyword.kwlist) | set(FUNCTIONS) | {"True", "False", "None"}
_PARAM_FIELDS = {"name", "values", "unit", "label", "description", "kind", "option", "scale"}
SCALES = ("linear", "log2")  # a numeric parameter's modelling scale (gpudse_core.model.encoding)
_GROUP_FIELDS = {"name", "members", "label", "description"}
_FIXED_FIELDS = {"name", "value", "unit", "label", "description", "option"}
_TOP_FIELDS = {"schema", "name", "description", "source", "parameters", "fixed", "constraints"}


def _check_name(name: Any, ctx: str, what: str = "name") -> str:
    if not isinstance(name, str) or not name:
        raise SpaceError(f"{ctx}{what} is missing; give each entry a name such as 'simd'")
    if not _NAME_RE.match(name):
        raise SpaceError(
            f"{ctx}{what} {name!r} is not usable in constraints: use letters, digits and '_' "
            f"(e.g. 'blk'), and put the display form ({name!r}) in 'label'"
        )
    if name in _RESERVED:
        raise SpaceError(f"{ctx}{what} {name!r} is a reserved word; choose another name (e.g. '{name}_')")
    return name


@dataclass(frozen=True)
class Parameter:
    """One explored parameter: a name and an ordered set of distinct values.

    ``kind`` is ``"numeric"`` or ``"categorical"``; ``option`` is the simulator option it sets
    (e.g. ``-gpgpu_n_clusters``), if any; ``scale`` (``"linear"`` or ``"log2"``, empty: inferred
    from the values) is the scale models work on (issue 13).
    """

    name: str
    values: tuple[Value, ...]
    unit: str = ""
    label: str = ""
    description: str = ""
    kind: str = "numeric"
    option: str = ""
    scale: str = ""

    def __post_init__(self) -> None:
        ctx = f"parameter {self.name!r}: "
        _check_name(self.name, "parameter: ")
        if self.kind not in ("numeric", "categorical"):
            raise SpaceError(f"{ctx}kind {self.kind!r} is not 'numeric' or 'categorical'")
        if self.scale not in ("",) + SCALES:
            raise SpaceError(f"{ctx}scale {self.scale!r} is not one of {', '.join(SCALES)}")
        if self.scale and self.kind == "categorical":
            raise SpaceError(f"{ctx}a scale applies to numbers only; remove it or set kind: numeric")
        vals = tuple(self.values)
        if not vals:
            raise SpaceError(f"{ctx}the value list is empty; give at least one value, e.g. values: [1, 2, 4]")
        if self.kind == "numeric":
            conv = []
            for v in vals:
                n = to_number(v)
                if n is None:
                    raise SpaceError(
                        f"{ctx}value {v!r} is not a number; correct it, or set kind: categorical "
                        f"if the values are labels"
                    )
                if isinstance(n, float) and math.isinf(n):
                    raise SpaceError(f"{ctx}value {v!r} is infinite; use finite numbers")
                conv.append(n)
            vals = tuple(conv)
        else:
            vals = tuple(str(v).lower() if isinstance(v, bool) else str(v) for v in vals)
        seen: set = set()
        for v in vals:
            key = float(v) if self.kind == "numeric" else v
            if key in seen:
                raise SpaceError(f"{ctx}value {v!r} appears more than once; each value must be listed once")
            seen.add(key)
        if self.scale == "log2" and any(float(v) <= 0 for v in vals):
            raise SpaceError(f"{ctx}scale log2 needs positive values; use scale: linear or remove the "
                             f"non-positive values")
        object.__setattr__(self, "values", vals)

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def display(self) -> str:
        return self.label or self.name

    @property
    def parameters(self) -> tuple["Parameter", ...]:
        return (self,)

    @cached_property
    def array(self) -> np.ndarray:
        """Values as a NumPy array (float64 or int64 for numbers, object for categories)."""
        if self.kind == "categorical":
            return np.array(self.values, dtype=object)
        if all(isinstance(v, int) for v in self.values):
            return np.array(self.values, dtype=np.int64)
        return np.array(self.values, dtype=np.float64)

    @cached_property
    def _lookup(self) -> dict:
        return {(float(v) if self.kind == "numeric" else v): i for i, v in enumerate(self.values)}

    def position(self, value: Any) -> int | None:
        """Position of *value* in the value list, or None (numbers compare by value: 8 == 8.0)."""
        if self.kind == "numeric":
            n = to_number(value) if not isinstance(value, (np.integer, np.floating)) else float(value)
            return None if n is None else self._lookup.get(float(n))
        return self._lookup.get(str(value))

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name}
        for key in ("label", "unit", "description"):
            if getattr(self, key):
                d[key] = getattr(self, key)
        if self.kind == "categorical":
            d["kind"] = "categorical"
        if self.option:
            d["option"] = self.option
        if self.scale:
            d["scale"] = self.scale
        d["values"] = format_values(self.values) if self.kind == "numeric" else list(self.values)
        return d


@dataclass(frozen=True)
class Group:
    """Several parameters varied together (Lee & Brooks Table 2): value *i* of every member goes
    with group index *i*."""

    name: str
    members: tuple[Parameter, ...]
    label: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name, "group: ")
        if not self.members:
            raise SpaceError(f"group {self.name!r}: it has no members; list them under 'members'")
        n = self.members[0].size
        for m in self.members[1:]:
            if m.size != n:
                raise SpaceError(
                    f"group {self.name!r}: member {m.name!r} has {m.size} values but "
                    f"{self.members[0].name!r} has {n}; members of a group vary together, so give "
                    f"each the same number of values"
                )

    @property
    def size(self) -> int:
        return self.members[0].size

    @property
    def display(self) -> str:
        return self.label or self.name

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return self.members

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name}
        for key in ("label", "description"):
            if getattr(self, key):
                d[key] = getattr(self, key)
        d["members"] = [m.to_dict() for m in self.members]
        return d


Dimension = Parameter | Group


@dataclass(frozen=True)
class Fixed:
    """A parameter held at one value (the baseline, Stargazer Table 3)."""

    name: str
    value: Value
    unit: str = ""
    label: str = ""
    description: str = ""
    option: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name, "fixed: ")
        if self.value is None or isinstance(self.value, (list, dict)):
            raise SpaceError(f"fixed {self.name!r}: 'value' must be one number or word")

    @property
    def display(self) -> str:
        return self.label or self.name

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "value": self.value}
        for key in ("label", "unit", "description", "option"):
            if getattr(self, key):
                d[key] = getattr(self, key)
        return d


@dataclass(frozen=True)
class Constraint:
    """A feasibility condition over parameter names, e.g. ``smem_kb * 1024 >= threads * 12``."""

    expr: str
    description: str = ""

    def to_dict(self) -> Any:
        return {"expr": self.expr, "description": self.description} if self.description else self.expr


@dataclass(frozen=True)
class Component:
    """Constrained dimensions that share constraints, with their feasible digit tuples.

    ``table`` holds every feasible combination (rows of digits for ``dims``) when the component was
    small enough to enumerate; otherwise it is None and ``feasible_fraction`` is a random-probe
    estimate.
    """

    dims: tuple[int, ...]
    constraints: tuple[int, ...]
    raw_size: int
    table: np.ndarray | None
    feasible_fraction: float

    @property
    def exact(self) -> bool:
        return self.table is not None

    @property
    def feasible_size(self) -> int | None:
        return None if self.table is None else int(self.table.shape[0])


@dataclass(frozen=True)
class FeasibilityAnalysis:
    """How the constraints split the space: independent free dimensions and constrained components."""

    free_dims: tuple[int, ...]
    components: tuple[Component, ...]

    @property
    def exact(self) -> bool:
        return all(c.exact for c in self.components)


@dataclass(frozen=True)
class DesignSpace:
    """A design space: ordered dimensions (parameters or groups), fixed baseline and constraints."""

    dimensions: tuple[Dimension, ...]
    name: str = "space"
    description: str = ""
    fixed: tuple[Fixed, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", tuple(self.dimensions))
        object.__setattr__(self, "fixed", tuple(self.fixed))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        if not self.dimensions:
            raise SpaceError(f"{where(self.source)}the space has no parameters; add at least one under 'parameters'")
        seen: dict[str, str] = {}
        names = [(d.name, "group") for d in self.dimensions if isinstance(d, Group)]
        names += [(p.name, "parameter") for p in self.parameters] + [(f.name, "fixed value") for f in self.fixed]
        for n, what in names:
            if n in seen:
                raise SpaceError(
                    f"{where(self.source)}the name {n!r} is used twice ({seen[n]} and {what}); names must be unique"
                )
            seen[n] = what

    # ---- structure -------------------------------------------------------------------------
    @cached_property
    def parameters(self) -> tuple[Parameter, ...]:
        """Every explored parameter (group members included), in dimension order."""
        return tuple(p for d in self.dimensions for p in d.parameters)

    @cached_property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @cached_property
    def radices(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dimensions)

    @cached_property
    def size(self) -> int:
        """Exact number of points of the unconstrained space (a Python int, any magnitude)."""
        return math.prod(self.radices)

    @cached_property
    def _dim_of(self) -> dict[str, int]:
        return {p.name: i for i, d in enumerate(self.dimensions) for p in d.parameters}

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        hint = difflib.get_close_matches(name, list(self.parameter_names), n=1)
        raise SpaceError(
            f"no parameter named {name!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + f"; parameters: {', '.join(self.parameter_names)}"
        )

    @cached_property
    def _expressions(self) -> tuple[Expression, ...]:
        types = {p.name: (TEXT if p.kind == "categorical" else NUM) for p in self.parameters}
        types.update({f.name: (NUM if to_number(f.value) is not None else TEXT) for f in self.fixed})
        out = []
        for i, c in enumerate(self.constraints):
            label = f"{where(self.source)}constraints[{i}]"
            out.append(compile_expression(c.expr, types, label))
        return tuple(out)

    # ---- index arithmetic ------------------------------------------------------------------
    @property
    def fits_int64(self) -> bool:
        return self.size <= INT64_LIMIT

    def decode(self, indices: Any) -> np.ndarray:
        """Digits (n × n_dims, int64) of the points with the given integer indices.

        Indices may be an int64 array or, for spaces beyond 2**63, a sequence of Python ints.
        """
        if self.fits_int64:
            idx = np.asarray(indices, dtype=np.int64).ravel().copy()
            if idx.size and (idx.min() < 0 or idx.max() >= self.size):
                raise SpaceError(f"index out of range: indices must lie in [0, {self.size:,})")
            return decode_mixed_radix(idx, self.radices)
        idx = np.array([int(i) for i in np.ravel(np.asarray(indices, dtype=object))], dtype=object)
        if idx.size and (min(idx) < 0 or max(idx) >= self.size):
            raise SpaceError(f"index out of range: indices must lie in [0, {self.size:,})")
        out = np.empty((idx.shape[0], len(self.radices)), dtype=np.int64)
        for j in range(len(self.radices) - 1, -1, -1):
            m = self.radices[j]
            out[:, j] = (idx % m).astype(np.int64)
            idx = idx // m
        return out

    def encode(self, digits: np.ndarray) -> np.ndarray:
        """Integer indices of digit rows: int64 array, or object array of Python ints beyond 2**63."""
        d = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.radices))
        if d.size and ((d < 0).any() or (d >= np.array(self.radices)).any()):
            raise SpaceError("digit out of range for its dimension")
        if self.fits_int64:
            idx = np.zeros(d.shape[0], dtype=np.int64)
            for j, m in enumerate(self.radices):
                idx = idx * m + d[:, j]
            return idx
        idx = np.zeros(d.shape[0], dtype=object)
        for j, m in enumerate(self.radices):
            idx = idx * m + d[:, j].astype(object)
        return idx

    def decode_range(self, start: int, count: int) -> np.ndarray:
        """Digits of the *count* consecutive points starting at index *start*."""
        start, count = int(start), int(count)
        if start < 0 or count < 0 or start + count > self.size:
            raise SpaceError(f"range [{start}, {start + count}) is outside [0, {self.size:,})")
        if self.fits_int64:
            return self.decode(np.arange(start, start + count, dtype=np.int64))
        return self.decode(np.arange(count).astype(object) + start)

    def point(self, index: int) -> dict[str, Value]:
        """The design point with integer index *index* as ``{parameter name: value}``."""
        index = int(index)
        if not 0 <= index < self.size:
            raise SpaceError(f"index {index} is outside [0, {self.size:,})")
        digits = []
        for m in reversed(self.radices):
            index, r = divmod(index, m)
            digits.append(r)
        return self._row(digits[::-1])

    def _row(self, digits: Sequence[int]) -> dict[str, Value]:
        return {p.name: p.values[int(k)] for d, k in zip(self.dimensions, digits) for p in d.parameters}

    def index(self, point: Mapping[str, Any]) -> int:
        """Integer index of a design point given as ``{name: value}`` (every parameter named)."""
        digits = self.digits_of_point(point)
        idx = 0
        for m, k in zip(self.radices, digits):
            idx = idx * m + k
        return idx

    def digits_of_point(self, point: Mapping[str, Any]) -> list[int]:
        digits = []
        for d in self.dimensions:
            pos = None
            for p in d.parameters:
                if p.name not in point:
                    raise SpaceError(f"the point has no value for parameter {p.name!r}")
                k = p.position(point[p.name])
                if k is None:
                    raise SpaceError(
                        f"value {point[p.name]!r} of {p.name!r} is not one of its values "
                        f"({', '.join(map(str, p.values))})"
                    )
                if pos is not None and k != pos:
                    raise SpaceError(
                        f"group {d.name!r}: the point mixes positions of the group's members; "
                        f"members vary together"
                    )
                pos = k
            digits.append(int(pos))
        return digits

    # ---- tables of points ---------------------------------------------------------------------
    def frame(self, digits: np.ndarray) -> pd.DataFrame:
        """DataFrame with one column per parameter for the given digit rows."""
        d = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.radices))
        cols = {}
        for j, dim in enumerate(self.dimensions):
            for p in dim.parameters:
                cols[p.name] = p.array[d[:, j]]
        return pd.DataFrame(cols)

    def columns(self, digits: np.ndarray) -> dict[str, Any]:
        """Name → value array for constraint evaluation (fixed values as scalars)."""
        cols: dict[str, Any] = {f.name: f.value for f in self.fixed}
        for j, dim in enumerate(self.dimensions):
            for p in dim.parameters:
                cols[p.name] = p.array[digits[:, j]]
        return cols

    def feasible_mask(self, digits: np.ndarray, constraints: Sequence[int] | None = None) -> np.ndarray:
        """Which digit rows satisfy the constraints (all of them, or those numbered in *constraints*)."""
        d = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.radices))
        mask = np.ones(d.shape[0], dtype=bool)
        exprs = self._expressions
        chosen = range(len(exprs)) if constraints is None else constraints
        if not len(chosen):
            return mask
        cols = self.columns(d)
        for i in chosen:
            mask &= exprs[i].mask(cols, d.shape[0])
        return mask

    def is_feasible(self, point: Mapping[str, Any]) -> bool:
        return bool(self.feasible_mask(np.array([self.digits_of_point(point)]))[0])

    def iter_chunks(
        self, chunk_size: int = 1 << 16, start: int = 0, stop: int | None = None, feasible_only: bool = True
    ) -> Iterator[tuple[np.ndarray, pd.DataFrame]]:
        """Stream the space in index order: yields ``(indices, frame)`` per chunk of indices.

        With ``feasible_only`` the infeasible points of each chunk are dropped (chunks may then be
        shorter than *chunk_size*). Never materialises the whole product.
        """
        if chunk_size < 1:
            raise SpaceError("chunk_size must be at least 1")
        stop = self.size if stop is None else min(int(stop), self.size)
        pos = int(start)
        while pos < stop:
            n = min(chunk_size, stop - pos)
            digits = self.decode_range(pos, n)
            idx = self.encode(digits)
            if feasible_only and self.constraints:
                keep = self.feasible_mask(digits)
                digits, idx = digits[keep], idx[keep]
            yield idx, self.frame(digits)
            pos += n

    # ---- feasibility -----------------------------------------------------------------------
    @cached_property
    def analysis(self) -> FeasibilityAnalysis:
        """Split constrained dimensions into components and enumerate the small ones exactly.

        Raises :class:`SpaceError` when a set of constraints admits no design point.
        """
        exprs = self._expressions
        parent = list(range(len(self.dimensions)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        constant: list[int] = []
        for ci, e in enumerate(exprs):
            dims = sorted({self._dim_of[n] for n in e.names if n in self._dim_of})
            if not dims:
                constant.append(ci)
            for a, b in zip(dims, dims[1:]):
                parent[find(b)] = find(a)
        for ci in constant:
            cols = {f.name: f.value for f in self.fixed}
            if not exprs[ci].mask(cols, 1)[0]:
                raise SpaceError(
                    f"{where(self.source)}constraints[{ci}] {self.constraints[ci].expr!r} is false for the fixed "
                    f"values, so no design point is feasible; correct the constraint or the fixed values"
                )
        groups: dict[int, list[int]] = {}
        for ci, e in enumerate(exprs):
            dims = sorted({self._dim_of[n] for n in e.names if n in self._dim_of})
            if dims:
                groups.setdefault(find(dims[0]), []).append(ci)
        comps = []
        constrained: set[int] = set()
        for root, cons in sorted(groups.items()):
            dims = tuple(i for i in range(len(self.dimensions)) if find(i) == root)
            constrained.update(dims)
            comps.append(self._component(dims, tuple(cons)))
        free = tuple(i for i in range(len(self.dimensions)) if i not in constrained)
        return FeasibilityAnalysis(free, tuple(comps))

    def _component(self, dims: tuple[int, ...], cons: tuple[int, ...]) -> Component:
        sub_radices = [self.radices[i] for i in dims]
        raw = math.prod(sub_radices)
        text = "; ".join(repr(self.constraints[c].expr) for c in cons)
        names = ", ".join(self.dimensions[i].name for i in dims)
        if raw <= ENUMERATION_LIMIT:
            tables = []
            for s in range(0, raw, 1 << 20):
                n = min(1 << 20, raw - s)
                sub = decode_mixed_radix(np.arange(s, s + n, dtype=np.int64), sub_radices)
                full = np.zeros((n, len(self.radices)), dtype=np.int64)
                full[:, dims] = sub
                tables.append(sub[self.feasible_mask(full, cons)])
            table = np.concatenate(tables).astype(np.int32 if max(sub_radices) < 2**31 else np.int64)
            if table.shape[0] == 0:
                raise SpaceError(
                    f"{where(self.source)}the constraints {text} admit no combination of {names} "
                    f"(all {raw:,} were checked); relax a constraint or widen a value list"
                )
            return Component(dims, cons, raw, table, table.shape[0] / raw)
        rng = np.random.default_rng(0)
        sub = np.column_stack([rng.integers(0, m, PROBE_POINTS) for m in sub_radices])
        full = np.zeros((PROBE_POINTS, len(self.radices)), dtype=np.int64)
        full[:, dims] = sub
        hits = int(self.feasible_mask(full, cons).sum())
        if hits == 0:
            raise SpaceError(
                f"{where(self.source)}the constraints {text} admit none of {PROBE_POINTS:,} random "
                f"combinations of {names} ({raw:,} in all); they look unsatisfiable: relax a constraint"
            )
        return Component(dims, cons, raw, None, hits / PROBE_POINTS)

    @property
    def feasible_size(self) -> int | None:
        """Exact number of feasible points, or None when a component was too large to enumerate."""
        a = self.analysis
        if not a.exact:
            return None
        return math.prod(self.radices[i] for i in a.free_dims) * math.prod(c.feasible_size for c in a.components)

    @property
    def feasible_size_estimate(self) -> float:
        """Feasible size: exact when known, else the random-probe estimate."""
        exact = self.feasible_size
        if exact is not None:
            return float(exact)
        return float(self.size) * math.prod(c.feasible_fraction for c in self.analysis.components)

    def check(self) -> "DesignSpace":
        """Compile the constraints and analyse feasibility now (raises on any problem); returns self."""
        _ = self.analysis
        return self

    # ---- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"schema": SCHEMA, "name": self.name}
        if self.description:
            d["description"] = self.description
        d["parameters"] = [dim.to_dict() for dim in self.dimensions]
        if self.fixed:
            d["fixed"] = [f.to_dict() for f in self.fixed]
        if self.constraints:
            d["constraints"] = [c.to_dict() for c in self.constraints]
        return d

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        text = self.to_json() if path.suffix.lower() == ".json" else self.to_yaml()
        path.write_text(text, encoding="utf-8")
        return path

    def summary(self) -> dict:
        """The ``space show --json`` document: size, feasible size and every parameter's values."""
        params = []
        for dim in self.dimensions:
            for p in dim.parameters:
                entry: dict[str, Any] = {"name": p.name, "values": list(p.values), "count": p.size,
                                         "kind": p.kind, "unit": p.unit, "label": p.display,
                                         "description": p.description}
                if isinstance(dim, Group):
                    entry["group"] = dim.name
                params.append(entry)
        return {
            "name": self.name,
            "size": self.size,
            "feasible_size": self.feasible_size,
            "dimensions": [{"name": d.name, "count": d.size, "parameters": [p.name for p in d.parameters]}
                           for d in self.dimensions],
            "parameters": params,
            "fixed": [f.to_dict() for f in self.fixed],
            "constraints": [c.expr for c in self.constraints],
        }


def decode_mixed_radix(idx: np.ndarray, radices: Sequence[int]) -> np.ndarray:
    """Digits (n × len(radices), int64) of int64 indices; the first radix is the most significant."""
    idx = np.asarray(idx, dtype=np.int64)
    out = np.empty((idx.shape[0], len(radices)), dtype=np.int64)
    for j in range(len(radices) - 1, -1, -1):
        out[:, j] = idx % radices[j]
        idx = idx // radices[j]
    return out


# ---- reading files --------------------------------------------------------------------------
class _LineLoader(yaml.SafeLoader):
    """Safe YAML loader that records each mapping's line number under ``__line__``."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=True)
    keys = [loader.construct_object(k, deep=True) for k, _ in node.value]
    dupes = {k for k in keys if keys.count(k) > 1}
    if dupes:
        raise yaml.constructor.ConstructorError(
            None, None, f"the key {sorted(map(str, dupes))[0]!r} appears twice in one mapping", node.start_mark
        )
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_space_text(text: str, source: str = "<text>", fmt: str | None = None) -> DesignSpace:
    """Parse a design space from YAML or JSON text; *source* names it in error messages."""
    fmt = fmt or ("json" if source.lower().endswith(".json") else "yaml")
    if fmt == "json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpaceError(f"{source}:{e.lineno}: malformed JSON at column {e.colno}: {e.msg}") from None
    else:
        try:
            raw = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
            loc = f"{source}:{mark.line + 1}" if mark else source
            col = f" (column {mark.column + 1})" if mark else ""
            problem = getattr(e, "problem", None) or str(e)
            raise SpaceError(f"{loc}: malformed YAML{col}: {problem}; check indentation and quoting") from None
    return space_from_dict(raw, source)


def space_from_dict(raw: Any, source: str = "<dict>") -> DesignSpace:
    """Build and check a :class:`DesignSpace` from the file structure (see the module docstring)."""
    if not isinstance(raw, dict):
        raise SpaceError(f"{source}: the file must be a mapping with a 'parameters' list (got {type(raw).__name__})")
    _unknown(raw, _TOP_FIELDS, where(source, raw.get("__line__")), "top-level field")
    schema = raw.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise SpaceError(f"{source}: schema {schema!r} is not supported (this version reads {SCHEMA!r})")
    entries = raw.get("parameters")
    if not isinstance(entries, list) or not entries:
        raise SpaceError(f"{where(source, raw.get('__line__'))}'parameters' must be a non-empty list of parameters")
    dims: list[Dimension] = []
    for i, entry in enumerate(entries):
        ctx_field = f"parameters[{i}]"
        if isinstance(entry, dict) and "members" in entry:
            dims.append(_group(entry, source, ctx_field))
        else:
            dims.append(_parameter(entry, source, ctx_field))
    fixed = []
    for i, entry in enumerate(raw.get("fixed") or []):
        ctx = where(source, entry.get("__line__") if isinstance(entry, dict) else None, f"fixed[{i}]")
        if not isinstance(entry, dict):
            raise SpaceError(f"{ctx}each fixed entry needs 'name' and 'value'")
        _unknown(entry, _FIXED_FIELDS, ctx, "field")
        if "value" not in entry:
            raise SpaceError(f"{ctx}'value' is missing")
        fixed.append(_wrap(ctx, lambda e=entry: Fixed(
            name=e.get("name"), value=e["value"], unit=str(e.get("unit", "")), label=str(e.get("label", "")),
            description=str(e.get("description", "")), option=str(e.get("option", "")))))
    constraints = []
    for i, entry in enumerate(raw.get("constraints") or []):
        line = entry.get("__line__") if isinstance(entry, dict) else None
        if isinstance(entry, dict):
            _unknown(entry, {"expr", "description"}, where(source, line, f"constraints[{i}]"), "field")
            constraints.append(Constraint(str(entry.get("expr", "")), str(entry.get("description", ""))))
        elif isinstance(entry, str):
            constraints.append(Constraint(entry))
        else:
            raise SpaceError(f"{where(source, line, f'constraints[{i}]')}a constraint is text such as 'a * 2 >= b'")
    space = _wrap(where(source), lambda: DesignSpace(
        dimensions=tuple(dims), name=str(raw.get("name") or Path(source).stem or "space"),
        description=str(raw.get("description", "")), fixed=tuple(fixed), constraints=tuple(constraints),
        source=source))
    return space.check()


def _wrap(ctx: str, make: Any) -> Any:
    try:
        return make()
    except SpaceError as e:
        msg = str(e)
        raise SpaceError(msg if ctx and msg.startswith(ctx.rstrip(": ")) else f"{ctx}{msg}") from None


def _unknown(entry: dict, allowed: set[str], ctx: str, what: str) -> None:
    for key in entry:
        if key != "__line__" and key not in allowed:
            hint = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            did = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise SpaceError(f"{ctx}unknown {what} {key!r}{did}; allowed: {', '.join(sorted(allowed))}")


def _parameter(entry: Any, source: str, fld: str) -> Parameter:
    if not isinstance(entry, dict):
        raise SpaceError(f"{where(source, None, fld)}each parameter is a mapping with 'name' and 'values'")
    name = entry.get("name")
    ctx = where(source, entry.get("__line__"), f"{fld} ({name})" if name else fld)
    _unknown(entry, _PARAM_FIELDS, ctx, "field")
    if "values" not in entry:
        raise SpaceError(f"{ctx}'values' is missing; give a list, 'i::j::k' or pow2: a..b")
    kind = entry.get("kind")
    values = parse_values(entry["values"], ctx)
    if kind is None:
        nums = [v for v in values if not isinstance(v, str) and to_number(v) is not None]
        texts = [v for v in values if isinstance(v, str) or isinstance(v, bool)]
        if nums and texts:
            raise SpaceError(
                f"{ctx}values mix numbers and text ({texts[0]!r} is not a number); correct the value, or "
                f"set kind: categorical if the values are labels"
            )
        kind = "categorical" if texts else "numeric"
    return _wrap(ctx, lambda: Parameter(
        name=name, values=values, unit=str(entry.get("unit", "")), label=str(entry.get("label", "")),
        description=str(entry.get("description", "")), kind=str(kind), option=str(entry.get("option", "")),
        scale=str(entry.get("scale", "")).strip().lower()))


def _group(entry: dict, source: str, fld: str) -> Group:
    name = entry.get("name")
    ctx = where(source, entry.get("__line__"), f"{fld} (group {name})" if name else fld)
    _unknown(entry, _GROUP_FIELDS, ctx, "field")
    members = entry.get("members")
    if not isinstance(members, list) or not members:
        raise SpaceError(f"{ctx}'members' must be a non-empty list of parameters")
    params = tuple(_parameter(m, source, f"{fld}.members[{j}]") for j, m in enumerate(members))
    return _wrap(ctx, lambda: Group(name=name, members=params, label=str(entry.get("label", "")),
                                    description=str(entry.get("description", ""))))


# ---- tabular editing (the dashboard's editable table; same validation as files) -------------
TABLE_COLUMNS = ("group", "name", "label", "unit", "kind", "values", "description", "option")
FIXED_COLUMNS = ("name", "value", "unit", "label", "description", "option")


def space_table(space: DesignSpace) -> pd.DataFrame:
    """One row per parameter; values in the file syntax; rows sharing ``group`` form a group."""
    from .values import format_values_text

    rows = []
    for d in space.dimensions:
        for p in d.parameters:
            rows.append({"group": d.name if isinstance(d, Group) else "", "name": p.name, "label": p.label,
                         "unit": p.unit, "kind": p.kind, "values": format_values_text(p.values),
                         "description": p.description, "option": p.option})
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def fixed_table(space: DesignSpace) -> pd.DataFrame:
    return pd.DataFrame([{k: str(getattr(f, k)) for k in FIXED_COLUMNS} for f in space.fixed],
                        columns=list(FIXED_COLUMNS))


def space_from_table(params: pd.DataFrame, constraints: Sequence[str] = (), fixed: pd.DataFrame | None = None,
                     name: str = "space", description: str = "", base: DesignSpace | None = None) -> DesignSpace:
    """Build a space from the editable tables; errors name the table row (1-based) and column.

    Groups keep the label and description they have in *base* (the space the table was made from).
    """
    base_groups = {d.name: d for d in (base.dimensions if base else ()) if isinstance(d, Group)}

    def cell(row: Mapping, key: str) -> str:
        v = row.get(key, "")
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip()

    entries: list[dict] = []
    groups: dict[str, dict] = {}
    for i, row in enumerate(params.to_dict(orient="records"), 1):
        if not any(cell(row, k) for k in TABLE_COLUMNS):
            continue  # blank row left by the editor
        ctx = f"parameter table row {i}: "
        values_text = cell(row, "values")
        if not values_text:
            raise SpaceError(f"{ctx}'values' is empty; write e.g. 1, 2, 4 or 9::3::36 or pow2: 1..16")
        entry: dict[str, Any] = {"name": cell(row, "name"), "values": parse_values(values_text, ctx)}
        for key in ("label", "unit", "description", "option", "kind"):
            if cell(row, key):
                entry[key] = cell(row, key)
        if not entry["name"]:
            raise SpaceError(f"{ctx}'name' is empty; give the parameter a name such as simd")
        g = cell(row, "group")
        if g:
            if g not in groups:
                groups[g] = {"name": g, "members": []}
                if g in base_groups:
                    groups[g].update(label=base_groups[g].label, description=base_groups[g].description)
                entries.append(groups[g])
            groups[g]["members"].append(entry)
        else:
            entries.append(entry)
    raw: dict[str, Any] = {"name": name or "space", "description": description, "parameters": entries,
                           "constraints": [c.strip() for c in constraints if c and c.strip()]}
    if fixed is not None:
        fx = []
        for i, row in enumerate(fixed.to_dict(orient="records"), 1):
            if not any(cell(row, k) for k in FIXED_COLUMNS):
                continue
            val = cell(row, "value")
            num = to_number(val)
            fx.append({"name": cell(row, "name"), "value": num if num is not None else val,
                       **{k: cell(row, k) for k in ("unit", "label", "description", "option") if cell(row, k)}})
        raw["fixed"] = fx
    return space_from_dict(raw, source="the tables")
