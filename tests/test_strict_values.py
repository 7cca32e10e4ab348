"""Values are never silently changed: YAML scalars that YAML 1.1 and 1.2 read differently are refused
with a message, numbers that underflow to 0 are reported, a name must end where its letters end,
GPGPU-Sim statistics are parsed strictly, and a work flow graph's branch probabilities sum to 1."""

from __future__ import annotations

import json

import pytest
from test_gpgpusim import KERNEL

from gpudse_core.errors import GpudseError
from gpudse_core.safeload import load_yaml
from gpudse_core.sim.gpgpusim import ParseError, parse_log
from gpudse_core.sim.wfg import WFGError, graph_view
from gpudse_core.space.presets import load_space_bytes


@pytest.mark.parametrize("scalar,pattern", [("no", "False in YAML 1.1"), ("yes", "True in YAML 1.1"),
                                            ("On", "True in YAML 1.1"), ("off", "False in YAML 1.1"),
                                            ("010", r"YAML 1\.1 \(8\)"), ("1:30", r"YAML 1\.1 \(90\)"),
                                            ("1_000", "YAML 1.1"), ("0b101", "YAML 1.1"), ("1:30.5", "YAML 1.1"),
                                            ("1.5e-400", "silently become 0")])
def test_yaml_scalars_read_differently_by_1_1_and_1_2_are_refused(scalar, pattern):
    with pytest.raises(GpudseError, match=pattern):
        load_yaml(f"a: [{scalar}]\n", "s.yaml")


def test_unambiguous_scalars_are_read_as_before():
    assert load_yaml("a: [true, False, 10, -3, 0, 0x1F, 1.5, 'no', '010', 0.0, 1e3]\n") == \
        {"a": [True, False, 10, -3, 0, 31, 1.5, "no", "010", 0.0, "1e3"]}


def space(values: str, name: str = "a") -> bytes:
    return f"name: s\nparameters:\n  - {{name: {json.dumps(name)}, values: {values}}}\n".encode()


def test_underflowing_values_and_names_with_a_line_break_are_refused():
    with pytest.raises(GpudseError, match="silently become 0"):
        load_space_bytes(space("['1e-400', 1]"), "s.yaml")
    assert load_space_bytes(space("['0e-400', 1]"), "s.yaml").parameters[0].values[0] == 0
    with pytest.raises(GpudseError, match="not usable"):
        load_space_bytes(space("[1, 2]", "a\n"), "s.yaml")


def log(cycles: str) -> str:
    return KERNEL.format(name="k", uid=1, cyc=cycles, insn=5000, ipc=5, tot=1000, l2=0.5, e1=0.4, b1=0.2, e2=0.6,
                         b2=0.4)


@pytest.mark.parametrize("bad", ["1,234,567", "1.5e3.7", "12abc"])
def test_gpgpusim_numbers_are_parsed_strictly(bad):
    with pytest.raises(ParseError, match="not a number as GPGPU-Sim writes"):
        parse_log("run.log", text=log(bad))
    assert parse_log("run.log", text=log("1500")).totals()["cycles"] == 1500


def wfg(p1: float, p2: float, divergent: bool = False) -> dict:
    arc = {"divergent": True} if divergent else {}
    return {"hardware": {"pipeline_latency": 24, "warp_size": 32, "simd_width": 8, "wlp_max": 16,
                         "bandwidth_bytes_per_cycle": 4, "memory_latency": 250},
            "kernel": {"nodes": [{"id": "C1", "type": "C", "insts": 1}, {"id": "A", "type": "C", "insts": 2},
                                 {"id": "B", "type": "C", "insts": 3}],
                       "arcs": [["entry", "C1"], {"from": "C1", "to": "A", "probability": p1, **arc},
                                {"from": "C1", "to": "B", "probability": p2, **arc}, ["A", "exit"], ["B", "exit"]]}}


def test_branch_probabilities_must_sum_to_one():
    with pytest.raises(WFGError, match="summing to 1.8"):
        graph_view(wfg(0.9, 0.9))
    graph_view(wfg(0.9, 0.1))
    graph_view(wfg(1.0, 1.0, divergent=True))  # both sides run: not alternatives


