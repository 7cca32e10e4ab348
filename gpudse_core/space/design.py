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
  :mod:`gpudse_core.space.expr` (never ``eval``). A constraint that is an ``and`` of conditions is
  analysed condition by condition (its *conjuncts*). :meth:`DesignSpace.analysis` splits the
  constrained dimensions into independent components and, for each (never call a
  satisfiable space unsatisfiable on the strength of a failed random probe):

  1. proves a conjunct that can never hold by interval arithmetic over the parameters' ranges
     (:func:`~gpudse_core.space.expr.always`) — an error at load time;
  2. enumerates the component exactly when it has at most ``limits.feasibility_points``
     combinations, or else joins its dimensions one at a time, filtering each conjunct as soon as
     its dimensions are all present, while the partial table stays within that limit — exact
     feasible size, rejection-free uniform sampling, and a proof when nothing is feasible;
  3. otherwise probes ``limits.feasibility_probes`` random combinations (an estimate of the
     feasible share), and when none is feasible searches for a feasible point by coordinate descent
     on the constraints' violation. The space then loads with a note saying that no feasible point
     was found in N probes, that the feasible share is below 3/N (95 % bound), and whether a
     feasible point exists; its feasible size is unknown and uniform sampling refuses it.

  A constraint that is undefined at some points (division by zero, ``log`` of a non-positive number,
  NaN; see :mod:`~gpudse_core.space.expr`) makes those points infeasible, and the analysis records a
  note naming the constraint, how many points, and an example (:attr:`DesignSpace.notes`).
