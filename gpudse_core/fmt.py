"""THE number formatter of gpudse: pages, the command line and the HTML report all show numbers through it
 ("one number formatter … thousands separators, SI prefixes, units from the space, sensible
significant digits").

Rules (the tests in ``tests/test_fmt.py`` hold them):

* **Missing** values (None, NaN, pandas' NA) are shown as ``–`` (an en dash), with the reason in brackets
  when the caller knows it (``fmt_number(nan, reason="not estimable")`` → ``– (not estimable)``).
  Infinities are ``∞`` and ``-∞``. The text "NaN" or "inf" is never produced.
* **Magnitudes below a million** are written out with thousands separators and ``sig`` significant digits,
  never dropping digits of the integer part: ``210,512 cycles``, ``72,291``, ``12.35``, ``0.01235``.
  Trailing zeros after the decimal point are dropped (``2.5``, not ``2.500``).
* **From a million up** an SI prefix carries the magnitude: ``21.05 M cycles``, ``1.5 G``, up to E (10¹⁸);
  every digit of a seven-digit cycle count is rarely meaningful to a reader, the magnitude is.
* **Very small and very large** numbers (below 0.001, or 10²¹ and above) use scientific notation with a
  real exponent: ``1.234 × 10⁻⁵``. Never ``1.234e-05``.
* **Counting units** (cycles, points, designs, rows, pixels, threads, …): values of 10 and more are whole
  numbers (``72,291 cycles``, never ``72,290.5432 cycles``).
* **Exact counts** (:func:`fmt_count`): every digit with separators up to 10¹⁵ (``933,120 designs``,
  ``937,500,000``), scientific above (a 10³⁰-point space is ``1 × 10³⁰``).
* **Percentages** (:func:`fmt_percent`): one decimal from 1 % up (``2.3 %``, ``42.9 %``), none from 100 %
  (``1,250 %``), two significant digits below 1 % (``0.032 %``); a space before the sign.
* **Fit statistics**: R² and adjusted R² with four decimals (``0.9634``, :func:`fmt_r2`); p-values with
  three decimals and ``< 0.001`` below that (:func:`fmt_pvalue`).
* **Units** come from the space (``Parameter.unit``, see :func:`space_units`) or are given, separated by a
  space; ``%`` goes through :func:`fmt_percent`. A count of one takes the singular (``1 point``).
* Negative numbers use the ASCII minus so that copied numbers paste into a spreadsheet.

:func:`format_table` turns a DataFrame into display strings by these rules (units in the column headers);
:func:`column_formats` gives the matching format strings for ``st.column_config.NumberColumn`` where a
page keeps numbers sortable. This module imports nothing heavy (the CLI uses it at start-up).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Mapping

MISSING = "–"
SI_PREFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"))
SI_FROM = 1e6  # below this, digits with separators; from it, an SI prefix
SCI_BELOW = 1e-3  # below this (and from 10**21) scientific notation
COUNT_UNITS = frozenset({
    "cycle", "cycles", "point", "points", "design", "designs", "row", "rows", "pixel", "pixels", "px", "thread",
    "threads", "warp", "warps", "block", "blocks", "instruction", "instructions", "insts", "run", "runs",
    "sample", "samples", "count", "entries", "PEs",
})
PVALUE_COLUMNS = frozenset({"p", "P", "p_value", "pvalue", "p-value", "Pr(>F)", "Pr(>|t|)"})
# test statistics: plain digits, scientific when huge (an SI prefix on an F ratio, "187.4 E", reads as a unit)
STATISTIC_COLUMNS = frozenset({"F", "t", "z", "Chi-Square", "chi2", "F value", "t value"})
R2_COLUMNS = frozenset({"r2", "R2", "R²", "adj_r2", "adjr2", "adjusted R²", "adj R²", "rho2", "ρ²"})
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _as_float(x: Any) -> float | None:
    """A real number as float, or None when missing (None, NaN, pandas NA/NaT) or not a number."""
    if x is None or isinstance(x, (str, bytes)):
        return None
    if isinstance(x, bool):
        return float(x)
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(v) else v


def _is_missing(x: Any) -> bool:
    """None, NaN, pandas' NA or NaT (without importing pandas)."""
    if x is None:
        return True
    if isinstance(x, str):
        return False
    try:
        return bool(x != x)
    except (TypeError, ValueError):  # pd.NA refuses truth tests
        return True


