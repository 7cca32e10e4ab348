"""Uploaded results validated against the design space: every problem reported with its rows."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from gpudse_core import GpudseError, load_preset, sample
from gpudse_core.sim.upload import read_upload, validate_results

SPACE = load_preset("stargazer")


def results(n=20, seed=1):
    pts = sample(SPACE, n, seed=seed).points
    return pts.assign(cycles=np.arange(1, n + 1) * 1000.0, ipc=2.0 + np.arange(n) / 100)


def test_clean_results_pass_through():
    rep = validate_results(results(), SPACE)
    assert rep.rows_kept == 20 and not rep.problems and rep.responses == ["cycles", "ipc"]


def test_missing_parameter_column_is_fatal():
    with pytest.raises(GpudseError, match="lack parameter column\\(s\\) simd"):
        validate_results(results().drop(columns="simd"), SPACE)


def test_unknown_columns_are_dropped_and_reported():
    df = results().assign(notes="hello")
    rep = validate_results(df, SPACE)
    assert "notes" not in rep.table.columns and rep.problems[0].kind == "unknown columns"
    rep = validate_results(results(), SPACE, responses=["cycles"])
    assert "ipc" not in rep.table.columns and "ipc" in str(rep.problems[0])


def test_values_outside_the_space_rejected_or_snapped():
    df = results().astype({"dramq": object})
    df.loc[2, "simd"] = 12          # between 8 and 16 -> nearest 8 (tie goes to the first) or 16
    df.loc[5, "blk"] = 15           # nearest 16
    df.loc[7, "dramq"] = "lots"     # not a number: cannot snap
    rep = validate_results(df, SPACE)
    kinds = {(p.kind, p.column): p.rows for p in rep.problems}
    assert kinds[("not a value", "simd")] == [3] and kinds[("not a value", "blk")] == [6]
    assert kinds[("not a value", "dramq")] == [8] and rep.rows_kept == 17
    rep = validate_results(df, SPACE, snap="nearest")
    assert rep.rows_kept == 19 and rep.table.loc[5, "blk"] == 16 and rep.table.loc[2, "simd"] in (8, 16)
    assert any(p.kind == "snapped" and p.rows == [6] for p in rep.problems)


def test_duplicates_keep_average_reject():
    df = pd.concat([results(5), results(5).iloc[[1]].assign(cycles=9000.0)], ignore_index=True)
    assert validate_results(df, SPACE).rows_kept == 6
    avg = validate_results(df, SPACE, duplicates="average")
    assert avg.rows_kept == 5 and avg.table.cycles.iloc[1] == (2000 + 9000) / 2
    rej = validate_results(df, SPACE, duplicates="reject")
    assert rej.rows_kept == 4 and rej.problems[0].rows == [2, 6]


def test_bad_responses_dropped_with_rows():
    df = results()
    df["cycles"] = df["cycles"].astype(object)
    df.loc[0, "cycles"] = "n/a"
    df.loc[9, "cycles"] = np.nan
    df.loc[4, "ipc"] = np.inf
    rep = validate_results(df, SPACE)
    rows = {p.column: p.rows for p in rep.problems}
    assert rows == {"cycles": [1, 10], "ipc": [5]} and rep.rows_kept == 17


def test_nothing_usable():
    df = results(3).assign(cycles="broken")
    with pytest.raises(GpudseError, match="no usable rows remain"):
        validate_results(df, SPACE, responses=["cycles"])


def test_read_upload_formats_and_cap():
    df = results(4)
    for name, data in (("r.csv", df.to_csv(index=False).encode()),
                       ("r.json", json.dumps(df.to_dict(orient="records")).encode())):
        back = read_upload(data, name)
        assert len(back) == 4 and list(back.columns) == list(df.columns)
    buf = io.BytesIO()
    df.to_parquet(buf)
    assert len(read_upload(buf.getvalue(), "r.parquet")) == 4
    with pytest.raises(GpudseError, match="upload limit"):
        read_upload(b"x" * 100, "r.csv", max_bytes=10)
    with pytest.raises(GpudseError, match="unknown file type"):
        read_upload(b"\x80\x04pickle", "r.pkl")
    with pytest.raises(GpudseError, match="cannot be read"):
        read_upload(b"\x00\x01 not parquet", "r.parquet")


@given(st.lists(st.tuples(st.integers(0, 19), st.sampled_from(["simd", "blk", "cycles", "status"]),
                          st.sampled_from([7, 8.0, "x", None, -1, 16, "ok", " OK ", "RuntimeFailedConfig", True])),
                max_size=15))
@settings(max_examples=60)
def test_every_row_is_kept_failed_or_reported(edits):
    """Every row ends in exactly one place: the results, the failed configurations, or a reported problem."""
    df = results().assign(status="ok")
    df = df.astype({"simd": object, "blk": object, "cycles": object, "status": object})
    for row, col, val in edits:
        df.loc[row, col] = val
    try:
        rep = validate_results(df, SPACE, responses=["cycles"], duplicates="keep")
    except GpudseError:
        return
    kinds = ("not a value", "bad response", "infinite response", "bad status")
    reported = {r for p in rep.problems if p.kind in kinds for r in p.rows}
    failed = {r for p in rep.problems if p.kind == "failed configurations" for r in p.rows}
    assert not reported & failed and len(failed) == rep.rows_failed
    assert rep.rows_kept + rep.rows_failed + len(reported) == 20
    failing = df["status"].map(lambda v: isinstance(v, str) and v in ("x", "RuntimeFailedConfig"))  # not ok/OK/empty
    assert failed <= set(np.flatnonzero(failing.to_numpy(bool)) + 1)


def test_a_status_column_keeps_failed_configurations_as_failures():
    """A measured tuning table (FAIR Benchmark Hub: status ok, or why the configuration failed, with an
    empty time) keeps its failures in a campaign's form, not as dropped "bad responses"."""
    df = results(8).assign(status=["ok", "OK", " success ", None, "RuntimeFailedConfig", "CompileFailedConfig",
                                   "ok", "RuntimeFailedConfig"])
    df.loc[[4, 5], "cycles"] = np.nan  # failed rows have no time; row 8 has one, and still failed
    df["simd"] = df["simd"].astype(str)  # canonical values for the failures too ("8" -> 8)
    rep = validate_results(df, SPACE, responses=["cycles"])
    assert rep.rows_kept == 5 and "status" not in rep.table.columns and rep.table["cycles"].notna().all()
    assert rep.rows_failed == 3
    f = rep.failures
    assert list(f.columns) == [*SPACE.parameter_names, "status", "error"]
    assert f["status"].tolist() == ["failed"] * 3
    assert f["error"].tolist() == ["RuntimeFailedConfig", "CompileFailedConfig", "RuntimeFailedConfig"]
    assert f["simd"].tolist() == results(8)["simd"].iloc[[4, 5, 7]].tolist()
    (p,) = [p for p in rep.problems if p.kind == "failed configurations"]
    assert p.rows == [5, 6, 8] and "3 failed configurations kept as failures" in str(p)
    assert "RuntimeFailedConfig 2" in str(p) and not any(q.kind in ("bad response", "reserved columns")
                                                         for q in rep.problems)


