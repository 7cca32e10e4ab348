"""How each parameter enters a model: its modelling scale and whether it is categorical.

GPU tuning parameters are mostly powers of two (block counts, cache sizes, SIMD widths), multiples
of 8 or 16, small integer tiles and 0/1 flags. Their effects are usually smooth in log2(x) for the
first kind, so the robust default (``scale="auto"``) models a parameter on the log2 scale when

* the space file says ``scale: log2`` (or ``linear``), passed in as a mapping, or else
* its distinct values are all positive powers of two (at least three of them), or a geometric
  series (at least four positive values with one common ratio);

and otherwise on the linear scale. A numeric parameter with at most ``categorical_levels`` distinct
values (default 3: a 0/1 flag, a two- or three-way setting) gets a categorical term with numeric
levels: as many degrees of freedom as it has levels, whatever the scale. ``scale="linear"`` and
``categorical_levels=0`` give the paper's reading (Stargazer §5.3: splines on the raw values).

Power-of-two steps (``powers_of_two=True``, the robust default): a whole-number parameter on the
linear scale whose values mix powers of two with other values (at least two distinct of each, e.g. a
block width of 16, 32, 48, … 256) gets one more basis column, ``pow2(x)``, 1 where the value is a
power of two: hardware rewards such sizes in steps (warps and wavefronts of 32 or 64 threads, memory
transactions, banks) that no smooth curve follows (on a real AMD GPU a 2D convolution runs about 3×
faster with block widths 16, 32, 64, 128, 256 than with 48, 80, 96, …).

Every decision is returned with a short note (``blk: log2 scale (powers of two in the data)``) that
the fit keeps in ``StepwiseModel.notes`` and the CLI prints, so an inferred encoding is never silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..choices import SCALE_MODES, SCALES
from ..errors import GpudseError


@dataclass(frozen=True)
class Encoding:
    """The encoding chosen for one parameter."""

    categorical: bool
    scale: str  # "linear" or "log2"
    note: str  # why, for the fit summary ("" when there is nothing to say)
    pow2: bool = False  # a power-of-two indicator column (see the module docstring)


def mixes_powers_of_two(values: Any) -> bool:
    """Whole positive numbers of which at least two distinct ones are powers of two and two are not."""
    try:
        x = np.unique(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        return False
    if x.size < 4 or not np.all(np.isfinite(x)) or x[0] <= 0 or np.any(x != np.round(x)):
        return False
    e = np.log2(x)
    n2 = int(np.sum(np.abs(e - np.round(e)) < 1e-9))
    return n2 >= 2 and x.size - n2 >= 2


def infer_scale(values: Any) -> tuple[str, str]:
    """(scale, reason) for a numeric parameter from its (distinct) values."""
    try:
        x = np.unique(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        return "linear", ""
    x = x[np.isfinite(x)]
    if x.size < 3 or x[0] <= 0:
        return "linear", ""
    e = np.log2(x)
    if np.all(np.abs(e - np.round(e)) < 1e-9):
        return "log2", "powers of two"
    if x.size >= 4:
        ratios = x[1:] / x[:-1]
        if np.all(np.abs(ratios / ratios[0] - 1) < 1e-6):
            return "log2", f"a geometric series (ratio {ratios[0]:.4g})"
    return "linear", ""


def scales_from_space(space: Any) -> tuple[dict[str, str], list[str]]:
    """Scales of a design space's numeric parameters: the file's ``scale:`` key where given, else
    inferred from the declared value lists (the whole set, not a sample). Returns (scales, notes)."""
    scales: dict[str, str] = {}
    notes: list[str] = []
    for p in space.parameters:
        if p.kind == "categorical":
            continue
        declared = getattr(p, "scale", "") or ""
        if declared:
            scales[p.name] = declared
            notes.append(f"{p.name}: {declared} scale (space file)")
        else:
            scale, why = infer_scale(p.array)
            scales[p.name] = scale
            if scale != "linear":
                notes.append(f"{p.name}: {scale} scale ({why} in the space file's values)")
    return scales, notes


def check_scale_setting(scale: Any) -> None:
    if isinstance(scale, str):
        if scale not in SCALE_MODES + SCALES:
            raise GpudseError(f"unknown scale {scale!r}; choose {', '.join(SCALE_MODES + SCALES)} or a mapping "
                              f"parameter -> scale")
        return
    if not isinstance(scale, Mapping):
        raise GpudseError(f"scale must be one of {', '.join(SCALE_MODES)} or a mapping parameter -> scale "
                          f"(got {scale!r})")
    for k, v in scale.items():
        ok = SCALE_MODES + SCALES if k == "__default__" else SCALES + ("auto",)
        if v not in ok:
            raise GpudseError(f"scale of {k!r}: {v!r} is not one of {', '.join(ok)}")


def plan(columns: Mapping[str, Any], scale: str | Mapping[str, str] = "auto", categorical: Sequence[str] = (),
         categorical_levels: int = 3, powers_of_two: bool = False) -> dict[str, Encoding]:
    """The encoding of every parameter in *columns* (name → training values)."""
    check_scale_setting(scale)
    per = dict(scale) if isinstance(scale, Mapping) else {}
    default = per.pop("__default__", "auto") if per else scale
    out: dict[str, Encoding] = {}
    for name, values in columns.items():
        arr = np.asarray(values)
        text = arr.dtype.kind in "OUSb"
        if text and arr.dtype.kind != "b":  # numbers held as objects or text are still numbers
            try:
                arr = arr.astype(float)
                text = False
            except (TypeError, ValueError):
                pass
        if text:
            out[name] = Encoding(True, "linear", "")
            continue
        mode = per.get(name, default)
        given = name in per and mode != "auto"
        if mode == "auto":
            sc, why = infer_scale(arr)
            note = f"{name}: {sc} scale ({why} in the data)" if sc != "linear" else ""
        else:
            sc, note = mode, (f"{name}: {mode} scale (set)" if given else "")
        if sc == "log2" and not np.all(arr > 0):
            raise GpudseError(f"parameter {name!r}: a log2 scale needs positive values; use scale linear for it")
        distinct = np.unique(arr).size
        if name in categorical:
            out[name] = Encoding(True, sc, f"{name}: categorical (set)")
        elif distinct <= categorical_levels:
            flag = distinct == 2 and set(np.unique(arr).tolist()) == {0.0, 1.0}
            what = "a 0/1 flag" if flag else f"{distinct} distinct values"
            also = f"; its {sc} scale is used for its curves" if given else ""  # a set scale is never silently dropped
            out[name] = Encoding(True, sc, f"{name}: categorical ({what}{also})")
        elif powers_of_two and sc == "linear" and mixes_powers_of_two(arr):
            step = f"{name}: a pow2({name}) column (1 at powers of two: the data mix them with other values)"
            out[name] = Encoding(False, sc, f"{note}; {step}" if note else step, pow2=True)
        else:
            out[name] = Encoding(False, sc, note)
    return out
