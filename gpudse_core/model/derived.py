"""A model's derived predictors: the design space's derived quantities a model was fitted with.

A design-space file's derived quantities (:mod:`gpudse_core.space.derived`, e.g. ``total_cus = cu_per_sa * sa``)
are predictors of every model kind. The fit adds their columns to the training rows (:func:`add_columns`) and
the fitted model keeps the expressions (``model.derived``: name → text, saved in its file); whenever it
predicts, the columns a table of points lacks are computed from its parameter columns by the same safe
interpreter (never ``eval``). So a model's ``parameters`` name the derived quantities (traces, equations,
response curves show ``total_cus``), while the points given to it — Explore's scan, a search's candidates, a
CSV — hold only real parameters: :func:`inputs` says which.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from ..errors import ExpressionError, GpudseError
from ..space.derived import compile_over_frame, evaluate


def derived_of(model: Any) -> dict[str, str]:
    """The model's derived quantities (name → expression), empty for a model without any."""
    d = getattr(model, "derived", None)
    return dict(d) if isinstance(d, Mapping) else {}


def add_columns(frame: pd.DataFrame, derived: Mapping[str, str], label: str = "") -> pd.DataFrame:
    """*frame* with the columns of *derived* it lacks computed from its other columns (a copy when any is
    added). An unknown name or an undefined value is a :class:`GpudseError` naming the quantity."""
    todo = {k: v for k, v in derived.items() if k not in frame.columns}
    if not todo:
        return frame
    cols = {c: frame[c].to_numpy() for c in frame.columns if isinstance(c, str)}
    try:
        exprs = compile_over_frame(todo, cols, label)
        values = evaluate(exprs, cols, len(frame), label)
    except ExpressionError as e:
        raise GpudseError(str(e)) from None
    out = frame.copy()
    for k, v in values.items():
        out[k] = v
    return out


def inputs(model: Any, parameters: Sequence[str] | None = None) -> list[str]:
    """The columns a table of points must hold for *model*: its parameters that are not derived, then
    the parameters its derived quantities read (in order of first appearance)."""
    params = list(model.parameters if parameters is None else parameters)
    derived = derived_of(model)
    if not derived:
        return params
    out = [p for p in params if p not in derived]
    for name in params:
        if name in derived:
            for n in sorted(compile_over_frame({name: derived[name]}, _any_numbers(derived[name]), "")[name].names):
                if n not in out and n not in derived:
                    out.append(n)
    return out


def _any_numbers(text: str) -> dict[str, Any]:
    """Every identifier in *text* typed as a number (to read which names an expression uses)."""
    import re

    import numpy as np

    return {n: np.zeros(0) for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}


def check_saved(raw: Any, parameters: Sequence[str], source: str) -> dict[str, str]:
    """A model file's ``derived`` entry checked: a mapping of the model's own parameter names to expressions
    that parse (the names they read are checked when the model predicts)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise GpudseError(f"{source}: 'derived' must map names to expression texts")
    stray = [k for k in raw if k not in parameters]
    if stray:
        raise GpudseError(f"{source}: derived {stray[0]!r} is not one of the model's parameters")
    for name, text in raw.items():
        try:
            compile_over_frame({name: text}, _any_numbers(text), f"{source}: ")
        except ExpressionError as e:
            raise GpudseError(str(e)) from None
    return dict(raw)
