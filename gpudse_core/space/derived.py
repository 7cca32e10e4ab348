"""Derived quantities: named arithmetic over a design space's parameters (docs/design-spaces.md).

A design-space file may declare quantities the physics depends on but no single parameter is::

    derived:
      total_cus: cu_per_sa * sa                       # MGPUSim: compute units in all
      l2_per_bank_kb: {expr: l2_kb / mem_banks, unit: KB, label: L2 per bank}

Each is an expression of :mod:`.expr` (parsed and interpreted, never ``eval``) over the parameters and
fixed values that gives a number. A derived quantity is **never a parameter**: sampling, the exact scan
and Explore enumerate only the parameters, and a derived column is computed from them wherever a
table of points meets a model (the fit adds it to the training rows; every model kind keeps the
expressions and computes the column on the points it predicts, :mod:`gpudse_core.model.derived`).
So every model kind reads it as a predictor — a stepwise term over ``total_cus`` (Stargazer §5.2
Algorithm 1 over one more candidate), a forest's splits on it — and traces, equations and response
curves name it.

Why: on MGPUSim a kernel's run time follows the total CU count (CUs per shader array × shader
arrays): flat where the work-groups fill the GPU, slower below. Neither factor explains it alone, so
a stepwise search over the parameters may never reach their interaction; one derived column is a
main effect it finds at once.

Validated at load (:func:`check_derived`): a usable name that is not a parameter's, a group's, a fixed
value's or another derived quantity's; an expression that parses, names only parameters and fixed
values and gives a number; at most ``limits.derived`` of them. A derived quantity that is undefined at
a point (a division by zero, the log of zero) makes a fit on that point fail with the row named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .. import limits
from ..errors import ExpressionError, SpaceError
from .expr import NUM, TEXT, Expression, compile_expression

DERIVED_FIELDS = {"expr", "unit", "label", "description"}


@dataclass(frozen=True)
class Derived:
    """One derived quantity: a name and its expression over the parameters."""

    name: str
    expr: str
    unit: str = ""
    label: str = ""
    description: str = ""

    @property
    def display(self) -> str:
        return self.label or self.name

    def to_dict(self) -> Any:
        extra = {k: getattr(self, k) for k in ("unit", "label", "description") if getattr(self, k)}
        return {"expr": self.expr, **extra} if extra else self.expr


def parse_derived(raw: Any, ctx: str) -> tuple[Derived, ...]:
    """The ``derived`` mapping of a space file (name → expression, or name → {expr, unit, label,
    description}) as :class:`Derived` entries; the names and expressions are checked by :func:`check_derived`."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpaceError(f"{ctx}'derived' must be a mapping of names to expressions, e.g. "
                         f"derived: {{total_cus: 'cu_per_sa * sa'}} (got a {type(raw).__name__})")
    entries = {k: v for k, v in raw.items() if k != "__line__"}
    limits.check("derived", len(entries), f"{ctx}{len(entries):,} derived quantities",
                 "declare the few the physics needs")
    out = []
    for name, entry in entries.items():
        here = f"{ctx}derived {str(name)[:40]!r}: "
        if isinstance(entry, dict):
            unknown = sorted(str(k) for k in entry if k != "__line__" and k not in DERIVED_FIELDS)
            if unknown:
                raise SpaceError(f"{here}unknown field {unknown[0][:40]!r}; allowed: "
                                 f"{', '.join(sorted(DERIVED_FIELDS))}")
            for key in ("unit", "label", "description"):
                if entry.get(key) is not None and not isinstance(entry[key], (str, int, float)):
                    raise SpaceError(f"{here}'{key}' must be one word, number or sentence")
            text = entry.get("expr")
            meta = {k: str(entry.get(k, "")) for k in ("unit", "label", "description")}
        else:
            text, meta = entry, {}
        if not isinstance(text, str):
            raise SpaceError(f"{here}the expression must be text such as 'cu_per_sa * sa' (got a "
                             f"{type(text).__name__})")
        out.append(Derived(name=name, expr=text, **meta))
    return tuple(out)


def check_derived(derived: tuple[Derived, ...], types: Mapping[str, str], taken: Mapping[str, str], ctx: str,
                  check_name: Any) -> dict[str, Expression]:
    """Compile every derived quantity over *types* (parameter and fixed names → number or text); a name
    must pass *check_name* and be none of *taken* (name → what holds it) nor another derived quantity's.
    Returns name → compiled expression."""
    out: dict[str, Expression] = {}
    for d in derived:
        check_name(d.name, ctx, "derived name")
        if d.name in taken or d.name in out:
            what = taken.get(d.name, "derived quantity")
            raise SpaceError(f"{ctx}derived {d.name!r}: the name is already a {what}; a derived quantity needs a "
                             f"name of its own (e.g. {d.name + '_total'!r})")
        try:
            out[d.name] = compile_expression(d.expr, types, f"{ctx}derived {d.name!r}", quantity=True)
        except ExpressionError as e:
            raise SpaceError(str(e)) from None
    return out


def evaluate(exprs: Mapping[str, Expression], columns: Mapping[str, Any], n: int,
             where: str = "") -> dict[str, np.ndarray]:
    """Each derived quantity's column (float64, length *n*) over *columns* (name → array or scalar).
    A value undefined at some rows (division by zero, log of zero, NaN) is an :class:`ExpressionError`
    naming the quantity and the first rows (1-based)."""
    out = {}
    for name, e in exprs.items():
        value, bad = e.evaluate_defined(columns)
        v = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy()
        bad = np.broadcast_to(np.asarray(bad, dtype=bool), (n,)) | ~np.isfinite(v)
        if bad.any():
            rows = ", ".join(str(i + 1) for i in np.flatnonzero(bad)[:5])
            raise ExpressionError(f"{where}derived {name!r} ({e.text}) is undefined or infinite at row(s) {rows}; "
                                  f"fix the expression so it has a finite value at every design point")
        out[name] = v
    return out


def compile_over_frame(mapping: Mapping[str, str], columns: Mapping[str, Any], label: str) -> dict[str, Expression]:
    """Compile name → expression text against the columns of a table of points (text columns are text,
    everything else a number): how a model evaluates the derived quantities it was fitted with."""
    types = {str(c): (TEXT if getattr(v, "dtype", None) is not None and v.dtype == object else NUM)
             for c, v in columns.items()}
    return {name: compile_expression(text, types, f"{label}derived {name!r}", quantity=True)
            for name, text in mapping.items()}