def test_new_ids_never_start_with_a_dash_and_old_ones_pass_after_double_dash(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import ROOT
    from gpudse_core.workspace import db as dbm

    assert not any(dbm.new_token().startswith("-") for _ in range(2000))  # ~31 would, one in 64
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUDSE_HOME": str(tmp_path)}
    made = subprocess.run([sys.executable, "-m", "gpudse_core", "workspace", "new", "--name", "dash"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    (path,) = (tmp_path / "workspaces").glob("*.db")
    old = "-" + path.stem[1:]
    con = __import__("sqlite3").connect(path)
    con.execute("UPDATE ws_meta SET id = ?", (old,))
    con.commit()
    con.close()
    path.rename(path.with_name(old + ".db"))
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "workspace", "show", "--", old], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "dash" in r.stdout, r.stderr


def test_a_true_false_column_is_never_a_response():


    import hostile_corpus as hc
    from gpudse_core.sim.upload import read_upload, validate_results
    from gpudse_core.space.presets import load_preset

    space_ = load_preset("stargazer")
    rep = validate_results(read_upload(hc.results_csv(extra={"ok": ["True", "False"]}), "r.csv"), space_)
    assert rep.responses == ["cycles"] and any(p.kind == "boolean columns" for p in rep.problems)
    with pytest.raises(GpudseError, match="True/False"):
        validate_results(read_upload(hc.results_csv(extra={"ok": ["True", "False"]}), "r.csv"), space_,
                         responses=["ok"])



def _values(vals):
    from gpudse_core.space.design import space_from_dict

    return space_from_dict({"parameters": [{"name": "a", "values": vals}]}, "s.yaml").parameters[0].values


def test_categorical_values_equal_after_nfc_normalisation_are_one_value_and_refused_twice():
    with pytest.raises(GpudseError, match=r"'caf\\xe9' and 'cafe\\u0301' are the same text once Unicode-normalised"):
        _values(["caf\u00e9", "cafe\u0301"])
    assert _values(["cafe\u0301", "tea"]) == ("caf\u00e9", "tea")  # stored in one form, matching a typed 'café'


def test_long_whole_numbers_never_collapse_into_one_value():
    a, b = "1" + "0" * 45 + "1", "1" + "0" * 45 + "2"  # one float (1e46) if read inexactly
    for spec in ([a, b], f"{a},{b}"):
        with pytest.raises(GpudseError, match=r"beyond the range of whole-number values"):
            _values(spec)
    assert _values([2 ** 60 + 1, 2 ** 60]) == (2 ** 60 + 1, 2 ** 60)  # distinct ints equal as floats stay two


def test_columns_equal_after_nfc_normalisation_are_refused_and_names_are_normalised():
    from gpudse_core.dataio import read_table_bytes

    with pytest.raises(GpudseError, match=r"r\.csv: column\(s\) 'café' \(written differently, 'cafe\\u0301', but the "
                                          r"same text once Unicode-normalised \(NFC\)\) appear more than once"):
        read_table_bytes("blk,caf\u00e9,cafe\u0301\n1,2,3\n".encode(), "r.csv")
    assert read_table_bytes("blk,cafe\u0301\n1,2\n".encode(), "r.csv").columns.tolist() == ["blk", "caf\u00e9"]


# ---- whole numbers beyond 2^53 beside decimals: one float for two values, on every path ----------------
BIG = 2 ** 53 + 1  # 9007199254740993: float64 holds it as 9007199254740992.0


@pytest.mark.parametrize("name,data", [
    ("s.yaml", b"parameters:\n  - {name: a, values: [9007199254740993, 9007199254740992.0]}\n"),
    ("s.json", b'{"parameters": [{"name": "a", "values": [9007199254740993, 9007199254740992.0]}]}'),
    ("s.yaml", b"parameters:\n  - {name: a, values: '9007199254740993, 0.5'}\n")])
def test_a_space_value_list_mixing_a_big_whole_number_and_decimals_is_refused(name, data):
    with pytest.raises(GpudseError, match=r"9007199254740993 is a whole number beyond 2\^53 in a list with decimal "
                                          r"values, where it would be held as .*9007199254740992\.0"):
        load_space_bytes(data, name)


def test_big_whole_numbers_stay_exact_in_a_space_its_samples_and_lookups():
    import numpy as np

    from gpudse_core.space.sampling import sample

    s = load_space_bytes(b"parameters:\n  - {name: a, values: [9007199254740992, 9007199254740993]}\n", "s.yaml")
    p = s.parameters[0]
    assert p.values == (BIG - 1, BIG) and p.array.dtype == np.int64
    assert p.position(BIG) == 1 and p.position(np.int64(BIG)) == 1 and p.position(BIG - 1) == 0
    assert p.position(float(BIG)) == 0  # the float 9007199254740992.0 is the smaller value, exactly
    assert p.position(8.0) is None and p.position(float("nan")) is None
    small = load_space_bytes(b"parameters:\n  - {name: a, values: [8, 16.0]}\n", "s.yaml").parameters[0]
    assert small.position(8.0) == 0 and small.position(16) == 1 and small.position(np.float64(16)) == 1
    got = sample(s, n=2, seed=1).points["a"].tolist()
    assert sorted(got) == [BIG - 1, BIG]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_results_column_with_a_decimal_point_keeps_big_whole_numbers_exact(fmt, tmp_path):
    from gpudse_core.sim.upload import read_upload, validate_results

    s = load_space_bytes(b"parameters:\n  - {name: a, values: [9007199254740992, 9007199254740993]}\n"
                         b"  - {name: b, values: [1, 2]}\n", "s.yaml")
    if fmt == "csv":
        data = b"a,b,cycles\n9007199254740993,1,10\n9007199254740992.0,1,20\n9007199254740993,2,30\n"
    else:
        data = json.dumps([{"a": BIG, "b": 1, "cycles": 10}, {"a": float(BIG - 1), "b": 1, "cycles": 20},
                           {"a": BIG, "b": 2, "cycles": 30}]).encode()
    df = read_upload(data, f"r.{fmt}")
    assert df["a"].tolist() == [BIG, BIG - 1, BIG]  # three rows, two distinct values of a, none merged
    res = validate_results(df, s)
    assert res.rows_kept == 3 and sorted(res.table["a"].tolist()) == [BIG - 1, BIG, BIG]


@pytest.mark.parametrize("name,data,pattern", [
    ("r.csv", b"a,cycles\n9007199254740993,1\n0.5,2\n", r"r\.csv: column 'a', row 1: 9007199254740993 is a whole "
                                                       r"number beyond 2\^53 in a column with decimal values"),
    ("r.csv", b"a,cycles\n9007199254740993,1\n,2\n", r"column 'a', row 1: 9007199254740993 .*empty cells"),
    ("r.json", b'[{"a": 9007199254740993, "cycles": 1}, {"a": 0.5, "cycles": 2}]',
     r"r\.json: column 'a': record 1 holds 9007199254740993.*record 2 the decimal 0\.5"),
    ("r.json", b'[{"a": 9007199254740993, "cycles": 1}, {"a": null, "cycles": 2}]', r"record 2 an empty cell")])
def test_a_big_whole_number_beside_real_decimals_or_gaps_in_a_table_is_refused(name, data, pattern):
    from gpudse_core.sim.upload import read_upload

    with pytest.raises(GpudseError, match=pattern):
        read_upload(data, name)


def test_a_measured_lookup_table_keeps_big_whole_numbers_apart():
    import pandas as pd

    from gpudse_core.sim.lookup import LookupTable, infer_space

    frame = pd.DataFrame({"a": [BIG, BIG - 1, BIG, BIG - 1], "b": [1, 1, 2, 2], "t": [10.0, 20.0, 30.0, 5.0]})
    space = infer_space(frame, ["a", "b"], "m.csv")
    assert space.parameters[0].values == (BIG - 1, BIG)
    table = LookupTable.from_frame(frame, "t", ["a", "b"], source="m.csv")
    assert table.space.parameters[0].values == (BIG - 1, BIG) and len(table.answers) == 4
    backend = table.backend()
    keys = {backend.key({"a": a, "b": b}) for a in (BIG, BIG - 1) for b in (1, 2)}
    assert len(keys) == 4 and None not in keys
    assert backend.key({"a": float(BIG), "b": 1}) == backend.key({"a": BIG - 1, "b": 1})  # the float is 2**53


@pytest.mark.parametrize("kind", ["stepwise", "paper", "forest", "auto"])
def test_a_true_false_response_is_refused_by_every_fit(tmp_path, kind, capsys):
    """pandas reads True/False cells as booleans; a model would fit them as 1/0 (the default stepwise
    fit once did, silently): every kind, the CLI's default path included, refuses such a response."""
    from gpudse_core.cli import main
    from gpudse_core.model.stepwise import FitError, fit_stepwise

    rows = [f"{a},{b},{'True' if (a + b) % 2 else 'False'}" for a in range(1, 7) for b in range(1, 7)]
    (tmp_path / "t.csv").write_text("a,b,y\n" + "\n".join(rows) + "\n")
    argv = ["fit", str(tmp_path / "t.csv"), "--response", "y", "--params", "a,b", "-o", str(tmp_path / "m.json")]
    if kind != "stepwise":
        argv += ["--model", kind]
    assert main(argv) == 2 and "holds True/False values" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
    import pandas as pd

    with pytest.raises(FitError, match="True/False"):
        fit_stepwise(pd.read_csv(tmp_path / "t.csv"), "y")


def test_a_table_cell_that_underflows_is_refused_naming_its_row_and_column():
    from gpudse_core.dataio import TableError, read_table_bytes

    with pytest.raises(TableError, match=r"t.csv: row 2, column 'y': '1.5E-400' is too small"):
        read_table_bytes(b"a,y\n1,0\n2,1.5E-400\n3,5e-200\n", "t.csv")
    # zeros written as zeros, tiny numbers a double holds, and exponents in text cells are kept
    df = read_table_bytes(b"a,y,note\n1,0,x1e-400\n2,0.0e-500,ok\n3,5e-200,\n", "t.csv")
    assert df.y.tolist() == [0.0, 0.0, 5e-200] and df.note.iloc[0] == "x1e-400"
