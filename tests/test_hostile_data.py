"""Hostile input to results tables, uploads, project zips and work flow graphs: fuzzed in
a memory-capped child process ("our error or a valid result, within a memory and time budget"),
plus the atomic project load of the dashboard (a bad zip changes nothing in the session)."""

from __future__ import annotations

import io
import json
import types
import zipfile

import numpy as np
import pandas as pd
import pytest
from bounded import bounded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostile_corpus as hc
from gpudse_core import limits
from gpudse_core.dataio import TableError, read_table, read_table_bytes
from gpudse_core.errors import GpudseError
from gpudse_core.workspace.project import Project, load_project, save_project
from gpudse_core.sim.upload import read_upload, validate_results
from gpudse_core.sim.wfg import WFGError, analyze, parse_wfg
from gpudse_core.space.design import DesignSpace, Parameter

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
SPACE = DesignSpace((Parameter("simd", (8, 16, 32)), Parameter("blk", (1, 2, 4, 8, 16))), name="h")


# ---- tables ---------------------------------------------------------------------------------------------
def check_table(df: pd.DataFrame) -> None:
    assert len(df) >= 1 and df.shape[1] >= 1
    assert all(isinstance(c, str) for c in df.columns) and len(set(df.columns)) == df.shape[1]


names = st.sampled_from(["simd", "blk", "cycles", " cycles", "ipc", "design_index", "config", "", "a,b", '"q"', "blk"])
cells = st.one_of(st.sampled_from(["8", "16", "32", "1", "4", "nan", "inf", "-inf", "", "x", "1e999", "9" * 400,
                                   '"a,b"', "\x00", "é"]), st.integers().map(str), st.floats().map(repr))


@bounded(mem_mb=4096, max_rss_mb=768, timeout=400)
@FUZZ
@given(st.lists(names, min_size=1, max_size=6), st.lists(st.lists(cells, max_size=7), max_size=12),
       st.sampled_from(["\n", "\r\n"]))
@pytest.mark.slow
def test_csv_fuzz(header, rows, newline):
    text = ",".join(header) + newline + "".join(",".join(r) + newline for r in rows)
    try:
        df = read_upload(text.encode(), "r.csv")
    except GpudseError:
        return
    check_table(df)
    try:
        rep = validate_results(df, SPACE)
    except GpudseError:
        return
    assert rep.rows_kept >= 1 and all(np.isfinite(rep.table[r]).all() for r in rep.responses)
    assert not set(rep.responses) & {"design_index", "config"}


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                     st.text(max_size=5)),
                           lambda ch: st.one_of(st.lists(ch, max_size=4), st.dictionaries(names, ch, max_size=4)),
                           max_leaves=20)


@pytest.mark.slow
@bounded(mem_mb=4096, max_rss_mb=768, timeout=400)
@FUZZ
@given(json_values)
def test_json_table_fuzz(doc):
    try:
        df = read_table_bytes(json.dumps(doc).encode(), "r.json")
    except GpudseError:
        return
    check_table(df)


def parquet_of(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


GOOD_PARQUET = parquet_of(pd.DataFrame({"simd": [8, 16, 32], "blk": [1, 2, 4], "cycles": [1.0, 2.0, 3.0]}))


@bounded(mem_mb=4096, max_rss_mb=768, timeout=400)
@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(GOOD_PARQUET) - 1), st.integers(0, 255)), max_size=6),
       st.integers(0, len(GOOD_PARQUET)))
@pytest.mark.slow
def test_parquet_byte_mutation_fuzz(edits, cut):
    data = bytearray(GOOD_PARQUET)
    for pos, val in edits:
        data[pos] = val
    try:
        df = read_upload(bytes(data[:cut] if cut else data), "r.parquet")
    except GpudseError:
        return
    check_table(df)


def test_duplicated_columns_refused_in_every_format():
    csv = b"simd,blk,cycles,blk\n8,1,5,2\n"
    with pytest.raises(TableError, match=r"'blk' appear more than once"):
        read_upload(csv, "r.csv")
    with pytest.raises(GpudseError, match="appears twice"):
        read_upload(b'[{"simd": 8, "blk": 1, "blk": 2}]', "r.json")
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["blk", "blk"]), buf)
    with pytest.raises(TableError, match=r"'blk' appear more than once"):
        read_upload(buf.getvalue(), "r.parquet")


def test_constant_infinite_and_reserved_responses_are_flagged():
    df = pd.DataFrame({"simd": [8, 16, 32, 8], "blk": [1, 1, 1, 2], "cycles": [5.0, 5.0, 5.0, 5.0],
                       "ipc": [1.0, np.inf, 2.0, 3.0], "design_index": [0, 1, 2, 3]})
    rep = validate_results(df, SPACE)
    kinds = {p.kind: p for p in rep.problems}
    assert rep.responses == ["cycles", "ipc"] and rep.rows_kept == 3
    assert kinds["infinite response"].rows == [2] and "constant response" in kinds
    assert "design_index" in kinds["reserved columns"].message
    named = validate_results(df, SPACE, responses=["cycles", "design_index"])
    assert named.responses == ["cycles"] and any(p.kind == "reserved columns" for p in named.problems)
    with pytest.raises(GpudseError, match="no numeric response"):
        validate_results(df, SPACE, responses=["design_index"])
    with pytest.raises(GpudseError, match="parameters of the space"):
        validate_results(df, SPACE, responses=["simd"])


