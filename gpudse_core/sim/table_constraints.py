"""What a measured table says about the space inferred from it: its coverage and the constraints it shows.

:func:`~gpudse_core.sim.lookup.infer_space` gives each parameter the table's distinct values, and the space
is their whole product. A measured tuning table rarely holds the whole product: the FAIR Benchmark Hub's
2D convolution table holds 4,362 of 10,240 combinations, because a CUDA block has at most 1,024 threads
and padding is only used with shared memory. Explore over the bare product then recommends designs the
table never measured (1,280-thread blocks that cannot launch).

:func:`table_coverage` counts the combinations the table holds; :func:`suggest_constraints` proposes the
constraints it can see, each a :class:`Suggestion` that **no row violates** (checked by the space's own
constraint compiler on every row) with the number of the product's combinations it excludes:

* a **product bound** ``a * b <= M`` of two count parameters (numbers, all at least 1) when the largest
  product over the rows, ``M``, is below the product of their largest values;
* a **pair never measured** ``not (a == x and b in (…))`` when ``a`` has two values (a flag) and the table
  never holds ``a == x`` with those values of ``b`` (after the product bounds).

They are suggestions for a person to read: :func:`commented_yaml` writes them as comments under the
space's YAML, never applied (a table may lack a combination by chance, or because it was not run).
"""

from __future__ import annotations

import itertools
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import GpudseError

MAX_SUGGESTIONS = 12
MAX_LISTED = 8  # values of b listed in one "pair never measured" suggestion
PAIR_WORK = 200_000_000  # rows × parameters² read when looking for pairs never measured


@dataclass(frozen=True)
class Suggestion:
    expr: str  # in the constraint language (docs/design-spaces.md)
    excludes: int  # combinations of the product it rules out
    why: str


def table_coverage(frame: pd.DataFrame, space: Any) -> tuple[int, int]:
    """(distinct combinations of the space's parameters the table holds, the space's size)."""
    held = len(frame[list(space.parameter_names)].drop_duplicates())
    return held, int(space.size)


def _with(space: Any, exprs: list[str]) -> Any:
    from ..space.design import space_from_dict

    d = space.to_dict()
    d["constraints"] = [*d.get("constraints", []), *exprs]
    return space_from_dict(d, source="suggested constraints")


def _holds_on_every_row(space: Any, expr: str, digits: np.ndarray) -> bool:
    try:
        return bool(_with(space, [expr]).feasible_mask(digits).all())
    except GpudseError:  # a name the constraint language cannot use: no suggestion, never a traceback
        return False


def _excluded(space: Any, exprs: list[str]) -> int | None:
    feasible = _with(space, exprs).feasible_size
    return None if feasible is None else int(space.size) - int(feasible)


