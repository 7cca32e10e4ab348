"""Value-set syntax: explicit lists, Lee & Brooks i::j::k ranges, pow2, and their round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from gpudse_core.errors import GpudseError, SpaceError
from gpudse_core.space.values import format_values, format_values_text, parse_values


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("9::3::36", (9, 12, 15, 18, 21, 24, 27, 30, 33, 36)),
        ("15::15::45", (15, 30, 45)),
        ("40::8::112", tuple(range(40, 113, 8))),
        ("35::5::55", (35, 40, 45, 50, 55)),
        ("1::2::6", (1, 3, 5)),  # k off the grid: stops at the last step not beyond k
        ({"pow2": "1..16"}, (1, 2, 4, 8, 16)),
        ({"pow2": [8, 32]}, (8, 16, 32)),
        ("pow2: 1..32", (1, 2, 4, 8, 16, 32)),
        ({"pow2": "0.25..1"}, (0.25, 0.5, 1.0)),
        ("4, 8, 16", (4, 8, 16)),
        ("[1, 2]", (1, 2)),
        ([1, 2.5, "3"], (1, 2.5, 3)),
        (["gto", "lrr"], ("gto", "lrr")),
        ("gto, lrr", ("gto", "lrr")),
        (7, (7,)),
    ],
)
def test_parse_examples(spec, expected):
    got = parse_values(spec)
    assert got == expected
    assert [type(v) for v in got] == [type(v) for v in expected]


def test_decimal_ranges_are_exact():
    # Naive float stepping gives 0.30000000000000004 and may drop the end point.
    vals = parse_values("0.1::0.1::1")
    assert len(vals) == 10
    assert vals[2] == 0.3 and vals[-1] == 1.0
    assert all(isinstance(v, float) for v in vals)


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("1::0::5", "step must be positive"),
        ("5::1::1", "ends"),
        ("a::1::3", "not a number"),
        ("1::2", "not of the form"),
        ({"pow2": "3..16"}, "not a power of two"),
        ({"pow2": "16..1"}, "ends before"),
        ({"pow2": "1-16"}, "pow2 needs a range"),
        ("1,,2", "empty item"),
        ({"powers": "1..4"}, "unknown value syntax"),
        ([[1, 2]], "single number or word"),
        ("0::1::2000000", "more than"),
    ],
)
def test_parse_errors_say_what_is_wrong(spec, fragment):
    with pytest.raises(GpudseError, match=fragment):  # SpaceError, or LimitError for a limit
        parse_values(spec, "space.yaml:3: parameters[0] (x): ")


def test_error_carries_location():
    with pytest.raises(SpaceError, match=r"^space.yaml:3: parameters\[0\] \(x\): "):
        parse_values("1::0::5", "space.yaml:3: parameters[0] (x): ")


def test_format_chooses_compact_forms():
    assert format_values((1, 2, 4, 8, 16)) == {"pow2": "1..16"}
    assert format_values((9, 12, 15, 18)) == "9::3::18"
    assert format_values((1, 3, 4)) == [1, 3, 4]
    assert format_values_text((8, 16, 32)) == "pow2: 8..32"
    assert format_values_text((1, 5)) == "1, 5"


@given(start=st.integers(-1000, 1000), step=st.integers(1, 50), count=st.integers(1, 60))
def test_range_round_trip(start, step, count):
    vals = tuple(start + i * step for i in range(count))
    assert parse_values(f"{start}::{step}::{vals[-1]}") == vals
    assert parse_values(format_values(vals)) == vals
    assert parse_values(format_values_text(vals)) == vals


@given(st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=30, unique=True))
def test_int_list_round_trip(vals):
    vals = tuple(vals)
    assert parse_values(format_values(vals)) == vals
    assert parse_values(format_values_text(vals)) == vals


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False).filter(lambda x: not float(x).is_integer()),
                min_size=1, max_size=20, unique=True))
def test_float_list_round_trip(vals):
    vals = tuple(vals)
    assert parse_values(format_values(vals)) == vals


@given(lo=st.integers(0, 20), n=st.integers(1, 12))
def test_pow2_round_trip(lo, n):
    vals = tuple(2 ** (lo + i) for i in range(n))
    assert parse_values({"pow2": f"{vals[0]}..{vals[-1]}"}) == vals
    assert parse_values(format_values(vals)) == vals