def test_table_limits_are_checked_before_parsing(tmp_path):
    with limits.override(table_columns=5):
        with pytest.raises(GpudseError, match="table_columns"):
            read_table_bytes(b"a,b,c,d,e,f\n1,2,3,4,5,6\n", "t.csv")
    with limits.override(table_rows=2):
        with pytest.raises(GpudseError, match="table_rows"):
            read_table_bytes(b"a\n1\n2\n3\n4\n", "t.csv")
        with pytest.raises(GpudseError, match="table_rows"):
            read_table_bytes(GOOD_PARQUET, "t.parquet")  # 3 rows, from the footer
    big = tmp_path / "big.csv"
    big.write_bytes(b"a\n" + b"1\n" * 1000)
    with limits.override(table_bytes=100):
        with pytest.raises(GpudseError, match="table_bytes"):
            read_table(big)


# ---- project zips -------------------------------------------------------------------------------------------
PARTS = {
    "manifest.json": [hc.MANIFEST, b"[]", b'{"schema": "gpudse.project/1", "response": 5}', b"{", b"\xff"],
    "space.yaml": [hc.SPACE_YAML, b"fixed: 7\n", hc.space(tail=hc.laughs(9, 9)), b"- 1\n", b"[" * 200],
    "samples.json": [hc.samples_doc([{"simd": 8, "blk": 1}]), b"[1]", hc.samples_doc([{"simd": 12, "blk": 1}]),
                     b'{"points": [{"simd": 8}]}', b'{"meta": [], "points": []}'],
    "results.csv": [hc.RESULTS_CSV, b"simd,blk,blk\n8,1,1\n", b"x\n1\n", b""],
    "settings.json": [b"{}", b"[1]", b'{"a": {"b": [1, 2]}}'],
    "model.json": [b'{"schema": "gpudse.model/1"}', b"7"],
}


@bounded(mem_mb=4096, max_rss_mb=1024, timeout=600)
@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(PARTS) + ["extra.txt", "../x", "/abs"]), st.integers(0, 4), max_size=7),
       st.lists(st.tuples(st.sampled_from(["flags", "method", "crc", "size"]), st.integers(0, 2**32 - 1)), max_size=2),
       st.booleans())
