"""The MGPUSim case study's data file (data/mgpusim_study.csv) and the benchmark that draws its figures.

The file is real MGPUSim output (docs/mgpusim-study.md): it loads through the project's table loader, its
provenance names the versions and command lines, its rows keep the structure the simulator gave them (the
suite's mean is the geometric mean of the two benchmarks, the CUs are ``cu_per_sa × sa``), and every figure
of ``benchmarks/bench_mgpusim_study.py`` is drawn from it without a simulation.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
study_bench = pytest.importorskip("bench_mgpusim_study")
svg_chart = pytest.importorskip("svg_chart")

DATA = ROOT / "data" / "mgpusim_study.csv"


@pytest.fixture(scope="module")
def study():
    return study_bench.load_study(DATA)


def test_the_study_loads_with_complete_provenance(study):
    prov = study.provenance
    go_mod = (ROOT / "gpudse_core" / "_sims" / "mgpusim" / "go.mod").read_text(encoding="utf-8")
    module, version = prov["mgpusim_module"].split()
    assert re.search(rf"^\s*{re.escape(module)} {re.escape(version)}$", go_mod, re.M), "the go.mod MGPUSim version"
    assert re.fullmatch(r"[0-9a-f]{40}", prov["gpudse_commit"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", prov["gpudse_version"])
    assert set(prov["benchmarks"]) == {"fir", "aes"} and all(n >= 1024 for n in prov["benchmarks"].values())
    assert set(prov["commands"]) == set(study_bench.PARTS)
    assert all(any(c.startswith("gpudse ") for c in cmds) for cmds in prov["commands"].values())
    assert prov["started"] <= prov["finished"]
    sims = sum(p["simulations"] for p in prov["parts"].values())
    assert sims == 2 * len(study.table) and all(p["rows"] >= 3 for p in prov["parts"].values())
    assert prov["parts"]["campaign"]["rows"] <= prov["parts"]["campaign"]["planned"]


def test_the_rows_keep_the_simulators_structure(study):
    t = study.table
    from gpudse_core import load_preset

    space = load_preset("mgpusim")
    for p in space.parameters:
        assert set(t[p.name].unique()) <= set(p.values), p.name
    assert (t["cus"] == t["cu_per_sa"] * t["sa"]).all() and (t["cus"] <= 128).all()
    fir, aes = t["fir_kernel_exec_s"].to_numpy(float), t["aes_kernel_exec_s"].to_numpy(float)
    assert np.allclose(t["geomean_kernel_exec_s"], np.sqrt(fir * aes), rtol=1e-5)
    assert (t["fir_kernel_time_s"] > t["fir_kernel_exec_s"]).all()  # the launch's round trip comes on top
    # the default sizes fill the GPU: 512 fir and 256 aes work-groups whatever the design
    assert set(t["fir_work_groups"]) == {512} and set(t["aes_work_groups"]) == {256}
    assert t.loc[t["part"] == "campaign", "fir_verified"].iloc[0] == 1  # --verify checks the first point
    for part in study_bench.PARTS:
        assert list(study.part(part)["order"]) == list(range(1, len(study.part(part)) + 1)), part
    c = study.part("confirm")
    assert len(c) and (c["lower"] <= c["predicted"]).all() and (c["predicted"] <= c["upper"]).all()


def _copy(tmp_path):
    shutil.copyfile(DATA, tmp_path / DATA.name)
    shutil.copyfile(DATA.with_suffix(".json"), tmp_path / DATA.with_suffix(".json").name)
    return tmp_path / DATA.name


def test_incomplete_provenance_is_named(tmp_path):
    path = _copy(tmp_path)
    side = path.with_suffix(".json")
    prov = json.loads(side.read_text(encoding="utf-8"))
    del prov["mgpusim_module"]
    prov["gpudse_commit"] = ""
    side.write_text(json.dumps(prov), encoding="utf-8")
    with pytest.raises(study_bench.StudyDataError, match=r"mgpusim_study\.json.*gpudse_commit, mgpusim_module"):
        study_bench.load_study(path)
    side.unlink()
    with pytest.raises(study_bench.StudyDataError, match="provenance of mgpusim_study.csv is missing"):
        study_bench.load_study(path)


def test_a_row_of_no_known_part_is_named(tmp_path):
    path = _copy(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] = "guess" + lines[3][lines[3].index(","):]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(study_bench.StudyDataError, match="row 4: part 'guess'"):
        study_bench.load_study(path)


def test_the_figures_are_drawn_from_the_file_alone(study, tmp_path):
    res = study_bench.figures(study, tmp_path, sizes=[10, 15])
    names = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert names == [f"mgpusim-study-{n}.svg" for n in ("clock", "confirm", "cus", "error", "search")]
    for p in tmp_path.glob("*.svg"):
        assert ET.fromstring(p.read_text(encoding="utf-8")).tag.endswith("svg")
    assert "step" in res["trace"] and "added" in res["trace"]
    err = res["error"]
    assert list(err["k"]) == [10, 15]
    assert (err["rest_n"] == len(study.part("campaign")) - err["k"]).all()
    assert (err["random_n"] == len(study.part("random"))).all()
    for part, best in res["best"].items():
        assert (np.diff(best) <= 0).all(), part  # a best-so-far never rises
        y = study.part(part)[study_bench.RESPONSE].to_numpy(float)[: len(best)] * 1e6
        assert best[-1] == pytest.approx(y.min())
    conf = res["confirm"]
    sim = study.part("confirm")[study_bench.RESPONSE].to_numpy(float) * 1e6
    assert np.allclose(conf["simulated"], sim)
    text = study_bench.report(study, res)
    assert f"{len(study.table)} design points, {2 * len(study.table)} simulations" in text


def test_svg_chart_axes_and_text():
    assert svg_chart._ticks(16, 128, log=True) == [16, 32, 64, 128]
    assert svg_chart._ticks(0.0, 1.0, log=False) == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    svg = svg_chart.chart([svg_chart.Series("a <b>", [1, 2, 3], [3.0, float("nan"), 1.0])], "t & u", "x", "y")
    root = ET.fromstring(svg)
    texts = [e.text for e in root.iter() if e.tag.endswith("text")]
    assert "a <b>" in texts and "t & u" in texts
    assert len([e for e in root.iter() if e.tag.endswith("circle")]) == 2  # the NaN point is left out
    with pytest.raises(ValueError, match="no finite points"):
        svg_chart.chart([svg_chart.Series("a", [1.0], [float("inf")])], "empty", "x", "y")