def _literal(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _product_bounds(frame: pd.DataFrame, space: Any) -> list[tuple[str, str]]:
    counts = [p for p in space.parameters if p.kind == "numeric" and p.size > 1
              and all(float(v) >= 1 for v in p.values)]
    out = []
    for a, b in itertools.combinations(counts, 2):
        most = (pd.to_numeric(frame[a.name]).astype(float) * pd.to_numeric(frame[b.name]).astype(float)).max()
        if most < float(max(a.values)) * float(max(b.values)):
            bound = int(most) if float(most).is_integer() else float(most)
            out.append((f"{a.name} * {b.name} <= {bound}",
                        f"no row has {a.name} × {b.name} above {bound:,}"))
    return out


def _pairs_never_measured(frame: pd.DataFrame, space: Any, bounded: Any) -> list[tuple[str, str]]:
    """``not (a == x and b in (…))`` for a two-valued *a* and the values of *b* the table never holds with
    ``a == x`` although *bounded* (the space with the product bounds) admits them."""
    out: list[tuple[str, str]] = []
    if len(frame) * len(space.parameters) ** 2 > PAIR_WORK:
        return out  # a huge table of many parameters: the coverage line still says what is missing
    for a in space.parameters:
        if a.size != 2:
            continue
        for b in space.parameters:
            if b.name == a.name:
                continue
            seen = set(map(tuple, frame[[a.name, b.name]].drop_duplicates().itertuples(index=False)))
            for x in a.values:
                if len({ya for xa, ya in seen if xa == x}) == 0:
                    continue  # a value never measured at all: the parameter's values say so already
                never = [y for y in b.values if (x, y) not in seen]
                if not never or len(never) == b.size or len(never) > MAX_LISTED:
                    continue
                if b.size == 2 and a.name > b.name:
                    continue  # two flags: the pair once, from the first name
                if not _admitted(bounded, {a.name: x}, b.name, never):
                    continue
                cond = f"{b.name} == {_literal(never[0])}" if len(never) == 1 else \
                    f"{b.name} in ({', '.join(map(_literal, never))})"
                out.append((f"not ({a.name} == {_literal(x)} and {cond})",
                            f"no row has {a.name} = {x} with {b.name} = {', '.join(map(str, never))}"))
    return out


def _admitted(bounded: Any, fixed: dict, name: str, values: list) -> bool:
    """Whether *bounded* admits some design with *fixed* and *name* in *values* (a product bound may
    already rule the pair out: then it needs no constraint of its own)."""
    exprs = [f"{k} == {_literal(v)}" for k, v in fixed.items()]
    exprs.append(f"{name} in ({', '.join(map(_literal, values))},)")
    try:
        feasible = _with(bounded, exprs).feasible_size
    except GpudseError:
        return False
    return feasible is None or feasible > 0


def suggest_constraints(frame: pd.DataFrame, space: Any) -> list[Suggestion]:
    """Constraints no row of *frame* violates that rule out combinations of *space*'s product the table
    lacks (see the module docstring), most excluding first; at most :data:`MAX_SUGGESTIONS`."""
    from .lookup import _digit_keys

    digits = _digit_keys(space, frame, "table")
    products = [(e, w) for e, w in _product_bounds(frame, space) if _holds_on_every_row(space, e, digits)]
    bounded = _with(space, [e for e, _ in products]) if products else space
    pairs = [(e, w) for e, w in _pairs_never_measured(frame, space, bounded)
             if _holds_on_every_row(space, e, digits)]
    out = []
    for expr, why in products + pairs:
        n = _excluded(space, [expr])
        if n:
            out.append(Suggestion(expr, n, why))
    out.sort(key=lambda s: -s.excludes)
    return out[:MAX_SUGGESTIONS]


def coverage_note(held: int, size: int) -> str:
    """One sentence: how much of the product the table holds, and what that means for explore."""
    if held >= size:
        return f"the table holds all {size:,} combinations of these values"
    return (f"the table holds {held:,} of the {size:,} combinations of these values; explore may recommend "
            f"designs it never measured: add constraints")


def commented_yaml(suggestions: list[Suggestion], held: int, size: int, together: int | None) -> str:
    """Comment lines to put under the written space: the coverage and the suggestions, none applied."""
    lines = [f"# {line}" for line in textwrap.wrap(coverage_note(held, size) + ".", 100)]
    if suggestions:
        lines += ["# Constraints no row of the table violates (suggestions, NOT applied: keep the ones that are",
                  "# true of the kernel or the hardware by removing the '# ' of 'constraints:' and of each line):",
                  "# constraints:"]
        lines += [f"#   - {s.expr!r}  # excludes {s.excludes:,}: {s.why}" for s in suggestions]
        if together is not None:
            lines.append(f"# All of them together leave {together:,} combinations (the table holds {held:,}).")
    return "\n".join(lines) + "\n"


def feasible_with(space: Any, suggestions: list[Suggestion]) -> int | None:
    """The feasible size of *space* under every suggestion (None when not exact)."""
    if not suggestions:
        return int(space.size)
    n = _with(space, [s.expr for s in suggestions]).feasible_size
    return None if n is None else int(n)
