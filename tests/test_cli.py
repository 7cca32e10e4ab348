"""The gpudse command line: the issue's acceptance commands, outputs, and error handling."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from gpudse_core import load_preset
from gpudse_core.cli import main

from conftest import ROOT


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "gpudse_core", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=120)


def test_space_show_json_sizes_via_python_m():
    for preset, size in (("stargazer", 933120), ("lee-brooks", 937500000)):
        out = run("space", "show", preset, "--json")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["size"] == size
        assert all(set(p) >= {"name", "values"} for p in doc["parameters"])
    doc = json.loads(run("space", "show", "stargazer", "--json").stdout)
    assert [p["name"] for p in doc["parameters"]] == list(load_preset("stargazer").parameter_names)
    assert doc["parameters"][5]["values"] == [8, 16, 32]


def test_space_show_text(capsys):
    assert main(["space", "show", "stargazer"]) == 0
    out = capsys.readouterr().out
    assert "933,120 design points" in out and "#blk" in out and "pow2: 1..16" in out
    assert "Core clock frequency = 325 MHz" in out


def test_sample_csv(tmp_path, capsys):
    out = tmp_path / "samples.csv"
    assert main(["sample", "stargazer", "-n", "300", "--seed", "42", "-o", str(out)]) == 0
    df = pd.read_csv(out)
    space = load_preset("stargazer")
    assert list(df.columns) == list(space.parameter_names) and len(df) == 300
    assert not df.duplicated().any()
    for p in space.parameters:
        assert set(df[p.name]) <= set(p.values)
    assert "300 design points" in capsys.readouterr().err
    again = tmp_path / "again.csv"
    main(["sample", "stargazer", "-n", "300", "--seed", "42", "-o", str(again)])
    assert out.read_text() == again.read_text()


@pytest.mark.parametrize(
    "args, rows",
    [
        (["--fraction", "0.03%"], 280),
        (["--fraction", "0.0003"], 280),
        (["--per-dim-fraction", "0.5"], 3456),
        (["--per-dim-fraction", "0.5", "--per-dim-mode", "subgrid"], 3456),
        (["-n", "100", "--method", "lhs"], 100),
    ],
)
def test_sample_forms(tmp_path, args, rows):
    out = tmp_path / "s.parquet"
    assert main(["sample", "stargazer", *args, "--seed", "1", "-o", str(out)]) == 0
    assert len(pd.read_parquet(out)) == rows


def test_sample_with_index_json(tmp_path):
    out = tmp_path / "s.json"
    assert main(["sample", "lee-brooks", "-n", "10", "--seed", "3", "--with-index", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    space = load_preset("lee-brooks")
    for row in doc["points"]:
        idx = row.pop("design_index")
        assert space.point(idx) == row


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["space", "show", "nope.yaml"], "no such file"),
        (["space", "show", "stargzer"], "neither a file nor a preset"),
        (["sample", "stargazer", "-n", "2000000", "-o", "{tmp}/s.csv"], "only 933,120 points"),
        (["sample", "stargazer", "-n", "5", "-o", "{tmp}/missing/s.csv"], "does not exist"),
        (["sample", "stargazer", "-n", "5", "-o", "{tmp}/s.txt"], "unknown file type"),
        (["sample", "stargazer", "--fraction", "2", "-o", "{tmp}/s.csv"], "(0, 1]"),
    ],
)
def test_errors_are_one_line_without_traceback(tmp_path, capsys, args, fragment):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpudse: error: ") and fragment in err and "Traceback" not in err


def test_bad_space_file_through_subprocess(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("parameters:\n  - {name: simd, values: [8, 16, sixteen]}\n")
    out = run("space", "show", str(bad))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{bad}:2: parameters[0] (simd)" in out.stderr and "'sixteen' is not a number" in out.stderr


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sample", "stargazer", "-o", "x.csv"])  # no -n/--fraction/--per-dim-fraction
    assert e.value.code == 2
    assert "one of the arguments -n --fraction --per-dim-fraction is required" in capsys.readouterr().err


def test_export_round_trip(tmp_path):
    out = tmp_path / "space.yaml"
    assert main(["space", "export", "lee-brooks", "-o", str(out)]) == 0
    assert main(["space", "show", str(out), "--json"]) == 0