def missing(reason: str | None = None) -> str:
    """The mark for a value that is not there: ``–`` or ``– (reason)``."""
    return f"{MISSING} ({reason})" if reason else MISSING


def _group(digits: str) -> str:
    """Thousands separators in the integer part of a plain decimal string."""
    neg = digits.startswith("-")
    body = digits[1:] if neg else digits
    whole, dot, frac = body.partition(".")
    whole = f"{int(whole):,}" if whole else "0"
    return ("-" if neg else "") + whole + (dot + frac if frac else "")


def _strip(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _round(v: float, decimals: int) -> str:
    """*v* rounded half away from zero (72,290.5 → 72,291, as a reader rounds), as plain digits."""
    d = Decimal(repr(v))
    q = d.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP,
                   context=Context(prec=max(28, d.adjusted() + decimals + 2)))
    return f"{q:f}"


def _fixed(v: float, sig: int, max_decimals: int | None = None) -> str:
    """*v* (0.001 ≤ |v| < 10**21) with *sig* significant digits, integer digits kept, separators."""
    exp = math.floor(math.log10(abs(v))) if v else 0
    decimals = max(0, sig - 1 - exp)
    if max_decimals is not None:
        decimals = min(decimals, max_decimals)
    text = _round(v, decimals)
    # rounding may add a digit (9.9996 → 10.000): one decimal fewer keeps sig digits
    if decimals and abs(float(text)) >= 10 ** (exp + 1):
        text = _round(v, decimals - 1)
    return _group(_strip(text))


def _scientific(v: float, sig: int) -> str:
    mant, _, exp = f"{v:.{max(sig, 1) - 1}e}".partition("e")
    return f"{_strip(mant)} × 10{str(int(exp)).translate(_SUPERSCRIPT)}"


def _with_unit(text: str, unit: str | None, value: float | None = None) -> str:
    if not unit:
        return text
    if value is not None and abs(value) == 1 and unit.isalpha() and unit.endswith("s") and not unit.endswith("ss"):
        unit = unit[:-1]  # 1 point, 1 cycle
    return f"{text} {unit}"


