"""Whole numbers beyond 64 bits in the table readers (``gpudse import``, the dashboard's results
upload, ``gpudse space infer``): kept exact as int64, or refused naming the file, row and column —
never rounded to one float that two distinct numbers share (docs/limits.md)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudse_core.dataio import TableError, read_table_bytes
from gpudse_core.sim.lookup import infer_space

INT64_MAX = (1 << 63) - 1  # the range space values take too (symmetric: -2^63 is refused there)
INT64_MIN = -INT64_MAX
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
# whole numbers of every size, weighted towards the edges of int64 and of float64's exact range
wholes = st.one_of(st.integers(-1000, 1000), st.integers(INT64_MIN - 3, INT64_MIN + 3),
                   st.integers(INT64_MAX - 3, INT64_MAX + 3), st.integers(2 ** 53 - 2, 2 ** 53 + 2),
                   st.integers(-(10 ** 60), 10 ** 60), st.integers(2 ** 64 - 2, 2 ** 64 + 2))


def _first_wide(values: list[int]) -> int | None:
    return next((i for i, v in enumerate(values) if not INT64_MIN <= v <= INT64_MAX), None)


def _check(values: list[int], read) -> None:
    """*read* gives the table; its column ``v`` is exactly *values*, or the error names the first wide row."""
    wide = _first_wide(values)
    if wide is None:
        df = read()
        assert df["v"].dtype.kind == "i" and df["v"].tolist() == values
        return
    with pytest.raises(TableError) as e:
        read()
    msg = str(e.value)
    assert re.search(rf"t\.\w+: row {wide + 1:,}, column 'v': .*beyond the 64-bit integer range", msg), msg


@PROPS
@given(st.lists(wholes, min_size=1, max_size=12))
def test_csv_whole_numbers_exact_or_refused(values):
    data = ("k,v\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values))).encode()
    _check(values, lambda: read_table_bytes(data, "t.csv"))


@PROPS
@given(st.lists(wholes, min_size=1, max_size=12))
def test_json_whole_numbers_exact_or_refused(values):
    data = json.dumps([{"k": i, "v": v} for i, v in enumerate(values)]).encode()
    _check(values, lambda: read_table_bytes(data, "t.json"))


@PROPS
@given(st.lists(wholes, min_size=1, max_size=8), st.sampled_from(["1.5", "", "2.0"]))
def test_csv_beside_decimals_or_empty_cells_never_merged(values, other):
    """A decimal or an empty cell in the column makes pandas read it as float or text: a whole number
    beyond int64 is still refused, and no two distinct whole numbers come out as one value."""
    data = ("k,v\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values)) + f"{len(values)},{other}\n").encode()
    wide = _first_wide(values)
    try:
        df = read_table_bytes(data, "t.csv")
    except TableError as e:
        if wide is not None:
            assert f"row {wide + 1:,}, column 'v'" in str(e), e
        return
    assert wide is None
    kept = df["v"].tolist()[:len(values)]
    assert len({repr(x) for x in kept}) == len(set(values)), (values, kept)  # distinct stay distinct


@PROPS
@given(st.lists(st.integers(INT64_MIN, INT64_MAX), min_size=2, max_size=10, unique=True))
def test_infer_space_keeps_every_distinct_whole_number(values):
    df = read_table_bytes(("a,b\n" + "".join(f"{v},1\n" for v in values)).encode(), "t.csv")
    space = infer_space(df, ["a", "b"], "t.csv")
    assert sorted(space.parameter("a").values) == sorted(values)


def test_space_infer_and_import_refuse_a_47_digit_number(tmp_path, capsys):
    from gpudse_core.cli import main

    big = "1" + "0" * 45
    table = tmp_path / "t.csv"
    table.write_text(f"a,b,cycles\n{big}1,1,10\n{big}2,2,20\n")
    assert main(["space", "infer", str(table), "--params", "a,b", "-o", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err
    assert re.search(r"t\.csv: row 1, column 'a': .*beyond the 64-bit integer range", err), err
    assert not (tmp_path / "s.yaml").exists()


def test_parquet_uint64_beyond_int64_is_refused_and_int64_edges_kept():
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    def parquet(values, typ) -> bytes:
        buf = io.BytesIO()
        pq.write_table(pa.table({"k": pa.array(range(len(values))), "v": pa.array(values, type=typ)}), buf)
        return buf.getvalue()

    with pytest.raises(TableError, match=r"t\.parquet: row 2, column 'v': 18446744073709551615 is a whole number"):
        read_table_bytes(parquet([1, 2 ** 64 - 1], pa.uint64()), "t.parquet")
    df = read_table_bytes(parquet([INT64_MAX, INT64_MIN, 0], pa.int64()), "t.parquet")
    assert df["v"].tolist() == [INT64_MAX, INT64_MIN, 0]
