"""The search's expressions: a cost (the second objective of a Pareto front) and an objective (the
number a ``min``/``max`` search optimises, e.g. cycles × a die-area expression — performance per
area), both written over the parameters in the constraint language of :mod:`gpudse_core.space.expr`
(parsed and interpreted, never eval). ``gpudse search --cost/--objective`` and the dashboard's Search
page check and build them here; *label* names the field in every message (``--objective`` on the
command line, ``Objective`` on the page)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import GpudseError


def _types(space: Any) -> dict:
    from ..space.expr import NUM, TEXT

    types = {p.name: (NUM if p.kind == "numeric" else TEXT) for p in space.parameters}
    types.update({f.name: (NUM if isinstance(f.value, (int, float)) else TEXT) for f in space.fixed})
    return types


def _columns(space: Any, digits: np.ndarray) -> dict:
    cols = space.columns(digits)
    for f in space.fixed:
        cols.setdefault(f.name, f.value)
    return cols


def objective_function(text: str, space: Any, response: str, label: str = "--objective",
                       cost_label: str = "--cost with --goal pareto") -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A number to optimise computed from the response and the parameters, e.g. ``cycles * (40 + simd
    + 4 * smp)``. Returns ``f(digits, response values) -> values`` (NaN where undefined)."""
    from ..space.expr import NUM, compile_expression

    types = _types(space)
    if response in types:
        raise GpudseError(f"{label}: the response {response!r} has the name of a parameter; rename one of them")
    types[response] = NUM
    expr = compile_expression(text, types, label=label)
    if response not in expr.names:
        raise GpudseError(f"{label} {text!r} does not use the response {response!r}: write it in terms of "
                          f"{response} and the parameters (e.g. '{response} * (40 + simd)'), or use {cost_label}")

    def objective(digits: np.ndarray, values: np.ndarray) -> np.ndarray:
        cols = _columns(space, digits)
        cols[response] = np.asarray(values, dtype=float)
        v, undefined = expr.evaluate_defined(cols)
        v = np.broadcast_to(np.asarray(v, dtype=float), (len(digits),)).copy()
        v[np.broadcast_to(np.asarray(undefined, dtype=bool), (len(digits),))] = np.nan
        return v

    return objective


def cost_function(text: str, space: Any, label: str = "--cost") -> Callable[[np.ndarray], np.ndarray]:
    """A cost computed from the parameters (e.g. ``simd * smp``); ``f(digits) -> costs``, refusing a
    design where it is not a finite number."""
    from ..space.expr import compile_expression

    expr = compile_expression(text, _types(space), label=label)

    def cost(digits: np.ndarray) -> np.ndarray:
        v = np.broadcast_to(np.asarray(expr.evaluate(_columns(space, digits)), dtype=float), (len(digits),)).copy()
        if not np.isfinite(v).all():
            bad = int(np.flatnonzero(~np.isfinite(v))[0])
            raise GpudseError(f"{label} {text!r} is not a finite number at {space._row(digits[bad])}")
        return v

    return cost
