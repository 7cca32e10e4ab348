"""`gpudse explore`: the JSON contract, output files, --where/--pareto/--maximize, errors, start-up."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.cli import main
from gpudse_core.explore.best import find_best
from gpudse_core.model.stepwise import StepwiseModel, fit_stepwise
from gpudse_core.sim.simulator import simulate

from test_startup import HEAVY, _loaded

SPACE = load_preset("stargazer")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    pts = sample(SPACE, 300, seed=1).points
    data = pts.assign(cycles=simulate(pts, "matMul").cycles)
    path = tmp_path_factory.mktemp("m") / "model.json"
    fit_stepwise(data, "cycles", transform="log").save(path)
    return path


def explore_json(capsys, *args) -> dict:
    assert main(["explore", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_best_first(model_file, capsys):
    doc = explore_json(capsys, model_file, "stargazer", "--top", "7")
    assert list(doc)[:4] == ["space_size", "evaluated", "method", "best"]
    assert doc["space_size"] == 933_120 and doc["method"] == "exact" and doc["evaluated"] < 1000
    assert len(doc["best"]) == 7
    for row in doc["best"]:  # the design's parameters and prediction first (the earlier contract), then the group
        assert list(row)[:len(SPACE.parameter_names) + 1] == [*SPACE.parameter_names, "predicted"]
        assert {"lower", "upper", "designs", "simulated", "measured", "any", "values"} <= set(row)
        assert row["lower"] < row["predicted"] < row["upper"]
    preds = [r["predicted"] for r in doc["best"]]
    assert preds == sorted(preds)
    model = StepwiseModel.load(model_file)
    used = doc["used"]
    assert used == model.parameters and len(used) < len(SPACE.parameter_names)
    # k distinct rows: no two share the values of every parameter the model reads
    assert len({tuple(r[p] for p in used) for r in doc["best"]}) == 7
    free = [p for p in SPACE.parameter_names if p not in used]
    sizes = {p: SPACE.parameter(p).size for p in free}
    for r in doc["best"]:  # the space is unconstrained: each row stands for every value of the others
        assert r["any"] == free and r["values"] == {} and r["designs"] == int(np.prod(list(sizes.values())))
    ref = find_best(model, SPACE, top=7, distinct=True)
    assert preds == ref.best.predicted.tolist()
    assert [r["blk"] for r in doc["best"]] == ref.best.blk.tolist()
    # each design's prediction is what `gpudse predict` gives for it
    np.testing.assert_array_equal(model.predict(pd.DataFrame(doc["best"])[list(SPACE.parameter_names)]), preds)


def test_maximize_where_and_pareto(model_file, capsys):
    doc = explore_json(capsys, model_file, "stargazer", "--top", "5", "--maximize", "--where", "simd * blk <= 32",
                       "--pareto", "simd * blk")
    preds = [r["predicted"] for r in doc["best"]]
    assert preds == sorted(preds, reverse=True)
    assert all(r["simd"] * r["blk"] <= 32 for r in doc["best"] + doc["pareto"])
    front = doc["pareto"]
    costs = [r["cost"] for r in front]
    assert costs == sorted(costs) and [r["cost"] for r in front] == [r["simd"] * r["blk"] for r in front]
    # maximising: along the front a higher cost buys a higher prediction
    assert [r["predicted"] for r in front] == sorted(r["predicted"] for r in front)
    assert doc["feasible"] == 933_120 * 6 // 15  # 6 of the 15 (simd, blk) pairs


def test_output_files(model_file, tmp_path, capsys):
    out = tmp_path / "best.csv"
    assert main(["explore", str(model_file), "stargazer", "--top", "4", "--pareto", "blk", "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert "method exact" in text.out and "Pareto front against blk" in text.out
    best = pd.read_csv(out)
    assert len(best) == 4 and {"predicted", "design_index"} <= set(best.columns)
    assert [SPACE.index(r) for r in best[list(SPACE.parameter_names)].to_dict(orient="records")] == \
        best.design_index.tolist()
    front = pd.read_csv(tmp_path / "best_pareto.csv")
    assert front.cost.is_monotonic_increasing and (front.cost == front.blk).all()


@pytest.mark.parametrize("args, fragment", [
    (["{model}", "zatel"], "which space 'zatel' does not have"),
    (["{tmp}/none.json", "stargazer"], "no such model file"),
    (["{model}", "stargazer", "--where", "simd >>> 2"], "--where"),
    (["{model}", "stargazer", "--where", "simd > 64"], "no design of space 'stargazer' satisfies it"),
    (["{model}", "stargazer", "--pareto", "nosuch"], "unknown name 'nosuch'"),
    (["{model}", "stargazer", "--top", "0"], "--top 0 asks for no designs"),
    (["{model}", "stargazer", "-o", "{tmp}/best.txt"], "unknown file type"),
])
def test_errors_exit_2_with_a_message(model_file, tmp_path, capsys, args, fragment):
    argv = [a.format(model=model_file, tmp=tmp_path) for a in args]
    assert main(["explore", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpudse: error: ") and fragment in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [("explore", "--help"), ("explore",), ("explore", "m.json")])
def test_explore_help_and_argument_errors_import_nothing_heavy(argv):
    heavy = _loaded(*argv) & set(HEAVY)
    assert not heavy, f"gpudse {' '.join(argv)} imported {sorted(heavy)}"


def test_top_0_with_pareto_gives_the_front_alone(model_file, tmp_path, capsys):
    out = tmp_path / "best.csv"
    assert main(["explore", str(model_file), "stargazer", "--top", "0", "--pareto", "simd * blk", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Pareto front against simd * blk" in text and "designs with the lowest" not in text
    assert not out.exists() and len(pd.read_csv(tmp_path / "best_pareto.csv")) >= 2


@pytest.mark.slow
def test_progress_in_a_log_has_no_carriage_returns(model_file, tmp_path):
    """stderr redirected to a file (a batch job): plain lines, no \\r or terminal escapes."""
    import subprocess
    import sys

    from conftest import ROOT

    log = tmp_path / "err.log"
    with open(log, "w") as fh:
        r = subprocess.run([sys.executable, "-m", "gpudse_core", "explore", str(model_file), "stargazer", "--top", "3"],
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=fh, timeout=120)
    assert r.returncode == 0
    text = log.read_text()
    assert "cells (100 %)" in text and "\r" not in text and "\033" not in text


def same_group(row: dict, other: dict) -> bool:
    """Two rows of best designs are one group: the same values of the parameters the model reads, and the same
    prediction. Scans asked for different numbers of groups predict tables of different lengths in one
    matrix product each, and BLAS may round a row differently with the rows around it (seen in the 15th
    digit with newer wheels): the prediction agrees to rounding (1e-12 relative), not to the last bit."""
    used = [p for p in SPACE.parameter_names if p not in row["any"]]
    return (row["any"] == other["any"] and {p: row[p] for p in used} == {p: other[p] for p in used}
            and row["predicted"] == pytest.approx(other["predicted"], rel=1e-12))


def test_results_mark_simulated_groups_and_exclude_simulated_leaves_them_out(model_file, tmp_path, capsys):
    plain = explore_json(capsys, model_file, "stargazer", "--top", "3")["best"]
    first = {p: plain[0][p] for p in SPACE.parameter_names}
    other = dict(first, **{p: SPACE.parameter(p).values[-1] for p in plain[0]["any"]})  # same group, other design
    failed = {p: plain[1][p] for p in SPACE.parameter_names}
    res = tmp_path / "res.csv"
    pd.DataFrame([dict(first, cycles=1000.0), dict(other, cycles=2000.0), dict(failed, cycles=None)]).to_csv(res,
                                                                                                       index=False)
    marked = explore_json(capsys, model_file, "stargazer", "--top", "3", "--results", res)
    assert marked["best"][0]["simulated"] == 2 and marked["best"][0]["measured"] == 1500.0
    assert same_group(marked["best"][1], plain[2])  # the failed group is left out
    assert marked["left_out"] == 1
    fresh = explore_json(capsys, model_file, "stargazer", "--top", "3", "--exclude-simulated", res)
    assert same_group(fresh["best"][0], plain[2]) and fresh["left_out"] == 2
    assert all(r["simulated"] == 0 for r in fresh["best"])
    assert main(["explore", str(model_file), "stargazer", "--top", "3", "--results", str(res)]) == 0
    text = capsys.readouterr().out
    assert "any" in text and "95 % interval (cycles)" in text and "measured (cycles)" in text
    assert "True" not in text and "False" not in text


def test_failed_configurations_an_import_kept_are_never_recommended(model_file, tmp_path, capsys):
    """A measured table's failed rows (status not ok) go through gpudse import to *_failed.csv; explore
    --failed leaves out the group holding one, as it does a failed simulation in --results."""
    plain = explore_json(capsys, model_file, "stargazer", "--top", "3")["best"]
    first = {p: plain[0][p] for p in SPACE.parameter_names}
    ran = {p: plain[1][p] for p in SPACE.parameter_names}
    src = tmp_path / "measured.csv"
    pd.DataFrame([dict(first, cycles=None, status="RuntimeFailedConfig"), dict(ran, cycles=1000.0, status="ok"),
                  dict(ran, cycles=1100.0, status="ok")]).to_csv(src, index=False)
    assert main(["import", str(src), "--space", "stargazer", "-o", str(tmp_path / "r.csv")]) == 0
    capsys.readouterr()
    got = explore_json(capsys, model_file, "stargazer", "--top", "2", "--results", tmp_path / "r.csv",
                       "--failed", tmp_path / "r_failed.csv")
    assert got["left_out"] == 1 and same_group(got["best"][0], plain[1]) and same_group(got["best"][1], plain[2])
    assert got["best"][0]["simulated"] == 2
    assert main(["explore", str(model_file), "stargazer", "--failed", str(tmp_path / "r.csv")]) == 2
    assert "no status column" in capsys.readouterr().err
