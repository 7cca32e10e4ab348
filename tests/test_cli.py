"""The gpudse command line: the acceptance commands, outputs, and error handling."""

from __future__ import annotations

import json
import os
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


@pytest.fixture
def results_csv(tmp_path):
    import numpy as np

    pts = load_preset("stargazer")
    from gpudse_core import sample

    df = sample(pts, 300, seed=11).points
    rng = np.random.default_rng(5)
    df["cycles"] = 4e5 / df.simd * (1 + 3 / df.blk) + 800 * df.simd * np.log2(df.blk) + rng.normal(0, 1500, 300)
    path = tmp_path / "results.csv"
    df.to_csv(path, index=False)
    return path


def test_fit_prints_trace_and_json(results_csv, tmp_path, capsys):
    model = tmp_path / "model.json"
    assert main(["fit", str(results_csv), "--response", "cycles", "--preset", "stargazer", "--theta", "0.003",
                 "--phi", "0", "-o", str(model)]) == 0
    out = capsys.readouterr().out
    assert "final model" in out and "cycles = " in out
    lines = out.splitlines()  # Stargazer Table 1: a column per parameter, the accepted value in [brackets]
    head = next(i for i, s in enumerate(lines) if s.startswith("step  row"))
    assert lines[head].split()[2:5] == ["blk", "cc", "tc"] and "statistic" in lines[head]
    first = lines[head + 2]
    assert first.split()[:2] == ["1", "R²"] and first.count("[") == 1 and "added" in first
    assert any(s.split()[1:3] == ["adj.", "R²"] for s in lines[head + 3:] if s[:4].strip().isdigit())
    assert main(["fit", str(results_csv), "--response", "cycles", "--preset", "stargazer", "-o", str(model),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"terms", "r2", "adj_r2", "trace", "trace_table"}
    rows = doc["trace_table"]["rows"]
    assert rows[0]["label"] == "R²" and rows[0]["values"] == doc["trace"][0]["r2s"]  # the first row: R² alone
    assert rows[1]["values"] == doc["trace"][1]["adj_r2s"] and rows[1]["statistic"] == "gain"
    assert {"simd", "blk"} <= set(doc["terms"]) and any(t in doc["terms"] for t in ("blk:simd", "simd:blk"))
    assert doc["trace"][0]["metric"] == "r2" and 0.9 < doc["r2"] <= 1


def test_fit_options_and_predict(results_csv, tmp_path, capsys):
    model = tmp_path / "model.json"
    args = ["fit", str(results_csv), "--response", "cycles", "--params", "simd,blk,cc", "--transform", "log",
            "--criterion", "bic", "--knots", "5,simd=3", "--knot-placement", "quantile", "--interactions", "full",
            "-o", str(model), "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(t for term in doc["terms"] for t in term.split(":")) <= {"simd", "blk", "cc"}
    saved = json.loads(model.read_text())
    widths = {b["name"]: len(b.get("knots", [])) for b in saved["bases"]}
    assert widths.get("simd", 3) <= 3 and widths.get("blk", 5) <= 5
    preds = tmp_path / "pred.csv"
    assert main(["predict", str(model), str(results_csv), "-o", str(preds)]) == 0
    df = pd.read_csv(preds)
    truth = pd.read_csv(results_csv)
    assert "predicted" in df.columns and len(df) == 300
    assert (abs(df.predicted - truth.cycles) / truth.cycles).median() < 0.1


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["fit", "{tmp}/none.csv", "--response", "y", "-o", "{tmp}/m.json"], "no such file"),
        (["fit", "{data}", "--response", "cycle", "-o", "{tmp}/m.json"], "did you mean 'cycles'"),
        (["fit", "{data}", "--response", "cycles", "--params", "simd,bogus", "-o", "{tmp}/m.json"], "'bogus'"),
        (["fit", "{data}", "--response", "cycles", "-o", "{tmp}/m.csv"], "unknown file type"),
        (["fit", "{data}", "--response", "cycles", "--knots", "4,smdi=3", "-o", "{tmp}/m.json"], "'smdi'"),
        (["predict", "{tmp}/none.json", "{data}", "-o", "{tmp}/p.csv"], "no such model file"),
        # every count and share a request can drive is checked before the work
        (["validate", "{data}", "--response", "cycles", "--train-sizes", "20", "--test-size", "20", "--models",
          "regional", "--region", "nan"], "S+R region must be a share"),
        (["validate", "{data}", "--response", "cycles", "--train-sizes", "20", "--test-size", "20", "--models",
          "regional", "--region", "-1"], "S+R region must be a share"),
        (["validate", "{data}", "--response", "cycles", "--train-sizes", "20", "--test-size", "20",
          "--repeats", "100000000"], "validation_fits"),
        (["simulate", "{data}", "--workers", "100000", "-o", "{tmp}/o.csv"], "local_workers"),
        (["simulate", "{data}", "--noise", "1e300", "-o", "{tmp}/o.csv"], "from 0 to 1"),
        (["sample", "lee-brooks", "--per-dim-fraction", "0.6", "--per-dim-mode", "subgrid", "-o", "{tmp}/s.csv"],
         "table_cells"),
    ],
)
def test_fit_predict_errors(results_csv, tmp_path, capsys, args, fragment):
    args = [a.replace("{tmp}", str(tmp_path)).replace("{data}", str(results_csv)) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpudse: error: ") and fragment in err and "Traceback" not in err


# ---- the one error path ----------------------------------------------------------------------
def test_error_messages_cannot_drive_the_terminal(tmp_path, capsys):
    bad = tmp_path / "s.yaml"
    bad.write_text('parameters:\n  - {name: "a\\e[2J\\e]0;owned\\a", values: [1]}\n', encoding="utf-8")
    assert main(["space", "show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b[2J" in err


def test_output_escapes_what_the_terminal_cannot_encode(tmp_path):
    good = tmp_path / "s.yaml"
    good.write_text('parameters:\n  - {name: a, label: "α → β", values: [1, 2]}\n', encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "gpudse_core", "space", "show", str(good)], capture_output=True,
                         cwd=ROOT, timeout=120, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert out.returncode == 0 and b"Traceback" not in out.stderr and b"\\u03b1" in out.stdout


def test_a_closed_pipe_is_not_an_error(tmp_path):
    big = tmp_path / "big.yaml"  # about 1 MB of --json output: more than a pipe holds
    big.write_text("parameters:\n  - {name: a, values: '1::1::100000'}\n")
    reader = subprocess.Popen([sys.executable, "-m", "gpudse_core", "space", "show", str(big), "--json"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout.read(10) == b'{\n  "name"'
    reader.stdout.close()  # the reader goes away, as `| head` does
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=120) == 141 and "Traceback" not in err and "error" not in err


def test_programming_errors_keep_their_traceback(monkeypatch):
    """Only user errors become 'gpudse: error:'; a bug must stay visible (the corpus test relies on it)."""
    from gpudse_core.cli import space_cmds

    def broken(args):
        raise KeyError("a bug")

    monkeypatch.setattr(space_cmds, "cmd_space_show", broken)
    with pytest.raises(KeyError):
        main(["space", "show", "stargazer"])


def test_argument_types_refuse_non_finite_numbers(tmp_path, capsys):
    for args in (["--fraction", "nan"], ["--fraction", "inf%"], ["-n", "9" * 5000]):
        with pytest.raises(SystemExit) as e:
            main(["sample", "stargazer", *args, "-o", str(tmp_path / "s.csv")])
        assert e.value.code == 2
        assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["import", "x.csv", "--space", "stargazer", "--max-mb", "nan", "-o", str(tmp_path / "c.csv")])


def test_wfg_built_in_graph_by_name_from_any_folder(tmp_path):
    """README's `gpudse wfg figure1` works outside the checkout (the graph ships in the package);
    an unknown name is one error line naming the built-in graphs, exit 2."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "wfg", "figure1", "--json"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cyc_compute"] == 16.0
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "wfg", "no_such_graph"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 2 and "figure1, loop_branch" in r.stderr and "Traceback" not in r.stderr


def test_counts_of_zero_are_refused_by_the_argument_parser(tmp_path, capsys):
    for args in (["simulate", "x.csv", "--workers", "0", "-o", "o.csv"],
                 ["sample", "stargazer", "-n", "0", "-o", "s.csv"],
                 ["validate", "x.csv", "--response", "y", "--repeats", "0"]):
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 2 and "at least 1" in capsys.readouterr().err


def test_a_json_sample_longer_than_gpudse_reads_back_is_refused_and_not_left(tmp_path, capsys):
    from gpudse_core import limits

    out = tmp_path / "s.json"
    with limits.override(json_table_bytes=100_000):
        assert main(["sample", "stargazer", "-n", "2000", "--seed", "1", "-o", str(out)]) == 2
    assert "save them as .csv or .parquet" in capsys.readouterr().err and not out.exists()


def test_combine_refuses_what_it_cannot_combine_faithfully(tmp_path, capsys):
    block = "kernel_name = k\ngpu_sim_cycle = 1000\ngpu_sim_insn = 5000\ngpu_ipc = 5.0\n"
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(block)
    b.write_text(block)
    for args, fragment in ((["--fractions", "1e-320,0.5"], "not a finite number"),
                           (["--fractions", "0.5,0.5", "--aggregate", "nosuch=sum"], "'nosuch' that not every group"),
                           (["--fractions", "0.5,0.5", "--aggregate", "cycles=hmean", "--aggregate", "ipc=hmean"],
                            None)):
        code = main(["combine", str(a), str(b), *args])
        err = capsys.readouterr().err
        assert (code == 0) if fragment is None else (code == 2 and fragment in err), (args, err)
    assert main(["combine", str(a), str(a), "--fractions", "0.5,0.5"]) == 2
    assert "given twice" in capsys.readouterr().err


def test_fit_without_params_leaves_simulator_outputs_out(tmp_path, capsys):
    """A table straight from gpudse simulate: without --params, cycles_trimmed and ipc (outputs, not
    parameters) are not predictors — a model of cycles on them has R² 1 and says nothing."""
    from gpudse_core import sample
    from gpudse_core.sim.simulator import simulate

    pts = sample(load_preset("stargazer"), 150, seed=2).points
    data = pts.join(simulate(pts, "matMul", noise=0.01, seed=2))
    path = tmp_path / "r.csv"
    data.to_csv(path, index=False)
    model = tmp_path / "m.json"
    assert main(["fit", str(path), "--response", "cycles", "--max-order", "2", "-o", str(model), "--json"]) == 0
    cap = capsys.readouterr()
    terms = json.loads(cap.out)["terms"]
    used = {p for t in terms for p in t.replace(" (full)", "").split(":")}
    assert used <= set(load_preset("stargazer").parameter_names), terms
    assert "left out as simulator outputs: cycles_trimmed, ipc" in cap.err
    assert main(["fit", str(path), "--response", "cycles", "--space", "stargazer", "-o", str(model), "--json"]) == 0
    assert "parameters: the 10 of stargazer" in capsys.readouterr().err
