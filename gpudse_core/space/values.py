"""Value-set syntax of design-space files (Lee & Brooks Table 2 notation; docs/design-spaces.md).

A parameter's ordered set of values can be written as

* an explicit list — ``[1, 2, 4]``, ``[gto, lrr]``, or the text ``"4, 8, 16"``;
* a Lee & Brooks range ``"i::j::k"`` — from *i* to *k* in steps of *j* (``"9::3::36"`` is
  9, 12, …, 36); decimal steps are exact (``"0.5::0.25::2"``), computed with fractions;
* powers of two ``{pow2: "1..16"}`` or the text ``"pow2: 1..16"`` — every power of two from the
  first bound to the second, both bounds being values (1, 2, 4, 8, 16), not exponents.

:func:`parse_values` turns any of these into a tuple; :func:`format_values` writes the most compact
equivalent back (``parse_values(format_values(v)) == v``), which is what saved space files contain.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from .. import limits
from ..errors import GpudseError, SpaceError

Value = int | float | str

_NUM_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_INT_RE = re.compile(r"^[+-]?\d+$")
_RANGE_RE = re.compile(r"^\s*([^:]+?)\s*::\s*([^:]+?)\s*::\s*([^:]+?)\s*$")
_POW2_RE = re.compile(r"^\s*pow2\s*:\s*(.+?)\s*\.\.\s*(.+?)\s*$", re.IGNORECASE)
INT_LIMIT = (1 << 63) - 1  # whole-number values are stored as int64


def to_number(x: Any) -> int | float | None:
    """Return *x* as an int or float if it is (or spells) a number, else None. Bools are not numbers.

    A whole-number numeral of up to ``limits.number_digits`` digits is read exactly (the caller
    refuses one beyond int64); a longer one becomes a float (``inf`` beyond float64's range), which
    :class:`~gpudse_core.space.design.Parameter` refuses as too large; text is never turned into a
    huge integer (Python refuses to convert more than 4300 digits, and the work is quadratic).
    """
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return None if math.isnan(x) else x
    if isinstance(x, str):
        s = x.strip()
        if not _NUM_RE.match(s):
            return None
        if _INT_RE.match(s) and len(s) <= min(limits.current().number_digits, 4000) + 1:
            return int(s)  # exact: two 41-digit numerals are never one float (the caller checks int64)
        f = float(s)
        if f == 0.0 and underflows(s):
            raise SpaceError(f"{s!r} is too small for a floating-point number (below about 5e-324) and would "
                             f"silently become 0; write 0 if you mean it")
        return f
    return None


def underflows(numeral: str) -> bool:
    """True when a decimal numeral with a nonzero digit in its mantissa reads as 0.0 (1e-400)."""
    mantissa = re.split(r"[eE]", numeral.strip(), maxsplit=1)[0]
    return any(c in "123456789" for c in mantissa)


def magnitude_problem(v: int | float) -> str | None:
    """Why a numeric value cannot be a parameter value (infinite, NaN, beyond int64), or None."""
    if isinstance(v, float):
        if math.isnan(v):
            return "is not a number"
        if math.isinf(v):
            return "is infinite or beyond the range of floating-point numbers (about ±1.8e308)"
    elif abs(v) > INT_LIMIT:
        return f"is beyond the range of whole-number values (±{INT_LIMIT:,}); write it as a decimal (e.g. 1e19)"
    return None


def _check_count(count: int, what: str, ctx: str) -> None:
    shown = limits.fmt_amount(count)
    limits.check("values_per_parameter", count, f"{ctx}{what} has {shown} values",
                 "a parameter with that many values is almost certainly a typo in the step or the bounds")


def _exact(text: str, what: str, ctx: str) -> Fraction:
    n = to_number(text)
    if n is None:
        raise SpaceError(f"{ctx}{what} {text!r} is not a number; write ranges as i::j::k with numbers, e.g. 9::3::36")
    bad = magnitude_problem(float(n) if isinstance(n, int) and abs(n) > INT_LIMIT else n)
    if bad:
        raise SpaceError(f"{ctx}{what} {text!r} {bad}")
    return Fraction(str(n))


def _as_value(f: Fraction) -> int | float:
    return int(f) if f.denominator == 1 else float(f)


def parse_range(text: str, ctx: str = "") -> tuple[int | float, ...]:
    """Parse ``i::j::k`` (from i to k in steps of j, both ends included when k is on the grid).

    The number of values is computed exactly and checked against ``limits.values_per_parameter``
    before any value is made.
    """
    m = _RANGE_RE.match(text)
    if not m:
        raise SpaceError(f"{ctx}range {text!r} is not of the form i::j::k (from i to k in steps of j)")
    start, step, stop = (_exact(g, w, ctx) for g, w in zip(m.groups(), ("start", "step", "end")))
    if step <= 0:
        raise SpaceError(f"{ctx}range {text!r} has step {_as_value(step)}; the step must be positive")
    if stop < start:
        raise SpaceError(f"{ctx}range {text!r} ends ({_as_value(stop)}) before it starts ({_as_value(start)})")
    count = (stop - start) // step + 1
    _check_count(count, f"range {text!r}", ctx)
    if start.denominator == 1 and step.denominator == 1:
        a, b = int(start), int(step)
        return tuple(range(a, a + b * count, b))
    # over a common denominator: (a + i b) / d is the correctly rounded float of start + i × step
    d = math.lcm(start.denominator, step.denominator)
    a, b = start.numerator * (d // start.denominator), step.numerator * (d // step.denominator)
    return tuple((a + i * b) / d for i in range(count))


def _log2(f: Fraction) -> int:
    return f.numerator.bit_length() - 1 if f.denominator == 1 else 1 - f.denominator.bit_length()


def parse_pow2(lo: Any, hi: Any, ctx: str = "") -> tuple[int | float, ...]:
    """Powers of two from *lo* to *hi* inclusive; both bounds must themselves be powers of two.

    The count (``log2(hi / lo) + 1``) is checked against ``limits.values_per_parameter`` and the
    bounds against the range of numbers before anything is expanded.
    """
    bounds = []
    for b in (lo, hi):
        n = to_number(b.strip() if isinstance(b, str) else b)
        if n is None:
            raise SpaceError(f"{ctx}pow2 bound {b!r} is not a number; write e.g. pow2: 1..16 for 1, 2, 4, 8, 16")
        bad = magnitude_problem(n)
        if bad:
            raise SpaceError(f"{ctx}pow2 bound {str(b)[:40]!r} {bad}")
        f = Fraction(n)  # exact: a float bound is its binary value (2.0**1023 is a power of two)
        if f <= 0 or not _is_pow2(f):
            raise SpaceError(
                f"{ctx}pow2 bound {b!r} is not a power of two; write e.g. pow2: 1..16 for 1, 2, 4, 8, 16"
            )
        bounds.append(f)
    lo_f, hi_f = bounds
    if hi_f < lo_f:
        raise SpaceError(f"{ctx}pow2 range {lo}..{hi} ends before it starts")
    _check_count(_log2(hi_f) - _log2(lo_f) + 1, f"pow2 range {lo}..{hi}", ctx)
    out, v = [], lo_f
    while v <= hi_f:
        out.append(v)
        v *= 2
    conv = int if lo_f.denominator == 1 else float
    return tuple(conv(f) for f in out)


def _is_pow2(f: Fraction) -> bool:
    n, d = f.numerator, f.denominator
    return (d == 1 and n & (n - 1) == 0) or (n == 1 and d & (d - 1) == 0)


def parse_values(spec: Any, ctx: str = "") -> tuple[Value, ...]:
    """Parse a value-set spec (list, ``i::j::k`` text, ``pow2`` mapping or text, comma list text).

    *ctx* is a location prefix for error messages (see :func:`gpudse_core.errors.where`).
    Strings that spell numbers become numbers; type consistency is checked by the parameter.
    """
    if isinstance(spec, dict):
        keys = set(spec) - {"__line__"}
        if keys == {"pow2"}:
            v = spec["pow2"]
            if isinstance(v, (list, tuple)) and len(v) == 2:
                return parse_pow2(v[0], v[1], ctx)
            if isinstance(v, str) and ".." in v:
                lo, hi = v.split("..", 1)
                return parse_pow2(lo, hi, ctx)
            raise SpaceError(f"{ctx}pow2 needs a range such as pow2: 1..16 (got {v!r})")
        if keys == {"range"}:
            return parse_range(str(spec["range"]), ctx)
        raise SpaceError(
            f"{ctx}unknown value syntax {sorted(keys)}; use a list, 'i::j::k', or pow2: a..b"
        )
    if isinstance(spec, str):
        text = spec.strip()
        if not text:
            return ()
        m = _POW2_RE.match(text)
        if m:
            return parse_pow2(m.group(1), m.group(2), ctx)
        if "::" in text:
            return parse_range(text, ctx)
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        _check_count(text.count(",") + 1, "the value list", ctx)
        items = [t.strip() for t in text.split(",")]
        if any(t == "" for t in items):
            raise SpaceError(f"{ctx}value list {spec!r} has an empty item; separate values with single commas")
        return tuple(_from_text(t) for t in items)
    if isinstance(spec, (list, tuple)):
        _check_count(len(spec), "the value list", ctx)
        out = []
        for i, item in enumerate(spec):
            if isinstance(item, (list, dict, tuple)) or item is None:
                raise SpaceError(f"{ctx}value #{i + 1} ({item!r}) must be a single number or word")
            out.append(_from_text(item) if isinstance(item, str) else item)
        return tuple(out)
    if spec is None:
        return ()
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return (spec,)
    raise SpaceError(f"{ctx}values must be a list, 'i::j::k' or pow2: a..b (got {type(spec).__name__})")


def _from_text(t: Any) -> Value:
    if isinstance(t, str):
        s = t.strip().strip("'\"")
        n = to_number(s)
        return n if n is not None else s
    return t


def format_values(values: tuple[Value, ...] | list[Value]) -> Any:
    """The most compact spec that :func:`parse_values` maps back to exactly *values* (checked by
    parsing it back; linear in the number of values)."""
    vals = list(values)
    if len(vals) < 3 or any(isinstance(v, (str, bool)) or to_number(v) is None for v in vals):
        return vals
    candidates = []
    if all(v > 0 for v in vals) and all(b == 2 * a for a, b in zip(vals, vals[1:])) and _is_pow2(Fraction(vals[0])):
        candidates.append(({"pow2": f"{vals[0]}..{vals[-1]}"}, lambda: parse_pow2(vals[0], vals[-1])))
    first, step = Fraction(str(vals[0])), Fraction(str(vals[1])) - Fraction(str(vals[0]))
    if step > 0:
        spec = f"{_fmt(first)}::{_fmt(step)}::{_fmt(Fraction(str(vals[-1])))}"
        candidates.append((spec, lambda: parse_range(spec)))
    for spec, back in candidates:
        try:
            again = back()
        except GpudseError:
            continue
        if again == tuple(vals) and all(type(a) is type(b) for a, b in zip(again, vals)):
            return spec
    return vals


def _fmt(f: Fraction) -> str:
    return str(int(f)) if f.denominator == 1 else repr(float(f))


def format_values_text(values: tuple[Value, ...] | list[Value]) -> str:
    """One-line text form used in tables and the dashboard's editor (``"pow2: 1..16"``, ``"9::3::36"``,
    ``"4, 8, 16"``)."""
    spec = format_values(values)
    if isinstance(spec, dict):
        return f"pow2: {spec['pow2']}"
    if isinstance(spec, str):
        return spec
    return ", ".join(str(v) for v in spec)