"""

from __future__ import annotations

import difflib
import json
import keyword
import math
import re
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import yaml

from .. import limits
from ..choices import RESERVED_NAMES
from ..errors import SpaceError, where
from ..safeload import load_json, load_yaml, strict_loader
from .derived import Derived, check_derived, parse_derived
from .derived import evaluate as evaluate_derived
from .expr import FALSE, FUNCTIONS, NUM, TEXT, Expression, always, compile_expression
from .values import Value, format_values, magnitude_problem, parse_values, to_number

if TYPE_CHECKING:  # pandas is imported where a frame is built: `gpudse sample` never needs it
    import pandas as pd

INT64_LIMIT = (1 << 63) - 1
CHUNK_ROWS = 1 << 20  # rows of digits evaluated at once during feasibility analysis
TABLE_BYTES = 256 << 20  # memory for one component's table of feasible digit rows (int32)
MIN_PROBES = 4096  # random probes a component too large to enumerate gets at least
SEARCH_STARTS = 16  # parallel starts of the coordinate-descent search for a feasible point
# An array operation on a few rows costs about what one on this many does (interpreter overhead per
# syntax node): a step of the search on fewer rows is charged as this many, so a long chain of
# comparisons over two-value parameters (16 starts × 2 candidates a step) cannot take minutes.
CALL_ROWS = 4096
SCHEMA = "gpudse.space/1"

_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "a\n" is not a name
_RESERVED = set(keyword.kwlist) | set(FUNCTIONS) | {"True", "False", "None"}
_PARAM_FIELDS = {"name", "values", "unit", "label", "description", "kind", "option", "scale"}
SCALES = ("linear", "log2")  # a numeric parameter's modelling scale (gpudse_core.model.encoding)
_GROUP_FIELDS = {"name", "members", "label", "description"}
_FIXED_FIELDS = {"name", "value", "unit", "label", "description", "option"}
_TOP_FIELDS = {"schema", "name", "description", "source", "parameters", "fixed", "constraints", "derived"}


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
    if name in RESERVED_NAMES:
        raise SpaceError(f"{ctx}{what} {name!r} is reserved: gpudse uses it itself (a simulator placeholder such as "
                         f"{{config}}, or a column it adds such as design_index); choose another name "
                         f"(e.g. '{name}_value')")
    return name


FLOAT_EXACT = 1 << 53  # whole numbers up to here are exact as float64; beyond, neighbours share one float


def _check_exact_as_float(vals: tuple, ctx: str) -> None:
    """A numeric value list held as float64 (any value with a decimal point) must not hold a whole
    number that float64 cannot represent: 9007199254740993 beside 9.5 would be stored, looked up and
    sampled as 9007199254740992.0 — two values silently one. All-whole-number lists stay exact (int64)."""
    if all(isinstance(v, int) for v in vals):
        return
    for v in vals:
        if isinstance(v, int) and abs(v) > FLOAT_EXACT and float(v) != v:
            f = float(v)
            twin = next((w for w in vals if w is not v and w == f), None)
            same = f" — the same number as the value {twin!r} there" if twin is not None else ""
            eg = f" (e.g. {int(twin)} instead of {twin!r})" if isinstance(twin, float) else ""
            raise SpaceError(f"{ctx}value {v} is a whole number beyond 2^53 in a list with decimal values, where it "
                             f"would be held as the floating-point number {f!r}{same}; write every value of this "
                             f"parameter as a whole number{eg} so they stay exact")


@dataclass(frozen=True)
class Parameter:
    """One explored parameter: a name and an ordered set of distinct values.

    ``kind`` is ``"numeric"`` or ``"categorical"``; ``option`` is the simulator option it sets
    (e.g. ``-gpgpu_n_clusters``), if any; ``scale`` (``"linear"`` or ``"log2"``, empty: inferred
    from the values) is the scale models work on.
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
        limits.check("values_per_parameter", len(vals), f"{ctx}{len(vals):,} values")
        if self.kind == "numeric":
            conv = []
            for v in vals:
                n = to_number(v)
                if n is None:
                    raise SpaceError(
                        f"{ctx}value {v!r} is not a number; correct it, or set kind: categorical "
                        f"if the values are labels"
                    )
                bad = magnitude_problem(n)
                if bad:
                    raise SpaceError(f"{ctx}value {str(v)[:40]!r} {bad}; use finite numbers")
                conv.append(n)
            vals = tuple(conv)
            _check_exact_as_float(vals, ctx)
        else:
            # NFC: 'café' typed precomposed and with a combining accent are one value, not two
            raw = [str(v).lower() if isinstance(v, bool) else str(v) for v in vals]
            vals = tuple(unicodedata.normalize("NFC", v) for v in raw)
        seen: dict = {}
        for i, v in enumerate(vals):
            key = v  # Python compares ints and floats exactly: 2**60 + 1 and 2**60 stay two values
            if key in seen:
                same = "" if self.kind == "numeric" or raw[i] == raw[seen[key]] else (
                    f" ({ascii(raw[seen[key]])} and {ascii(raw[i])} are the same text once Unicode-normalised (NFC))")
                raise SpaceError(f"{ctx}value {v!r} appears more than once{same}; each value must be listed once")
            seen[key] = i
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
        # numbers keyed exactly (Python's 8 == 8.0 and hash(8) == hash(8.0)): 2**53 + 1 is not 2**53
        return {v: i for i, v in enumerate(self.values)}

    def position(self, value: Any) -> int | None:
        """Position of *value* in the value list, or None (numbers compare by value, exactly: 8 == 8.0,
        but 9007199254740993 is not 9007199254740992.0)."""
        if self.kind == "numeric":
            if isinstance(value, np.integer):
                n = int(value)
            elif isinstance(value, np.floating):
                n = float(value)
            else:
                n = to_number(value)
            return None if n is None or n != n else self._lookup.get(n)
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
        if self.value is None or not isinstance(self.value, (str, int, float)):
            raise SpaceError(f"fixed {self.name!r}: 'value' must be one number or word")
        n = to_number(self.value)
        if n is not None:
            bad = magnitude_problem(n)
            if bad:
                raise SpaceError(f"fixed {self.name!r}: value {str(self.value)[:40]!r} {bad}")
            object.__setattr__(self, "value", n)  # "30" and 30 alike: constraints compute with it
        elif isinstance(self.value, bool):
            object.__setattr__(self, "value", str(self.value).lower())

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

    ``table`` holds every feasible combination (rows of digits for ``dims``) when the component
    could be enumerated (``method`` ``"enumerated"`` or ``"joined"``); otherwise it is None and
    ``feasible_fraction`` is the share of ``probes`` random combinations that were feasible
    (``"probed"``), or None when none was (``"searched"``: ``witness`` is a feasible point found
    by search, if any, and the share is below :attr:`fraction_upper`).
    """

    dims: tuple[int, ...]
    conjuncts: tuple[int, ...]  # indices into DesignSpace.conjuncts
    raw_size: int
    table: np.ndarray | None
    feasible_fraction: float | None
    method: str = "enumerated"
    probes: int = 0
    witness: dict | None = None
    constraints: tuple[int, ...] = ()  # the constraints (file order) these conjuncts come from
    search_steps: int = 0  # evaluations the search for a witness made (0: not searched, budget spent)
    enumerable: bool = False  # small enough to enumerate, but the space's analysis budget was spent

    @property
    def exact(self) -> bool:
        return self.table is not None

    @property
    def feasible_size(self) -> int | None:
        return None if self.table is None else int(self.table.shape[0])

    @property
    def fraction_upper(self) -> float | None:
        """With no feasible probe: a 95 % upper bound on the feasible share (3/N, "rule of three")."""
        return 3.0 / self.probes if self.feasible_fraction is None and self.probes else None


@dataclass(frozen=True)
class FeasibilityAnalysis:
    """How the constraints split the space: independent free dimensions and constrained components."""

    free_dims: tuple[int, ...]
    components: tuple[Component, ...]
    notes: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return all(c.exact for c in self.components)


class _Budget:
    """What the feasibility analysis of one space may spend, over all its components together: rows
    evaluated by enumeration (8 × feasibility_points), memory for tables of feasible rows
    (TABLE_BYTES), random probes (64 × feasibility_probes, at least 4,096 per component) and search
    steps (16 × feasibility_probes), and constraint evaluations in points × syntax nodes
    (constraint_work: 200 constraints of 30 nodes over 4 M points would be 25 G, minutes of one core).
    A component beyond it is probed instead of enumerated, with fewer probes, or not searched: a less
    exact answer, never a wrong one, and bounded time however many constraints a file holds. A
    component whose constraints cost so much per point that even MIN_PROBES probes exceed what is
    left of constraint_work is refused before any is evaluated."""

    def __init__(self) -> None:
        lim = limits.current()
        self.work = 8 * lim.feasibility_points
        self.table_bytes = TABLE_BYTES
        self.probes = 64 * lim.feasibility_probes
        self.search = 16 * lim.feasibility_probes
        self.evals = lim.constraint_work


class _Undefined:
    """Counts, per conjunct, the points where it is undefined, with a first example (for notes)."""

    def __init__(self) -> None:
        self.count: dict[int, int] = {}
        self.checked: dict[int, int] = {}
        self.example: dict[int, tuple[tuple[int, ...], np.ndarray]] = {}

    def add(self, k: int, bad: np.ndarray, dims: tuple[int, ...], digits: np.ndarray) -> None:
        n = int(bad.sum())
        self.checked[k] = self.checked.get(k, 0) + bad.shape[0]
        if n:
            self.count[k] = self.count.get(k, 0) + n
            if k not in self.example:
                self.example[k] = (dims, digits[int(np.argmax(bad))].copy())


@dataclass(frozen=True)
class DesignSpace:
    """A design space: ordered dimensions (parameters or groups), fixed baseline and constraints."""

    dimensions: tuple[Dimension, ...]
    name: str = "space"
    description: str = ""
    fixed: tuple[Fixed, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    source: str = field(default="", compare=False)
    derived: tuple[Derived, ...] = ()  # named quantities computed from the parameters (:mod:`.derived`)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", tuple(self.dimensions))
        object.__setattr__(self, "derived", tuple(self.derived))
        object.__setattr__(self, "fixed", tuple(self.fixed))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        if not self.dimensions:
            raise SpaceError(f"{where(self.source)}the space has no parameters; add at least one under 'parameters'")
        n_values = sum(p.size for d in self.dimensions for p in d.parameters)
        limits.check("space_values", n_values, f"{where(self.source)}{n_values:,} values in all parameters together")
        n_params = sum(len(d.parameters) for d in self.dimensions) + len(self.fixed)
        limits.check("parameters", n_params, f"{where(self.source)}{n_params:,} parameters (explored and fixed)")
        limits.check("constraints", len(self.constraints), f"{where(self.source)}{len(self.constraints):,} constraints",
                     "combine them or check the file")
        seen: dict[str, str] = {}
        names = [(d.name, "group") for d in self.dimensions if isinstance(d, Group)]
        names += [(p.name, "parameter") for p in self.parameters] + [(f.name, "fixed value") for f in self.fixed]
        for n, what in names:
            if n in seen:
                raise SpaceError(
                    f"{where(self.source)}the name {n!r} is used twice ({seen[n]} and {what}); names must be unique"
                )
            seen[n] = what
        limits.check("derived", len(self.derived), f"{where(self.source)}{len(self.derived):,} derived quantities",
                     "declare the few the physics needs")

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

    @cached_property
    def derived_expressions(self) -> dict[str, Expression]:
        """Derived quantity name → its compiled expression (checked: :func:`.derived.check_derived`)."""
        types = {p.name: (TEXT if p.kind == "categorical" else NUM) for p in self.parameters}
        types.update({f.name: (NUM if to_number(f.value) is not None else TEXT) for f in self.fixed})
        taken = {p.name: "parameter" for p in self.parameters}
        taken.update({d.name: "group" for d in self.dimensions if isinstance(d, Group)})
        taken.update({f.name: "fixed value" for f in self.fixed})
        return check_derived(self.derived, types, taken, where(self.source), _check_name)

    @property
    def derived_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.derived)

    def derived_map(self) -> dict[str, str]:
        """Derived quantity name → expression text: what a model fitted on this space keeps."""
        return {d.name: d.expr for d in self.derived}

    def with_derived(self, frame: pd.DataFrame) -> pd.DataFrame:
        """*frame* (parameter columns) with each derived quantity's column added (a copy; columns it has kept)."""
        todo = {k: e for k, e in self.derived_expressions.items() if k not in frame.columns}
        if not todo:
            return frame
        cols: dict[str, Any] = {f.name: f.value for f in self.fixed}
        cols.update({c: frame[c].to_numpy() for c in frame.columns if isinstance(c, str)})
        out = frame.copy()
        for k, v in evaluate_derived(todo, cols, len(frame)).items():
            out[k] = v
        return out

    @cached_property
    def conjuncts(self) -> tuple[tuple[int, Expression], ...]:
        """Every constraint split at its top-level ``and``: ``(constraint index, condition)`` pairs."""
        return tuple((ci, part) for ci, e in enumerate(self._expressions) for part in e.conjuncts())

    def _conjunct_dims(self, k: int) -> tuple[int, ...]:
        return tuple(sorted({self._dim_of[n] for n in self.conjuncts[k][1].names if n in self._dim_of}))

    @cached_property
    def _ranges(self) -> dict[str, tuple[float, float]]:
        r = {p.name: (float(min(p.values)), float(max(p.values))) for p in self.parameters if p.kind == "numeric"}
        r.update({f.name: (float(f.value), float(f.value)) for f in self.fixed
                  if isinstance(f.value, (int, float)) and not isinstance(f.value, bool)})
        return r

    def _conjunct_label(self, k: int) -> str:
        ci, e = self.conjuncts[k]
        whole = self.constraints[ci].expr
        part = "" if e.text == self._expressions[ci].text else f" (its part {e.text!r})"
        return f"constraints[{ci}] {whole!r}{part}"

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
                    shown = ", ".join(map(str, p.values[:10])) + (", …" if p.size > 10 else "")
                    raise SpaceError(f"value {str(point[p.name])[:40]!r} of {p.name!r} is not one of its values "
                                     f"({shown})")
                if pos is not None and k != pos:
                    raise SpaceError(
                        f"group {d.name!r}: the point mixes positions of the group's members; "
                        f"members vary together"
                    )
                pos = k
            digits.append(int(pos))
        return digits

    # ---- tables of points ---------------------------------------------------------------------
    def column_arrays(self, digits: np.ndarray) -> dict[str, np.ndarray]:
        """Parameter name → value array for the given digit rows (what :meth:`frame` holds, without pandas)."""
        d = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.radices))
        cols = {}
        for j, dim in enumerate(self.dimensions):
            for p in dim.parameters:
                cols[p.name] = p.array[d[:, j]]
        return cols

    def frame(self, digits: np.ndarray) -> pd.DataFrame:
        """DataFrame with one column per parameter for the given digit rows."""
        import pandas as pd

        return pd.DataFrame(self.column_arrays(digits))

    def columns(self, digits: np.ndarray, dims: Sequence[int] | None = None) -> dict[str, Any]:
        """Name → value array for constraint evaluation (fixed values as scalars). With *dims*, the
        digit columns are those dimensions only (others are absent)."""
        cols: dict[str, Any] = {f.name: f.value for f in self.fixed}
        for j, i in enumerate(range(len(self.dimensions)) if dims is None else dims):
            for p in self.dimensions[i].parameters:
                cols[p.name] = p.array[digits[:, j]]
        return cols

    def feasible_mask(self, digits: np.ndarray, conjuncts: Sequence[int] | None = None,
                      dims: Sequence[int] | None = None) -> np.ndarray:
        """Which digit rows satisfy the constraints (all, or the conjuncts numbered in *conjuncts*);
        with *dims*, *digits* has one column per dimension in *dims* only. Undefined points fail."""
        width = len(self.radices) if dims is None else len(dims)
        d = np.asarray(digits, dtype=np.int64).reshape(-1, width)
        mask = np.ones(d.shape[0], dtype=bool)
        chosen = range(len(self.conjuncts)) if conjuncts is None else conjuncts
        if not len(chosen):
            return mask
        cols = self.columns(d, dims)
        for k in chosen:
            mask &= self.conjuncts[k][1].mask(cols, d.shape[0])
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
        """Split constrained dimensions into components and settle each (see the module docstring).

        Raises :class:`SpaceError` when the constraints provably admit no design point.
        """
        conj = self.conjuncts
        src = where(self.source)
        parent = list(range(len(self.dimensions)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        fixed_cols = {f.name: f.value for f in self.fixed}
        for k, (ci, e) in enumerate(conj):
            dims = self._conjunct_dims(k)
            if not dims:
                ok, bad = e.mask_undefined(fixed_cols, 1)
                if bad[0]:
                    raise SpaceError(f"{src}{self._conjunct_label(k)} is undefined for the fixed values (a division "
                                     f"by zero, log of a non-positive number, or NaN); correct it")
                if not ok[0]:
                    raise SpaceError(
                        f"{src}{self._conjunct_label(k)} is false for the fixed values, so no design point is "
                        f"feasible; correct the constraint or the fixed values")
                continue
            if always(e, self._ranges) == FALSE:
                ranges = ", ".join(f"{n} {self._ranges[n][0]:g}..{self._ranges[n][1]:g}" for n in sorted(e.names)
                                   if n in self._ranges)
                raise SpaceError(
                    f"{src}{self._conjunct_label(k)} can never hold: it is false (or undefined) everywhere in the "
                    f"ranges of its parameters ({ranges or 'their values'}); relax it or widen a value list")
            for a, b in zip(dims, dims[1:]):
                parent[find(b)] = find(a)
        groups: dict[int, list[int]] = {}
        for k in range(len(conj)):
            dims = self._conjunct_dims(k)
            if dims:
                groups.setdefault(find(dims[0]), []).append(k)
        comps, notes = [], []
        budget = _Budget()
        constrained: set[int] = set()
        for root, ks in sorted(groups.items()):
            dims = tuple(i for i in range(len(self.dimensions)) if find(i) == root)
            constrained.update(dims)
            comp, undefined = self._component(dims, tuple(ks), budget)
            comps.append(comp)
            notes += self._notes(comp, undefined)
        free = tuple(i for i in range(len(self.dimensions)) if i not in constrained)
        return FeasibilityAnalysis(free, tuple(comps), tuple(notes))

    @property
    def notes(self) -> tuple[str, ...]:
        """What the feasibility analysis wants the user to know (undefined points, estimates)."""
        return self.analysis.notes

    def _component_text(self, dims: Sequence[int], ks: Sequence[int]) -> tuple[str, str]:
        cis = sorted({self.conjuncts[k][0] for k in ks})
        text = "; ".join(repr(self.constraints[c].expr) for c in cis[:5])
        if len(cis) > 5:
            text += f" and {len(cis) - 5:,} more"
        names = ", ".join(self.dimensions[i].name for i in dims)
        return text, names

    def _point_text(self, dims: Sequence[int], digits: Sequence[int]) -> str:
        return ", ".join(f"{p.name}={p.values[int(k)]}" for i, k in zip(dims, digits)
                         for p in self.dimensions[i].parameters)

    def _cost(self, ks: Sequence[int]) -> int:
        """Syntax nodes the conjuncts *ks* evaluate at one point (array operations a point costs)."""
        return max(1, sum(self.conjuncts[k][1].nodes for k in ks))

    def _row_cap(self, width: int) -> int:
        return max(1, min(limits.current().feasibility_points, TABLE_BYTES // (4 * max(width, 1))))

    def _evaluate(self, dims: tuple[int, ...], ks: Sequence[int], sub: np.ndarray,
                  undefined: _Undefined | None) -> np.ndarray:
        """Feasibility of digit rows *sub* (columns = *dims*) under conjuncts *ks*, counting undefined
        points per conjunct where the earlier parts of the same constraint hold (Python's ``and``)."""
        n = sub.shape[0]
        cols = self.columns(sub, dims)
        mask = np.ones(n, dtype=bool)
        guard: dict[int, np.ndarray] = {}
        for k in ks:
            ci, e = self.conjuncts[k]
            ok, bad = e.mask_undefined(cols, n)
            g = guard.get(ci)
            if undefined is not None:
                undefined.add(k, bad if g is None else bad & g, dims, sub)
            guard[ci] = ok if g is None else g & ok
            mask &= ok
        return mask

    def _component(self, dims: tuple[int, ...], ks: tuple[int, ...], budget: _Budget) -> tuple[Component, _Undefined]:
        radices = [self.radices[i] for i in dims]
        raw = math.prod(radices)
        cap = min(self._row_cap(len(dims)), budget.table_bytes // (4 * len(dims)))
        cis = tuple(sorted({self.conjuncts[k][0] for k in ks}))
        undefined = _Undefined()
        cost = self._cost(ks)
        if raw <= cap and raw <= budget.work and raw * cost <= budget.evals:
            budget.work -= raw
            budget.evals -= raw * cost
            tables = []
            step = max(1, min(CHUNK_ROWS, (64 << 20) // (8 * len(dims))))
            for s in range(0, raw, step):
                n = min(step, raw - s)
                sub = decode_mixed_radix(np.arange(s, s + n, dtype=np.int64), radices)
                tables.append(sub[self._evaluate(dims, ks, sub, undefined)].astype(np.int32))
            table = np.concatenate(tables)
            budget.table_bytes -= table.nbytes
            if table.shape[0] == 0:
                raise self._none_feasible(dims, ks, undefined, f"all {raw:,} were checked")
            return Component(dims, ks, raw, table, table.shape[0] / raw, "enumerated", constraints=cis), undefined
        joined = self._join(dims, ks, cap, undefined, budget)
        if joined is not None:
            budget.table_bytes -= joined.nbytes
            if joined.shape[0] == 0:
                raise self._none_feasible(dims, ks, undefined, "proved by enumerating them constraint by constraint")
            return Component(dims, ks, raw, joined, joined.shape[0] / raw, "joined", constraints=cis), undefined
        probes = min(limits.current().feasibility_probes, max(MIN_PROBES, budget.probes), budget.evals // cost)
        if probes < MIN_PROBES:
            text, names = self._component_text(dims, ks)
            limits.check("constraint_work", limits.current().constraint_work - budget.evals + MIN_PROBES * cost,
                         f"{where(self.source)}the constraints {text} on {names} cost {cost:,} syntax nodes a point; "
                         f"checking them at {MIN_PROBES:,} random points (with the space's other constraints) is "
                         f"that many point × node evaluations", "combine or simplify the constraints")
        budget.probes -= probes
        budget.evals -= probes * cost
        rng = np.random.default_rng(0)
        undefined = _Undefined()
        sub = np.column_stack([rng.integers(0, m, probes) for m in radices])
        hits = int(self._evaluate(dims, ks, sub, undefined).sum())
        enumerable = raw <= self._row_cap(len(dims))
        if hits:
            return Component(dims, ks, raw, None, hits / probes, "probed", probes, constraints=cis,
                             enumerable=enumerable), undefined
        before = budget.search
        witness = self._search(dims, ks, rng, budget)
        return Component(dims, ks, raw, None, None, "searched", probes, witness, cis, before - budget.search,
                         enumerable), undefined

    def _join(self, dims: tuple[int, ...], ks: tuple[int, ...], cap: int, undefined: _Undefined,
              budget: _Budget) -> np.ndarray | None:
        """Feasible rows built one dimension at a time, each conjunct filtering as soon as its
        dimensions are present; None when a partial table would exceed *cap* rows or the work
        (rows generated) 16 × *cap*. An empty result is a proof that nothing is feasible."""
        cdims = {k: set(self._conjunct_dims(k)) for k in ks}
        order: list[int] = []
        pending = list(ks)
        rows = np.zeros((1, 0), dtype=np.int32)
        work, allowed = 0, min(16 * cap, budget.work)
        remaining = list(dims)
        while remaining:
            placed = set(order)

            def gain(d: int) -> tuple:
                done = sum(1 for k in pending if cdims[k] <= placed | {d})
                return (-done, self.radices[d])

            d = min(remaining, key=gain)
            remaining.remove(d)
            newly = [k for k in pending if cdims[k] <= placed | {d}]
            pending = [k for k in pending if k not in newly]
            r = self.radices[d]
            if not newly and rows.shape[0] * r > cap:
                return None
            order.append(d)
            step = max(1, CHUNK_ROWS // r)
            parts, kept = [], 0
            for s in range(0, rows.shape[0], step):
                block = rows[s:s + step]
                new = np.column_stack([np.repeat(block, r, axis=0),
                                       np.tile(np.arange(r, dtype=np.int32), block.shape[0])])
                work += new.shape[0]
                budget.work -= new.shape[0]
                if work > allowed:
                    return None
                if newly:
                    spent = new.shape[0] * self._cost(newly)
                    if spent > budget.evals:
                        return None
                    budget.evals -= spent
                    new = new[self._evaluate(tuple(order), newly, new, undefined)]
                kept += new.shape[0]
                if kept > cap:
                    return None
                parts.append(new)
            rows = np.concatenate(parts) if parts else np.zeros((0, len(order)), dtype=np.int32)
            if rows.shape[0] == 0:
                return rows
        return rows[:, [order.index(i) for i in dims]]

    def _search(self, dims: tuple[int, ...], ks: tuple[int, ...], rng: np.random.Generator,
                budget: _Budget) -> dict | None:
        """A feasible point of the component by coordinate descent on the summed violation of its
        conjuncts from a few random starts (at most 16 × feasibility_probes evaluations, and what is
        left of the space's search budget); or None."""
        radices = [self.radices[i] for i in dims]
        allowed = min(16 * limits.current().feasibility_probes, budget.search, budget.evals // self._cost(ks))
        starts = SEARCH_STARTS
        if allowed < len(dims) * CALL_ROWS:  # not even one sweep over the dimensions: bounded before it starts
            return None

        def violation(sub: np.ndarray) -> np.ndarray:
            cols = self.columns(sub, dims)
            v = np.zeros(sub.shape[0])
            for k in ks:
                v = v + self.conjuncts[k][1].violation(cols, sub.shape[0])
            return v

        cur = np.column_stack([rng.integers(0, m, starts) for m in radices]).astype(np.int64)
        score = violation(cur)
        work = CALL_ROWS
        found = None
        while found is None and work < allowed:
            before = score.copy()
            for j in rng.permutation(len(dims)):
                m = radices[j]
                cand = np.arange(m) if m <= 256 else np.unique(np.concatenate([rng.integers(0, m, 255), cur[:, j]]))
                trial = np.repeat(cur, cand.shape[0], axis=0)
                trial[:, j] = np.tile(cand, starts)
                v = violation(trial).reshape(starts, cand.shape[0])
                work += max(trial.shape[0], CALL_ROWS)
                v = v + rng.random(v.shape) * 1e-9  # random tie-break among equally good values
                best = np.argmin(v, axis=1)
                cur[:, j] = cand[best]
                score = v[np.arange(starts), best]
                hit = np.flatnonzero(score < 1e-6)
                if hit.size and self.feasible_mask(cur[hit[:1]], ks, dims)[0]:
                    found = cur[hit[0]]
                    break
                if work >= allowed:
                    break
            stuck = score >= before - 1e-12
            if found is None and stuck.any():  # a local minimum: restart those starts at random
                cur[stuck] = np.column_stack([rng.integers(0, m, int(stuck.sum())) for m in radices])
                score[stuck] = violation(cur[stuck])
                work += CALL_ROWS
        budget.search -= work
        budget.evals -= work * self._cost(ks)
        if found is None:
            return None
        return {p.name: p.values[int(k)] for i, k in zip(dims, found) for p in self.dimensions[i].parameters}

    def _none_feasible(self, dims: tuple[int, ...], ks: Sequence[int], undefined: _Undefined, how: str) -> SpaceError:
        src = where(self.source)
        for k in ks:
            if undefined.checked.get(k) and undefined.count.get(k) == undefined.checked[k]:
                d, row = undefined.example[k]
                return SpaceError(
                    f"{src}{self._conjunct_label(k)} is undefined at every combination checked (e.g. "
                    f"{self._point_text(d, row)}: a division by zero, log of a non-positive number, or NaN), so no "
                    f"design point is feasible; correct it")
        text, names = self._component_text(dims, ks)
        return SpaceError(f"{src}the constraints {text} admit no combination of {names} ({how}); relax a constraint "
                          f"or widen a value list")

    def _notes(self, comp: Component, undefined: _Undefined) -> list[str]:
        out = []
        for k in comp.conjuncts:
            n = undefined.count.get(k)
            if not n:
                continue
            d, row = undefined.example[k]
            label = self._conjunct_label(k)
            eg = self._point_text(d, row)
            if comp.method == "enumerated":
                out.append(f"{label} is undefined (a division by zero, log of a non-positive number, or NaN) at "
                           f"{n:,} of {undefined.checked[k]:,} combinations (e.g. {eg}); they count as infeasible")
            elif comp.method == "joined":
                out.append(f"{label} is undefined (a division by zero, log of a non-positive number, or NaN) at some "
                           f"combinations (e.g. {eg}); they count as infeasible")
            else:
                out.append(f"{label} is undefined (a division by zero, log of a non-positive number, or NaN) at "
                           f"{n:,} of {undefined.checked[k]:,} random combinations (e.g. {eg}); they count as "
                           f"infeasible")
        text, names = self._component_text(comp.dims, comp.conjuncts)
        why = ("not enumerated: evaluating its constraints at every combination would exceed the space's analysis "
               "budget (limits constraint_work and feasibility_points)" if comp.enumerable
               else "too many to enumerate")
        if comp.method == "probed":
            out.append(f"the constraints {text} on {names} ({comp.raw_size:,} combinations, {why}): "
                       f"feasible share estimated at {comp.feasible_fraction:.3g} from {comp.probes:,} random "
                       f"combinations, so the feasible size is an estimate")
        elif comp.method == "searched":
            found = (f"a feasible point exists (e.g. {', '.join(f'{k}={v}' for k, v in comp.witness.items())})"
                     if comp.witness else f"a local search bounded at {comp.search_steps:,} point evaluations "
                     f"(steps on fewer than {CALL_ROWS:,} rows count as {CALL_ROWS:,}; limits feasibility_probes and "
                     f"constraint_work) found no feasible point either, but that proves nothing"
                     if comp.search_steps else f"no local search was made: one sweep over its {len(comp.dims):,} "
                     f"dimensions would exceed what is left of the space's analysis budget (limits "
                     f"feasibility_probes and constraint_work)")
            out.append(f"the constraints {text} on {names} ({comp.raw_size:,} combinations, {why}): "
                       f"no feasible point found in {comp.probes:,} random probes, so the feasible share is below "
                       f"{comp.fraction_upper:.2g} (95 % bound); {found}. The feasible size is unknown and uniform "
                       f"sampling cannot draw from these parameters: split the constraint into conditions on fewer "
                       f"parameters, narrow the value lists, or raise the limit feasibility_points")
        return out

    @property
    def feasible_size(self) -> int | None:
        """Exact number of feasible points, or None when a component was too large to enumerate."""
        a = self.analysis
        if not a.exact:
            return None
        return math.prod(self.radices[i] for i in a.free_dims) * math.prod(c.feasible_size for c in a.components)

    def _scaled(self, factors: Sequence[float]) -> tuple[float, float]:
        """``size × Π factors`` as a float (``inf`` beyond float64) and its log10 (any magnitude)."""
        lg = math.log10(self.size) + sum(math.log10(f) for f in factors)
        try:
            return float(self.size) * math.prod(factors), lg
        except OverflowError:  # a space of more than ~1e308 points
            return (10.0 ** lg if lg < 308 else math.inf), lg

    def _component_shares(self, upper: bool) -> list[float] | None:
        out = []
        for c in self.analysis.components:
            if c.table is not None:
                out.append(c.feasible_size / c.raw_size)
            elif c.feasible_fraction is not None:
                out.append(c.feasible_fraction)
            elif upper:
                out.append(c.fraction_upper)
            else:
                return None
        return out

    @property
    def feasible_size_estimate(self) -> float:
        """Feasible size: exact when known, else the random-probe estimate (``inf`` beyond float64);
        NaN when a component had no feasible probe (see :attr:`feasible_size_upper`)."""
        exact = self.feasible_size
        if exact is not None:
            try:
                return float(exact)
            except OverflowError:
                return math.inf
        shares = self._component_shares(upper=False)
        return math.nan if shares is None else self._scaled(shares)[0]

    def feasible_size_rational(self) -> Fraction | None:
        """The feasible size (exact, or the probe estimate) as an exact rational of any magnitude;
        None when a component had no feasible probe."""
        exact = self.feasible_size
        if exact is not None:
            return Fraction(exact)
        shares = self._component_shares(upper=False)
        return None if shares is None else Fraction(self.size) * math.prod(Fraction(x) for x in shares)

    @property
    def feasible_size_upper(self) -> float | None:
        """When some component had no feasible probe: a 95 % upper bound on the feasible size."""
        if not any(c.table is None and c.feasible_fraction is None for c in self.analysis.components):
            return None
        return self._scaled(self._component_shares(upper=True))[0]

    def feasible_size_text(self) -> str:
        """The feasible size for people: exact, "about N (estimated)", or "unknown (below N)"."""
        def num(lg: float) -> str:
            return f"{round(10 ** lg):,}" if lg < 7 else f"{10 ** (lg % 1):.3g}e+{int(lg):02d}"

        exact = self.feasible_size
        if exact is not None:
            return f"{exact:,}"
        shares = self._component_shares(upper=False)
        if shares is None:
            return f"unknown (below {num(self._scaled(self._component_shares(upper=True))[1])}; see the notes)"
        return f"about {num(self._scaled(shares)[1])} (estimated by random probing)"

    def check(self) -> "DesignSpace":
        """Compile the constraints and derived quantities and analyse feasibility now (raises on any problem);
        returns self."""
        _ = self.derived_expressions
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
        if self.derived:
            d["derived"] = {x.name: x.to_dict() for x in self.derived}
        return d

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        text = self.to_json() if path.suffix.lower() == ".json" else self.to_yaml()
        from ..atomicfile import write_text

        return write_text(path, text)  # whole or not at all

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
            "feasible_size_estimate": None if self.feasible_size is not None or math.isnan(self.feasible_size_estimate)
            else self.feasible_size_estimate,
            "feasible_size_upper": self.feasible_size_upper,
            "notes": list(self.notes),
            "dimensions": [{"name": d.name, "count": d.size, "parameters": [p.name for p in d.parameters]}
                           for d in self.dimensions],
            "parameters": params,
            "fixed": [f.to_dict() for f in self.fixed],
            "constraints": [c.expr for c in self.constraints],
            "derived": [{"name": x.name, "expr": x.expr, "unit": x.unit, "label": x.display} for x in self.derived],
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
_LINE_LOADER: type | None = None


def _line_loader() -> type:
    """The strict safe YAML loader (:func:`gpudse_core.safeload.strict_loader`) recording each
    mapping's line number under ``__line__`` for error messages."""
    global _LINE_LOADER
    if _LINE_LOADER is None:
        class LineLoader(strict_loader()):  # type: ignore[misc]
            def construct_mapping(self, node: Any, deep: bool = False) -> dict:
                mapping = super().construct_mapping(node, deep=True)
                mapping["__line__"] = node.start_mark.line + 1
                return mapping

        _LINE_LOADER = LineLoader
    return _LINE_LOADER


def parse_space_text(text: str | bytes, source: str = "<text>", fmt: str | None = None) -> DesignSpace:
    """Parse a design space from YAML or JSON text; *source* names it in error messages.

    The text goes through :mod:`gpudse_core.safeload` (size, depth, aliases counted as expanded,
    number digits, duplicate keys) before any of it is interpreted.
    """
    from ..safeload import DocumentError

    fmt = fmt or ("json" if source.lower().endswith(".json") else "yaml")
    try:
        raw = load_json(text, source) if fmt == "json" else load_yaml(text, source, loader=_line_loader())
    except DocumentError as e:
        raise SpaceError(str(e)) from None
    return space_from_dict(raw, source)


def _scalar_fields(entry: dict, keys: Sequence[str], ctx: str) -> None:
    """Refuse a list or mapping where one word or number belongs (e.g. a label given as a list)."""
    for key in keys:
        v = entry.get(key)
        if v is not None and not isinstance(v, (str, int, float)):
            raise SpaceError(f"{ctx}'{key}' must be one word, number or sentence (got a {_kind(v)})")


def _kind(v: Any) -> str:
    return {dict: "mapping", list: "list"}.get(type(v), type(v).__name__)


def _show(name: Any) -> str:
    return name if isinstance(name, str) and len(name) <= 40 else ""


def space_from_dict(raw: Any, source: str = "<dict>") -> DesignSpace:
    """Build and check a :class:`DesignSpace` from the file structure (see the module docstring)."""
    if raw is None:
        raise SpaceError(f"{source}: the file is empty (or only comments); a space file needs a 'parameters' list, "
                         f"e.g. write one to start from with: gpudse space export stargazer -o my_space.yaml")
    if not isinstance(raw, dict):
        raise SpaceError(f"{source}: the file must be a mapping with a 'parameters' list (got a {_kind(raw)})")
    top = where(source, raw.get("__line__"))
    _unknown(raw, _TOP_FIELDS, top, "top-level field")
    _scalar_fields(raw, ("name", "description", "source"), top)
    schema = raw.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise SpaceError(f"{source}: schema {str(schema)[:60]!r} is not supported (this version reads {SCHEMA!r})")
    entries = raw.get("parameters")
    if not isinstance(entries, list) or not entries:
        raise SpaceError(f"{top}'parameters' must be a non-empty list of parameters")
    for key, what in (("fixed", "fixed values (each with 'name' and 'value')"),
                      ("constraints", "constraints such as 'a * 2 >= b'")):
        if raw.get(key) is not None and not isinstance(raw[key], list):
            raise SpaceError(f"{top}'{key}' must be a list of {what} (got a {_kind(raw[key])})")
    n_params = len(entries) + len(raw.get("fixed") or []) + sum(
        len(e["members"]) for e in entries if isinstance(e, dict) and isinstance(e.get("members"), list))
    limits.check("parameters", n_params, f"{top}{n_params:,} parameters (explored and fixed)")
    limits.check("constraints", len(raw.get("constraints") or []),
                 f"{top}{len(raw.get('constraints') or []):,} constraints", "combine them or check the file")
    dims: list[Dimension] = []
    n_values = 0
    for i, entry in enumerate(entries):
        ctx_field = f"parameters[{i}]"
        if isinstance(entry, dict) and "members" in entry:
            dims.append(_group(entry, source, ctx_field))
        else:
            dims.append(_parameter(entry, source, ctx_field))
        n_values += sum(p.size for p in dims[-1].parameters)
        limits.check("space_values", n_values, f"{where(source, None, ctx_field)}the parameters so far have "
                     f"{n_values:,} values in all", "a design space has a few values per parameter")
    fixed = []
    for i, entry in enumerate(raw.get("fixed") or []):
        ctx = where(source, entry.get("__line__") if isinstance(entry, dict) else None, f"fixed[{i}]")
        if not isinstance(entry, dict):
            raise SpaceError(f"{ctx}each fixed entry needs 'name' and 'value'")
        _unknown(entry, _FIXED_FIELDS, ctx, "field")
        _scalar_fields(entry, ("unit", "label", "description", "option"), ctx)
        if "value" not in entry:
            raise SpaceError(f"{ctx}'value' is missing")
        fixed.append(_wrap(ctx, lambda e=entry: Fixed(
            name=e.get("name"), value=e["value"], unit=str(e.get("unit", "")), label=str(e.get("label", "")),
            description=str(e.get("description", "")), option=str(e.get("option", "")))))
    constraints = []
    for i, entry in enumerate(raw.get("constraints") or []):
        line = entry.get("__line__") if isinstance(entry, dict) else None
        ctx = where(source, line, f"constraints[{i}]")
        if isinstance(entry, dict):
            _unknown(entry, {"expr", "description"}, ctx, "field")
            _scalar_fields(entry, ("description",), ctx)
            if not isinstance(entry.get("expr"), str):
                raise SpaceError(f"{ctx}'expr' must be the constraint's text, e.g. expr: 'a * 2 >= b'")
            constraints.append(Constraint(entry["expr"], str(entry.get("description", ""))))
        elif isinstance(entry, str):
            constraints.append(Constraint(entry))
        else:
            raise SpaceError(f"{ctx}a constraint is text such as 'a * 2 >= b' (got a {_kind(entry)})")
    space = _wrap(where(source), lambda: DesignSpace(
        dimensions=tuple(dims), name=str(raw.get("name") or Path(source).stem or "space"),
        description=str(raw.get("description", "")), fixed=tuple(fixed), constraints=tuple(constraints),
        source=source, derived=parse_derived(raw.get("derived"), top)))
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
            hint = difflib.get_close_matches(str(key)[:100], sorted(allowed), n=1)
            did = f" (did you mean {hint[0]!r}?)" if hint else ""
            shown = repr(key) if len(repr(key)) <= 60 else repr(key)[:57] + "..."
            raise SpaceError(f"{ctx}unknown {what} {shown}{did}; allowed: {', '.join(sorted(allowed))}")


def _parameter(entry: Any, source: str, fld: str) -> Parameter:
    if not isinstance(entry, dict):
        raise SpaceError(f"{where(source, None, fld)}each parameter is a mapping with 'name' and 'values'")
    name = entry.get("name")
    ctx = where(source, entry.get("__line__"), f"{fld} ({_show(name)})" if _show(name) else fld)
    _unknown(entry, _PARAM_FIELDS, ctx, "field")
    _scalar_fields(entry, ("unit", "label", "description", "kind", "option"), ctx)
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
    ctx = where(source, entry.get("__line__"), f"{fld} (group {_show(name)})" if _show(name) else fld)
    _unknown(entry, _GROUP_FIELDS, ctx, "field")
    _scalar_fields(entry, ("label", "description"), ctx)
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
    import pandas as pd

    from .values import format_values_text

    rows = []
    for d in space.dimensions:
        for p in d.parameters:
            rows.append({"group": d.name if isinstance(d, Group) else "", "name": p.name, "label": p.label,
                         "unit": p.unit, "kind": p.kind, "values": format_values_text(p.values),
                         "description": p.description, "option": p.option})
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def fixed_table(space: DesignSpace) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{k: str(getattr(f, k)) for k in FIXED_COLUMNS} for f in space.fixed],
                        columns=list(FIXED_COLUMNS))


def space_from_table(params: pd.DataFrame, constraints: Sequence[str] = (), fixed: pd.DataFrame | None = None,
                     name: str = "space", description: str = "", base: DesignSpace | None = None) -> DesignSpace:
    """Build a space from the editable tables; errors name the table row (1-based) and column.

    Groups keep the label and description they have in *base* (the space the table was made from), and the
    space keeps *base*'s derived quantities (checked again against the edited parameters).
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
    if base is not None and base.derived:
        raw["derived"] = {d.name: d.to_dict() for d in base.derived}
    return space_from_dict(raw, source="the tables")
