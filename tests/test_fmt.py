"""The one number formatter: the documented rules on known values, and properties over all
floats — it never raises, never writes "nan"/"inf"/"e+05", and what it writes reads back to the value within
its stated precision."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from gpudse_core import fmt
from gpudse_core.fmt import (column_formats, fmt_count, fmt_duration, fmt_fixed, fmt_number, fmt_percent, fmt_pvalue,
                             fmt_r2, fmt_value, format_table)

SUPER = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
SI = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def read_back(text: str) -> float:
    """Parse what the formatter wrote (tests only): separators, SI prefixes, × 10ⁿ, units dropped."""
    t = text.split(" (")[0]
    m = re.fullmatch(r"(-?[\d,]+(?:\.\d+)?)(?: × 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?(?: ([kMGTPE]))?(?: .*)?", t)
    assert m, f"unreadable: {text!r}"
    v = float(m.group(1).replace(",", ""))
    if m.group(2):
        v *= 10.0 ** int(m.group(2).translate(SUPER))
    if m.group(3):
        v *= SI[m.group(3)]
    return v


@pytest.mark.parametrize("value, unit, expected", [
    (2.105e5, "cycles", "210,500 cycles"),
    (210512.37, None, "210,512"),
    (72290.5, None, "72,291"),  # half away from zero, as a reader rounds
    (72290.5432, "cycles", "72,291 cycles"),  # cycles: never four decimals
    (12.5, "cycles", "13 cycles"),
    (123.45, None, "123.5"),
    (12.3456, None, "12.35"),
    (0.012345, None, "0.01235"),
    (2.5, None, "2.5"),  # trailing zeros dropped
    (1.234e-5, None, "1.234 × 10⁻⁵"),
    (2.105e7, "cycles", "21.05 M cycles"),
    (999_999_999, None, "1 G"),  # the prefix after rounding
    (999_999.6, None, "1 M"),
    (1.5e9, None, "1.5 G"),
    (3e22, None, "3 × 10²²"),
    (-5, "KB", "-5 KB"),
    (0, None, "0"),
    (1, "points", "1 point"),
    (2, "points", "2 points"),
    (float("nan"), "cycles", "–"),
    (None, None, "–"),
    (pd.NA, None, "–"),
    (np.float32(3.5), None, "3.5"),
    (np.int64(1024), None, "1,024"),
    (float("inf"), None, "∞"),
    (float("-inf"), None, "-∞"),
    (0.023, "%", "0.023 %"),  # unit "%" means the value is already in per cent
])
def test_number_rules(value, unit, expected):
    assert fmt_number(value, unit) == expected


def test_missing_with_a_reason():
    assert fmt_number(float("nan"), reason="not estimable") == "– (not estimable)"
    assert fmt_pvalue(None, reason="no residual d.f.") == "– (no residual d.f.)"


@pytest.mark.parametrize("value, expected", [
    (0.023, "2.3 %"), (0.429, "42.9 %"), (0.087, "8.7 %"), (0.000321, "0.032 %"), (1.0, "100 %"),
    (12.5, "1,250 %"), (0.02, "2 %"), (-0.02, "-2 %"), (0, "0 %"), (float("nan"), "–"), (float("inf"), "∞ %"),
])
def test_percent_rules(value, expected):
    assert fmt_percent(value) == expected


def test_counts_are_exact_and_huge_counts_scientific():
    assert fmt_count(933_120, "designs") == "933,120 designs"
    assert fmt_count(937_500_000) == "937,500,000"
    assert fmt_count(10 ** 30) == "1 × 10³⁰"
    assert fmt_count(1, "points") == "1 point"
    assert fmt_count(12.0) == "12"
    assert fmt_count(2.5) == "2.5"  # not a count after all: shown as a number, not truncated


def test_statistics():
    assert fmt_r2(0.96341) == "0.9634"
    assert fmt_r2(-0.0) == "0.0000"
    # four decimals would show a fit of noise-free results as 1.0000: it gets the decimals that show the gap
    assert fmt_r2(0.9999974) == "0.9999974" and fmt_r2(0.99995) == "0.999950" and fmt_r2(0.99994) == "0.9999"
    assert fmt_r2(1.0) == "1.0000" and fmt_r2(1 - 1e-14) == "1.0000"  # (an interpolating fit: not shown)
    assert fmt_pvalue(0.0001) == "< 0.001"
    assert fmt_pvalue(0.04234) == "0.042"
    assert fmt_pvalue(1.5) == "–" and fmt_pvalue(-0.1) == "–"
    assert fmt_fixed(1234567.891, 2) == "1,234,567.89"
    assert [fmt_duration(s) for s in (0.35, 7.5, 51, 59.6, 125, 3725)] == [
        "0.35 s", "7.5 s", "51 s", "1 min 00 s", "2 min 05 s", "1 h 02 min"]
    assert fmt_value(16) == "16" and fmt_value(0.5) == "0.5" and fmt_value("gto") == "gto"


finite = st.floats(allow_nan=False, allow_infinity=False)
anything = st.one_of(st.floats(), st.integers(), st.none(), st.text(max_size=5), st.booleans(),
                     st.decimals(allow_nan=True))


@pytest.mark.slow
@given(anything, st.sampled_from([None, "cycles", "%", "KB", "points", "blocks/core"]), st.integers(-3, 30))
def test_never_raises_and_never_writes_machine_notation(x, unit, sig):
    for out in (fmt_number(x, unit, sig), fmt_percent(x), fmt_count(x), fmt_pvalue(x), fmt_r2(x), fmt_duration(x),
                fmt.fmt_rate(x, remaining=x)):
        assert isinstance(out, str) and out
        low = out.lower()
        assert "nan" not in low and "inf" not in low and not re.search(r"\de[+-]?\d", low), out


@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False))
def test_reads_back_within_its_precision(x):
    out = fmt_number(x)
    back = read_back(out)
    if x == 0:
        assert back == 0
        return
    if abs(x) < 1e-300:  # subnormal floats print as 0-ish mantissas; sign and magnitude order suffice
        return
    # four significant digits (more for integers below a million): relative error at most half a unit in the 4th
    assert math.copysign(1, back) == math.copysign(1, x) or back == 0
    assert abs(back - x) <= 5e-4 * abs(x) + 1e-12, (x, out)


@given(st.floats(min_value=1e-3, max_value=1e6 - 1, allow_nan=False))
def test_below_a_million_every_integer_digit_is_kept(x):
    out = fmt_number(x)
    assert " " not in out  # no prefix, no exponent
    whole = out.split(".")[0].replace(",", "").lstrip("-")
    assert abs(int(whole) - int(abs(x))) <= 1  # rounding may carry into the integer part


@given(st.integers(min_value=-10 ** 15 + 1, max_value=10 ** 15 - 1))
def test_counts_round_trip_exactly(n):
    assert int(fmt_count(n).replace(",", "")) == n


@given(st.floats(min_value=0, max_value=10, allow_nan=False))
def test_percent_reads_back(x):
    out = fmt_percent(x)
    assert out.endswith(" %")
    back = read_back(out[:-2])
    assert abs(back - 100 * x) <= max(0.05, 0.01 * 100 * x), (x, out)


def test_format_table_gives_display_strings_and_units_in_headers():
    df = pd.DataFrame({"factor": ["blk", "ERROR"], "df": [7, 290], "partial_ss": [71.2345, 4.72611],
                       "F": [624.4, np.nan], "P": [1e-9, np.nan], "cycles": [72290.5, 2.105e7],
                       "blk": [1, 16]})
    shown = format_table(df, units={"blk": "blocks/core", "cycles": "cycles"})
    assert list(shown.columns) == ["factor", "df", "partial_ss", "F", "P", "cycles", "blk (blocks/core)"]
    assert shown.iloc[1].tolist() == ["ERROR", "290", "4.726", "–", "–", "21.05 M", "16"]
    assert shown.iloc[0].tolist() == ["blk", "7", "71.23", "624.4", "< 0.001", "72,291", "1"]
    assert df["F"].isna().sum() == 1  # the input is not changed
    frac = format_table(pd.DataFrame({"mean": [0.0234]}), kinds={"mean": "fraction"})
    assert frac.columns[0] == "mean (%)" and frac.iloc[0, 0] == "2.3 %"
    with pytest.raises(ValueError, match="unknown kind"):
        format_table(df, kinds={"F": "bogus"})


def test_text_table_for_the_terminal():
    out = fmt.text_table(pd.DataFrame({"model": ["stepwise"], "mean": [0.0234], "P": [np.nan]}),
                         kinds={"mean": "fraction"})
    lines = out.splitlines()
    assert lines[0].split() == ["model", "mean", "(%)", "P"] and lines[1].split() == ["stepwise", "2.3", "%", "–"]


def test_column_formats_for_the_grid():
    df = pd.DataFrame({"model": ["a"], "train_size": [30], "r2": [0.9], "P": [0.01], "mean": [0.1]})
    f = column_formats(df, kinds={"mean": "fraction"})
    assert f == {"train_size": "localized", "r2": "%.4f", "P": "%.3f", "mean": "percent"}


def test_formatter_imports_nothing_heavy():
    import subprocess
    import sys

    code = "import sys, gpudse_core.fmt as f; f.fmt_number(1.5e7, 'cycles'); print(sorted(m for m in " \
           "('numpy', 'pandas', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=fmt.__file__.rsplit(
        "/gpudse_core", 1)[0])
    assert out.stdout.strip() == "[]", out.stderr


def test_round_for_display_keeps_four_significant_digits_of_each_column():
    import pandas as pd

    from gpudse_core.fmt import round_for_display

    df = pd.DataFrame({"cycles": [222897.8333, 150000.25], "ipc": [360.8593, 12.04], "r": [0.97123, 0.5],
                       "n": [1, 2], "zero": [0.0, 0.0]})
    out = round_for_display(df)
    assert out["cycles"].tolist() == [222898.0, 150000.0] and out["ipc"].tolist() == [360.9, 12.0]
    assert out["r"].tolist() == [0.9712, 0.5] and out["n"].tolist() == [1, 2] and out["zero"].tolist() == [0, 0]
    assert df["cycles"].iloc[0] == 222897.8333  # the data are not changed


def test_test_statistics_never_take_an_si_prefix():
    """An F ratio of 1.874e20 (a near-saturated fit) read '187.4 E' — a unit, not a number. F and t
    columns are statistics: digits below a million, scientific above."""
    df = pd.DataFrame({"factor": ["a", "b", "c"], "F": [1.874e20, 5982.978576, 0.2683], "P": [0.0, 1e-5, 0.765]})
    out = fmt.format_table(df)
    assert out["F"].tolist() == ["1.874 × 10²⁰", "5,983", "0.2683"]
    assert fmt.column_kind("t", "f") == "statistic" and fmt.column_kind("F", "O") == "text"
    assert "E" not in fmt.fmt_statistic(-3.2e18) and fmt.fmt_statistic(float("nan")) == fmt.fmt_number(float("nan"))


def test_relative_errors_below_the_floor_read_as_nil():
    """A held-out error of 4.5e-15 (4.5 × 10⁻¹³ %) is arithmetic rounding: the error kind says '< 0.0001 %';
    errors above the floor, and shares (kind 'fraction'), keep their digits."""
    import pandas as pd

    from gpudse_core import fmt

    assert fmt.fmt_error(4.5e-15) == "< 0.0001 %" and fmt.fmt_error(0.0) == "0 %"
    assert fmt.fmt_error(0.0123) == fmt.fmt_percent(0.0123) == "1.2 %"
    assert fmt.fmt_error(2e-6) == fmt.fmt_percent(2e-6)
    assert fmt.fmt_percent(4.5e-15) != "< 0.0001 %"  # a share of a huge space may be that small
    table = fmt.format_table(pd.DataFrame({"min": [4.5e-15], "mean": [0.059]}), kinds={"min": "error", "mean": "error"})
    assert table.to_dict("records") == [{"min (%)": "< 0.0001 %", "mean (%)": "5.9 %"}]


def test_rate_reads_at_any_speed_with_the_time_left():
    """Campaign progress: a cycle-level simulator takes tens of seconds a design, so its rate is shown as
    the time per point (never "0 points/s"), and the time left follows from the points still to run."""
    from gpudse_core.fmt import fmt_rate

    assert fmt_rate(1 / 45, remaining=10) == "45 s/point, about 7 min 30 s left"
    assert fmt_rate(1 / 125) == "2 min 05 s per point"
    assert fmt_rate(1.5, remaining=100) == "1.5 points/s, about 1 min 07 s left"
    assert fmt_rate(120.4, remaining=0) == "120 points/s"
    assert fmt_rate(2.5e6) == "2,500,000 points/s"
    for nothing in (0, 0.0, None, float("nan"), -1, float("inf")):
        assert fmt_rate(nothing, remaining=5) == "no point finished yet"


def test_campaign_job_progress_names_seconds_per_point():
    """The dashboard's campaign job message (and the CLI bar) go through fmt_rate."""
    from gpudse_core.sim.store import Progress
    from gpudse_core.workspace.campaigns import _reporter

    seen = []

    class Ctx:
        def progress(self, done, total, message):
            seen.append((done, total, message))
            return True

    _reporter(Ctx())(Progress(pending=7, running=2, done=3, failed=1), 1 / 45)
    assert seen == [(4, 13, "3 done, 1 failed, 45 s/point, about 6 min 45 s left")]


def test_missing_as_text_leaves_no_null_for_the_grid_and_keeps_complete_columns_numeric():
    import pandas as pd

    from gpudse_core.fmt import MISSING, missing_as_text

    df = pd.DataFrame({"cycles": [222897.8, 1.5e6], "acquisition": [None, 0.25], "model used": ["", None],
                       "simd": [8, 16]})
    out = missing_as_text(df)
    assert not out.isna().any().any()
    assert out["acquisition"].tolist() == [MISSING, "0.25"] and out["model used"].tolist() == ["", MISSING]
    assert out["cycles"].dtype.kind == "f" and out["simd"].dtype.kind == "i"
    assert df["acquisition"].isna().sum() == 1  # the input is not changed