@pytest.mark.slow
def test_project_zip_fuzz(choice, header_edits, truncate):
    entries = []
    for name, i in choice.items():
        pool = PARTS.get(name, [b"x"])
        entries.append(hc.entry(name, pool[i % len(pool)]))
    for j, (field, value) in enumerate(header_edits):
        if entries:
            e = entries[j % len(entries)]
            e[field] = value % (1 << 16) if field in ("flags", "method") else value
    data = hc.raw_zip(entries)
    if truncate:
        data = data[: len(data) // 2]
    try:
        proj = load_project(data, "p.zip")
    except GpudseError:
        return
    assert isinstance(proj.space, DesignSpace)
    if proj.sample_set is not None:
        assert proj.space.feasible_mask(proj.space.decode(proj.sample_set.indices)).all()


def test_project_round_trip_keeps_validated_samples():
    from gpudse_core.space.sampling import sample

    s = sample(SPACE, 5, seed=2)
    proj = load_project(save_project(Project(SPACE, json.loads(s.to_json()), settings={"a": 1})))
    assert proj.sample_set is not None and proj.sample_set.indices.tolist() == s.indices.tolist()
    again = load_project(save_project(Project(SPACE, sample_set=proj.sample_set)))
    assert again.sample_set.points.equals(s.points)


def test_streamed_size_is_counted_not_declared():
    bomb, crc = hc.deflate_zeros(20 << 20, b" ")  # declared honestly below the cap, but 20 MB > 1 MB
    data = hc.raw_zip([hc.entry("manifest.json", hc.MANIFEST),
                       {"name": "space.yaml", "data": bomb, "crc": crc, "size": 1 << 20}])
    with limits.override(document_bytes=2 << 20), pytest.raises(GpudseError, match="damaged|document_bytes"):
        load_project(data, "p.zip")
    data = hc.raw_zip([hc.entry("manifest.json", hc.MANIFEST),
                       {"name": "space.yaml", "data": bomb, "crc": crc, "size": 20 << 20}])
    with limits.override(document_bytes=30 << 20, archive_total_bytes=4 << 20), \
            pytest.raises(GpudseError, match="archive_total_bytes"):
        load_project(data, "p.zip")


@pytest.mark.slow
def test_bad_project_leaves_the_workspace_untouched(tmp_path):
    """Every partial-state case of the corpus (and a few more): import_project raises our error and
    the workspace's space, samples, results and model are exactly the versions they were."""
    from gpudse_core.workspace import create_workspace, import_project

    w, _key = create_workspace("hostile", root=tmp_path)
    good = hc.project(samples_json=hc.samples_doc([{"simd": 8, "blk": 1}]))
    import_project(w, good, "good.zip")
    stages = ("space", "samples", "results", "model")

    def state():
        return {s: (w.get(s).version, w.get(s).ok) for s in stages}

    before = state()
    assert w.get("space").value.name == "h" and len(w.get("samples").value) == 1 and w.get("results").ok
    bad = [c for c in hc.cases() if c.surface == "project" and c.expect == "error"]
    assert sum(c.cls == "partial-state" for c in bad) >= 10
    for case in bad:
        with pytest.raises(GpudseError):
            import_project(w, case.data, case.filename)
        assert state() == before, case.name  # no new version of any stage


def test_parse_upload_routes_through_safeload(monkeypatch):
    from dashboard import frame as ui

    errors: list[str] = []
    monkeypatch.setattr(ui, "st", types.SimpleNamespace(error=lambda text, **kw: errors.append(text)))
    up = types.SimpleNamespace(name="g.yaml", size=len(hc.laughs(9, 9)), getvalue=lambda: hc.laughs(9, 9).encode())
    assert ui.parse_upload(up) is None and "expands to more than" in errors[-1]
    data = hc.wfg()
    up = types.SimpleNamespace(name="g.json", size=len(data), getvalue=lambda: data)
    assert ui.parse_upload(up)["hardware"]["warp_size"] == 32


# ---- work flow graphs ----------------------------------------------------------------------------------
node = st.fixed_dictionaries({"id": st.sampled_from(["C1", "C2", "M", "B", "S", 5]),
                              "type": st.sampled_from(["C", "M", "S", "B", "X", 3])},
                             optional={"insts": st.one_of(st.integers(-1, 10**6), st.floats()),
                                       "bytes": st.one_of(st.integers(-1, 64), st.floats()),
                                       "conflicts": st.floats()})
arc = st.one_of(st.lists(st.sampled_from(["entry", "exit", "C1", "C2", "M", "B", "S"]), min_size=2, max_size=2),
                st.fixed_dictionaries({"from": st.sampled_from(["entry", "C1", "C2", "M"]),
                                       "to": st.sampled_from(["exit", "C1", "C2", "M"])},
                                      optional={"probability": st.floats(), "iterations": st.floats(),
                                                "divergent": st.booleans()}))


@bounded(mem_mb=4096, max_rss_mb=768, timeout=400)
@FUZZ
@given(st.lists(node, max_size=6), st.lists(arc, max_size=10),
       st.lists(st.lists(st.sampled_from(["M", "C1", "C2"]), min_size=2, max_size=2), max_size=2),
       st.dictionaries(st.sampled_from(list(hc.WFG_GOOD["hardware"]) + ["active_blocks"]),
                       st.one_of(st.integers(-5, 10**9), st.floats()), max_size=7))
@pytest.mark.slow
def test_wfg_fuzz(nodes, arcs, deps, hw):
    doc = {"hardware": {**hc.WFG_GOOD["hardware"], **hw}, "kernel": {"nodes": nodes, "arcs": arcs,
                                                                     "dependences": deps}}
    try:
        res = analyze(parse_wfg(json.dumps(doc).encode(), "g.json"))
    except (WFGError, GpudseError):
        return
    assert all(np.isfinite(v) for k, v in res.to_dict().items() if isinstance(v, float))


def test_wfg_size_limit_and_finite_numbers():
    with pytest.raises(GpudseError, match="wfg_elements"):
        parse_wfg(hc.wfg(kernel__nodes=[{"id": f"C{i}", "type": "C"} for i in range(500)]), "g.json")
    with pytest.raises(WFGError, match="finite"):
        analyze(parse_wfg(b"{hardware: {pipeline_latency: .nan}, kernel: {}}", "g.yaml"))


def test_zip_from_zipfile_with_directory_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", hc.MANIFEST)
        zf.writestr("space.yaml", hc.SPACE_YAML)
        zf.mkdir("results") if hasattr(zf, "mkdir") else zf.writestr("results/", b"")
    with pytest.raises(GpudseError, match="unexpected entry 'results/'"):
        load_project(buf.getvalue())


def test_a_whole_number_beyond_the_float_range_is_refused_not_a_crash():
    """A 400-digit numeral in a CSV cell arrives from pandas as a Python int, on which pandas' own
    numeric conversion raised OverflowError; found by test_csv_fuzz. Like every whole number beyond
    int64 it is refused, naming its row and column (docs/limits.md), instead of becoming a float."""
    names = list(SPACE.parameter_names)
    good = [str(p.values[0]) for p in SPACE.parameters]
    text = ",".join([*names, "cycles"]) + "\n" + ",".join([*good, "9" * 400]) + "\n" + ",".join([*good, "100"]) + "\n"
    with pytest.raises(TableError, match=r"r\.csv: row 1, column 'cycles': 9+…9+ \(400 digits\) is a whole number "
                                         r"beyond the 64-bit integer range"):
        read_upload(text.encode(), "r.csv")