def fmt_number(x: Any, unit: str | None = None, sig: int = 4, *, reason: str | None = None) -> str:
    """A measured or computed quantity for display, by the module's rules (``210,512 cycles``, ``21.05 M``)."""
    if unit == "%":
        return fmt_percent(x, fraction=False, reason=reason)
    v = _as_float(x)
    if v is None:
        return missing(reason)
    sig = max(1, min(int(sig), 15))
    if math.isinf(v):
        return _with_unit("∞" if v > 0 else "-∞", unit)
    a = abs(v)
    if a == 0:
        text = "0"
    elif a < SCI_BELOW or a >= 1e21:
        text = _scientific(v, sig)
    elif a >= SI_FROM:
        power = min(18, 3 * (math.floor(math.log10(a)) // 3))
        body = _fixed(v / 10 ** power, sig)
        if abs(float(body.replace(",", ""))) >= 1000:  # rounded up into the next prefix
            if power == 18:
                return _with_unit(_scientific(v, sig), unit)
            power += 3
            body = _fixed(v / 10 ** power, sig)
        return _with_unit(f"{body} {dict(SI_PREFIXES)[power]}", unit)
    else:
        count = bool(unit) and unit in COUNT_UNITS
        text = _fixed(v, sig, max_decimals=0 if count and a >= 10 else None)
        if abs(float(text.replace(",", ""))) >= SI_FROM:  # 999,999.6 rounds to a million
            return fmt_number(math.copysign(SI_FROM, v), unit, sig)
    return _with_unit(text, unit, v)


def fmt_statistic(x: Any, sig: int = 4) -> str:
    """A test statistic (F, t): *sig* significant digits with separators, scientific from 10⁶ (never
    an SI prefix: ``1.874 × 10²⁰``, not ``187.4 E``)."""
    v = _as_float(x)
    if v is not None and math.isfinite(v) and abs(v) >= SI_FROM:
        return _scientific(v, max(1, min(int(sig), 15)))
    return fmt_number(x, None, sig)


def fmt_count(n: Any, unit: str | None = None, *, reason: str | None = None) -> str:
    """An exact count: every digit with separators (``933,120 designs``); scientific from 10¹⁵."""
    v = _as_float(n)
    if v is None:
        return missing(reason)
    if math.isinf(v):
        return _with_unit("∞" if v > 0 else "-∞", unit)
    if isinstance(n, int) and not isinstance(n, bool):
        exact = n
    elif v.is_integer() and abs(v) < 2 ** 53:
        exact = int(v)
    else:
        return fmt_number(v, unit)
    if abs(exact) >= 10 ** 15:
        return _with_unit(_scientific(float(exact), 4), unit)
    return _with_unit(f"{exact:,}", unit, float(exact))


def fmt_percent(x: Any, *, fraction: bool = True, reason: str | None = None) -> str:
    """A share as ``2.3 %``. *fraction*: the value is a fraction (0.023); otherwise already in per cent."""
    v = _as_float(x)
    if v is None:
        return missing(reason)
    p = 100 * v if fraction else v
    if math.isinf(p):
        return ("∞" if p > 0 else "-∞") + " %"
    a = abs(p)
    if a == 0:
        text = "0"
    elif a >= 1e6:
        text = fmt_number(p)
    elif a >= 100:
        text = _group(_round(p, 0))
    elif a >= 1:
        text = _strip(_round(p, 1)) if a < 99.95 else _group(_round(p, 0))
    elif a < SCI_BELOW:
        text = _scientific(p, 2)
    else:
        text = _fixed(p, 2)
    return f"{text} %"


def fmt_fixed(x: Any, decimals: int, unit: str | None = None, *, reason: str | None = None) -> str:
    """A number with exactly *decimals* decimals and separators (for statistics compared across rows)."""
    v = _as_float(x)
    if v is None:
        return missing(reason)
    if math.isinf(v):
        return _with_unit("∞" if v > 0 else "-∞", unit)
    if abs(v) >= 1e15:
        return _with_unit(_scientific(v, decimals + 1), unit)
    text = _round(v, max(0, int(decimals)))
    if float(text) == 0:
        text = text.lstrip("-")  # no "-0.0000"
    return _with_unit(_group(text), unit)


def fmt_r2(x: Any, *, reason: str | None = None) -> str:
    """R², adjusted R² or ρ²: four decimals (``0.9634``), as Stargazer's Table 1 reports them. A value
    that four decimals would show as ``1.0000`` but is below 1 gets the decimals that show how far
    (``0.9999974``): a fit of noise-free results is close to 1, not at it."""
    v = _as_float(x)
    if v is not None and 0.99995 <= v < 1 and (d := math.floor(-math.log10(1 - v)) + 2) <= 12:
        return fmt_fixed(v, max(4, d), reason=reason)  # (closer still: an interpolating fit, not shown)
    return fmt_fixed(x, 4, reason=reason)


def fmt_pvalue(p: Any, *, reason: str | None = None) -> str:
    """A p-value: three decimals, ``< 0.001`` below that; ``–`` when missing or not a probability."""
    v = _as_float(p)
    if v is None or not 0 <= v <= 1:
        return missing(reason)
    return "< 0.001" if v < 0.001 else f"{v:.3f}"


def fmt_duration(seconds: Any, *, reason: str | None = None) -> str:
    """A duration: ``0.35 s``, ``7.5 s``, ``51 s``, ``2 min 05 s``, ``1 h 02 min``."""
    v = _as_float(seconds)
    if v is None or v < 0:
        return missing(reason)
    if math.isinf(v):
        return "∞"
    if v < 9.95:
        return f"{_fixed(v, 2) if v >= SCI_BELOW else '0'} s"
    if v < 59.5:
        return f"{_round(v, 0)} s"
    if v < 3599.5:
        m, s = divmod(int(_round(v, 0)), 60)
        return f"{m} min {s:02d} s"
    h, rest = divmod(int(_round(v, 0)), 3600)
    return f"{h:,} h {rest // 60:02d} min"


def fmt_rate(per_second: Any, unit: str = "point", *, remaining: Any = None) -> str:
    """How fast work goes, readable at any speed, with the time left when *remaining* units are known:
    ``120 points/s``, ``1.5 points/s``; below one a second, the time per unit (a cycle-level simulator
    takes minutes a design): ``45 s/point``, ``2 min 05 s per point``; then ``, about 12 min left``.
    No rate yet (nothing finished) reads ``no point finished yet``, never ``0 points/s``."""
    v = _as_float(per_second)
    if v is None or v <= 0 or math.isinf(v):
        return f"no {unit} finished yet"
    plural = unit if unit.endswith("s") else unit + "s"
    if v >= 1:
        text = f"{fmt_count(round(v)) if v >= 10 else fmt_number(v, None, 2)} {plural}/s"
    else:
        each = fmt_duration(1.0 / v)
        text = f"{each}/{unit}" if 1.0 / v < 59.5 else f"{each} per {unit}"
    left = _as_float(remaining)
    if left is not None and left > 0:
        text += f", about {fmt_duration(left / v)} left"
    return text


def fmt_value(v: Any) -> str:
    """A legal value of a parameter (a level, not a measurement): categories as they are, numbers exact."""
    if isinstance(v, str):
        return v
    f = _as_float(v)
    if f is None:
        return missing()
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    return fmt_number(f, sig=6)


def space_units(space: Any) -> dict[str, str]:
    """Each parameter's unit from a design space (``Parameter.unit``), for :func:`format_table`."""
    return {p.name: p.unit for p in getattr(space, "parameters", ()) if getattr(p, "unit", "")}


def column_kind(name: str, dtype_kind: str, kinds: Mapping[str, str] | None = None) -> str:
    """How a column is shown: ``pvalue``, ``r2``, ``statistic``, ``count``, ``percent``, ``fraction``, ``number``
    or ``text``."""
    if kinds and name in kinds:
        return kinds[name]
    if name in PVALUE_COLUMNS:
        return "pvalue"
    if name in R2_COLUMNS:
        return "r2"
    if name in STATISTIC_COLUMNS and dtype_kind in "iuf":
        return "statistic"
    if dtype_kind in "iu":
        return "count"
    if dtype_kind == "b":
        return "text"
    if dtype_kind == "f":
        return "number"
    return "text"


KINDS = ("pvalue", "r2", "statistic", "count", "percent", "fraction", "error", "number", "text")
ERROR_FLOOR = 1e-6  # a relative error below 0.0001 % is rounding in the arithmetic, not a measured error


def fmt_error(x: Any, *, reason: str | None = None) -> str:
    """A relative error (a fraction) as a percentage, like :func:`fmt_percent`, except that errors below
    :data:`ERROR_FLOOR` read ``< 0.0001 %``: a held-out point the model hits to 13 digits shows that the
    error is nil, not a number such as 4.5 × 10⁻¹³ % that suggests a precision nobody measured."""
    v = _as_float(x)
    if v is not None and 0 <= abs(v) < ERROR_FLOOR:
        return "0 %" if v == 0 else "< 0.0001 %"
    return fmt_percent(x, fraction=True, reason=reason)


def format_cell(value: Any, kind: str, unit: str | None = None, sig: int = 4) -> str:
    """One cell by its column's *kind* (see :func:`column_kind`); units belong in the header."""
    if kind == "pvalue":
        return fmt_pvalue(value)
    if kind == "r2":
        return fmt_r2(value)
    if kind == "statistic":
        return fmt_statistic(value, sig)
    if kind == "count":
        return fmt_count(value)
    if kind == "percent":
        return fmt_percent(value, fraction=False)
    if kind == "fraction":
        return fmt_percent(value, fraction=True)
    if kind == "error":
        return fmt_error(value)
    if kind == "number":
        v = _as_float(value)
        count_unit = bool(unit) and unit in COUNT_UNITS
        if v is not None and count_unit and 10 <= abs(v) < SI_FROM - 0.5:
            return _group(_round(v, 0))
        return fmt_number(value, None, sig)
    if type(value).__name__ in ("bool", "bool_"):  # a flag reads as a word, never True/False
        return "yes" if value else "no"
    return MISSING if _is_missing(value) else str(value)


def header(name: str, unit: str | None) -> str:
    """A column header with its unit: ``mshr (count/thread)``; no unit when it repeats the name."""
    return f"{name} ({unit})" if unit and unit != name and unit != "%" else (f"{name} (%)" if unit == "%" else name)


def format_table(df: Any, units: Mapping[str, str] | None = None, kinds: Mapping[str, str] | None = None,
                 sig: int = 4, unit_headers: bool = True) -> Any:
    """A DataFrame of display strings by the module's rules: each column by its kind (:func:`column_kind`),
    missing cells ``–``, units in the headers. The index is kept; the input is not changed."""
    import pandas as pd

    units = dict(units or {})
    kinds = dict(kinds or {})
    out = {}
    for col in df.columns:
        s = df[col]
        kind = column_kind(str(col), s.dtype.kind, kinds)
        if kind not in KINDS:
            raise ValueError(f"column {col!r}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
        unit = units.get(col)
        if kind in ("fraction", "percent", "error"):
            unit = "%"
        name = header(str(col), unit) if unit_headers else col
        out[name] = [format_cell(v, kind, unit, sig) for v in s.tolist()]
    return pd.DataFrame(out, index=df.index)


def missing_as_text(df: Any, units: Mapping[str, str] | None = None, kinds: Mapping[str, str] | None = None,
                    sig: int = 4) -> Any:
    """A copy of *df* for a sortable grid in which no cell reads ``None``: each column with a missing cell
    (None, NaN) becomes its display strings (:func:`format_cell`, missing cells ``–``); the complete columns
    keep their numbers (and their sorting). The grid draws a missing number as ``None``."""
    out = df.copy()
    for col in out.columns:
        s = out[col]
        if not any(_is_missing(v) for v in s.tolist()):
            continue
        kind = column_kind(str(col), s.dtype.kind, kinds)
        unit = (units or {}).get(col)
        out[col] = [format_cell(v, kind, unit, sig) if kind != "text" or not _is_missing(v) else MISSING
                    for v in s.tolist()]
    return out


def column_formats(df: Any, units: Mapping[str, str] | None = None, kinds: Mapping[str, str] | None = None) -> dict:
    """Format strings for ``st.column_config.NumberColumn(format=…)`` matching :func:`format_table` where
    the grid can (it keeps numbers sortable but cannot write ``< 0.001`` or SI prefixes): counts
    ``localized`` (separators), R² ``%.4f``, p-values ``%.3f``, per-cent columns ``%.1f %%``, fractions
    ``percent``, other numbers ``localized``; text columns are left out."""
    fmts = {}
    for col in df.columns:
        kind = column_kind(str(col), df[col].dtype.kind, kinds)
        f = {"pvalue": "%.3f", "r2": "%.4f", "statistic": "%.4g", "count": "localized", "percent": "%.1f %%",
             "fraction": "percent",
             "error": "percent",
             "number": "localized"}.get(kind)
        if f:
            fmts[col] = f
    return fmts


def round_for_display(df: Any, sig: int = 4) -> Any:
    """A copy of *df* whose float columns are rounded to *sig* significant digits of their typical
    (median absolute) value: the grid of a data table (results, samples) stays sortable and shows
    ``222,898`` cycles and ``360.9`` IPC, not ``222897.8333``. The data themselves are not changed."""
    import numpy as np

    out = df.copy()
    for col in out.columns:
        if out[col].dtype.kind != "f":
            continue
        v = np.abs(out[col].to_numpy(dtype=float))
        v = v[np.isfinite(v) & (v > 0)]
        if not v.size:
            continue
        decimals = int(min(6, max(0, sig - 1 - math.floor(math.log10(float(np.median(v)))))))
        out[col] = out[col].round(decimals)
    return out


def text_table(df: Any, units: Mapping[str, str] | None = None, kinds: Mapping[str, str] | None = None,
               sig: int = 4) -> str:
    """:func:`format_table` as plain text for the terminal (the CLI's tables), right-aligned columns."""
    return format_table(df, units, kinds, sig).to_string(index=False)


# a response column's unit read from its name's last word: ``time_ms``, ``geomean_kernel_exec_s``, ``power_w``
_UNIT_SUFFIXES = {"ms": "ms", "us": "µs", "ns": "ns", "s": "s", "sec": "s", "w": "W", "watts": "W"}


def response_unit(response: Any) -> str | None:
    """The unit of a response column when its name says it, else None: cycles (``cycles``,
    ``gpu_sim_cycle``), or a unit as the name's last ``_`` word (``time_ms`` → ms, MGPUSim's
    ``kernel_exec_s`` → s, ``power_w`` → W; ``wattage`` → W)."""
    name = str(response).strip().lower()
    if "cycle" in name:
        return "cycles"
    if name == "wattage":
        return "W"
    head, sep, last = name.rpartition("_")
    return _UNIT_SUFFIXES.get(last) if sep and head else None


def squared_unit(unit: str | None, transform: str = "none") -> str | None:
    """The unit of a sum of squares of a response in *unit* on the model's *transform* scale:
    cycles² raw, (log cycles)² on the log scale, cycles on the square-root scale."""
    if not unit:
        return None
    return {"none": f"{unit}²", "log": f"(log {unit})²", "sqrt": unit}.get(transform, f"({transform} {unit})²")


# ---- numbers in CSV files ---------------------------------------------------------------------------
CSV_EXACT_DIGITS = 12  # a column whose every value Python writes in at most this many digits is data: kept exactly
CSV_COMPUTED_DIGITS = 7  # else (computed: noise, averages, model output) 7 significant digits, 1 part in 10⁷


def _repr_digits(text: str) -> int:
    """Significant digits of a float's shortest representation (``'1.25e-05'`` → 3)."""
    mantissa = text.lower().lstrip("+-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) or 1


def csv_precision(text: str) -> int | None:
    """``--precision``: ``auto`` (None) or significant digits from 1 to 17."""
    if str(text).strip().lower() == "auto":
        return None
    try:
        n = int(text)
    except (TypeError, ValueError):
        n = 0
    if not 1 <= n <= 17:
        raise ValueError(f"--precision {text!r}: give auto or significant digits from 1 to 17")
    return n


def csv_floats(values: Any, precision: int | None = None) -> list:
    """A float column's CSV cells. *precision* None (``auto``): values the data wrote in at most
    CSV_EXACT_DIGITS digits (design values, measurements read from a file) are kept exactly, as the
    shortest text that reads back to the same float; a column of computed values (11-17 digits of
    which only the first few mean anything) is written to CSV_COMPUTED_DIGITS significant digits.
    An integer: that many significant digits. Positional notation, trailing zeros trimmed, NaN empty."""
    import numpy as np

    vals = [float(v) for v in values]
    finite = [v for v in vals if math.isfinite(v)]
    digits = precision
    if digits is None:
        if all(_repr_digits(repr(v)) <= CSV_EXACT_DIGITS for v in finite):
            return ["" if math.isnan(v) else repr(v) if math.isinf(v) else _plain(v) for v in vals]
        digits = CSV_COMPUTED_DIGITS
    out = []
    for v in vals:
        if math.isnan(v):
            out.append("")
        elif math.isinf(v):
            out.append("inf" if v > 0 else "-inf")
        else:
            out.append(np.format_float_positional(v, precision=digits, unique=True, fractional=False, trim="-"))
    return out


def _plain(v: float) -> str:
    """The shortest text that reads back to *v*, as pandas writes it (``repr``)."""
    return repr(v)