@pytest.mark.parametrize("value", [1, True, "3.5", "x" * 201])
def test_a_status_that_is_no_status_rejects_the_row_naming_it(value):
    df = results(5).assign(status="ok").astype({"status": object})
    df.loc[2, "status"] = value
    rep = validate_results(df, SPACE, responses=["cycles"])
    (p,) = [p for p in rep.problems if p.kind == "bad status"]
    assert p.rows == [3] and "(rows 3)" in str(p) and "not a status" in str(p)
    assert rep.rows_kept == 4 and rep.rows_failed == 0


def test_cli_import_keeps_failures_beside_the_results_and_in_the_store(tmp_path, capsys):
    from gpudse_core.cli import main
    from gpudse_core.sim.store import CampaignStore

    df = results(6).assign(status=["ok", "RuntimeFailedConfig", "ok", "ok", "ok", "ok"])
    df.loc[1, "cycles"] = np.nan
    src = tmp_path / "measured.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "clean.csv"
    assert main(["import", str(src), "--space", "stargazer", "--store", str(tmp_path / "c.db"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "kept 5 of 6 rows" in err and "1 failed configuration kept as failures" in err
    assert "--failed" in err and "clean_failed.csv" in err
    assert len(pd.read_csv(out)) == 5 and "status" not in pd.read_csv(out).columns
    failed = pd.read_csv(tmp_path / "clean_failed.csv")
    assert failed[list(SPACE.parameter_names)].to_dict("records") == df[list(SPACE.parameter_names)].iloc[[1]].to_dict(
        "records") and failed["error"].tolist() == ["RuntimeFailedConfig"]
    with CampaignStore(tmp_path / "c.db", name="import") as store:
        prog = store.progress()
        assert (prog.done, prog.failed) == (5, 1)
        assert store.failures()["error"].tolist() == ["RuntimeFailedConfig"]


def test_a_workspace_keeps_an_uploads_failures_for_the_scan(tmp_path, monkeypatch):
    """The dashboard's upload records the failures as a campaign's failed points, which every scan adds
    to the results (dashboard.work.with_failures), so explore never recommends them."""
    from gpudse_core.workspace import create_workspace
    from gpudse_core.workspace.campaigns import failed_points

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    ws, _ = create_workspace("upload")
    ws.set_space(SPACE)
    df = results(4).assign(status=["ok", "RuntimeFailedConfig", "ok", "ok"])
    rep = validate_results(df, SPACE, responses=["cycles"])
    ws.set_results(rep.table, "cycles", "uploaded m.csv")
    assert ws.record_failures("m.csv", SPACE.name, rep.failures) == "failures of m.csv"
    assert ws.record_failures("m.csv", SPACE.name, rep.failures) == "failures of m.csv"  # the page drawn again
    other = validate_results(df.assign(status=["ok", "ok", "CompileFailedConfig", "ok"]), SPACE).failures
    assert ws.record_failures("m.csv", SPACE.name, other) == "failures of m.csv (2)"  # another table, same name
    got = failed_points(ws, list(SPACE.parameter_names))
    assert len(got) == 2 and set(got["status"]) == {"failed"}
    assert sorted(got["error"]) == ["CompileFailedConfig", "RuntimeFailedConfig"]
    runtime = got.loc[got["error"] == "RuntimeFailedConfig", list(SPACE.parameter_names)]
    assert runtime.iloc[0].to_dict() == df[list(SPACE.parameter_names)].iloc[1].to_dict()


def test_cli_import(tmp_path, capsys):
    from gpudse_core.cli import main
    from gpudse_core.sim.store import CampaignStore

    df = results(10).astype({"simd": object})
    df.loc[3, "simd"] = 12
    df.loc[6, "cycles"] = np.nan
    src = tmp_path / "uploaded.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "clean.csv"
    assert main(["import", str(src), "--space", "stargazer", "--snap", "nearest", "--store", str(tmp_path / "c.db"),
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "kept 9 of 10 rows" in err and "snapped" in err and "rows 7" in err
    assert len(pd.read_csv(out)) == 9
    with CampaignStore(tmp_path / "c.db", name="import") as st:
        assert st.progress().done == 9 and len(st.table()) == 9
    assert main(["import", str(src), "--space", "stargazer", "--responses", "nope", "-o", str(out)]) == 2


def test_a_column_without_a_name_is_refused_and_a_saved_index_dropped():
    """An empty header cell became a column 'Unnamed: 1' offered as the response. A leading one holding
    0, 1, 2, … is pandas' saved index and is dropped; any other is refused, naming the column."""
    from gpudse_core.dataio import read_table_bytes
    from gpudse_core.errors import GpudseError

    df = read_table_bytes(b",blk,cycles\n0,1,10\n1,2,20\n2,4,30\n", "r.csv")
    assert list(df.columns) == ["blk", "cycles"] and df["cycles"].tolist() == [10, 20, 30]
    with pytest.raises(GpudseError, match=r"r\.csv: column\(s\) 2 have no name in the header row"):
        read_table_bytes(b"blk,,cycles\n1,5,10\n2,6,20\n", "r.csv")
    with pytest.raises(GpudseError, match=r"column\(s\) 1 have no name"):  # not 0, 1, 2: data, not an index
        read_table_bytes(b",blk,cycles\n7,1,10\n3,2,20\n", "r.csv")
