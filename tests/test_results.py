"""Typed analysis results: the workspace reads each registered analysis (best designs, true error,
heatmap, validation) as its class, reads the forms earlier versions stored (the dashboard's dicts and
the core scan's SpaceScan), and turns a damaged or forged stored value into a named Damaged state —
on the Explore page, in the report and through the API — never an AttributeError or a TypeError."""

from __future__ import annotations

import functools
import sqlite3

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from gpudse_core import load_preset
from gpudse_core.explore.results import ScanResult
from gpudse_core.explore.scan import SpaceScan
from gpudse_core.model.true_error import TrueError
from gpudse_core.raytrace.result import HeatmapResult
from gpudse_core.workspace import (
    Damaged,
    StageError,
    codec,
    create_workspace,
    fill_example,
    open_workspace,
    report_contents,
    result_class,
    start_scan,
)
from gpudse_core.workspace.results import RESULT_TYPES

# the record the dashboard stored for a scan before ScanResult existed (dashboard/work.py's keys)
DASHBOARD_SCAN_KEYS = {"best", "shown", "used", "level", "left_out", "pareto", "space_size", "feasible", "evaluated",
                       "method", "complete", "notes", "cloud", "request"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path


def best_table(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame({"blk": [64, 128, 256, 512][:n], "simd": [8, 16, 32, 32][:n],
                         "predicted": [100.0, 110.0, 125.0, 140.0][:n]})


def write_raw(ws, stage: str, value) -> None:
    """Replace the stored bytes of *stage*'s current version with *value* encoded by the codec: what
    an earlier version of gpudse (or a hand-edited file) left on disk."""
    fmt, blob = codec.encode(value)
    con = sqlite3.connect(ws.path)
    con.execute("UPDATE ws_stage SET format = ?, value = ? WHERE stage = ? AND version = "
                "(SELECT version FROM ws_head WHERE stage = ?)", (fmt, blob, stage, stage))
    con.commit()
    con.close()


def placeholder(stage: str):
    """A valid value of the analysis *stage* (stored before the raw value replaces its bytes)."""
    from gpudse_core.model.per_application import AppModels
    from gpudse_core.model.validation import ValidationResult

    return {"scan": lambda: ScanResult(best=best_table()),
            "true_error": lambda: TrueError("BFS", 3, 0.1, 0.1, 0.2, 0.3),
            "heatmap": lambda: HeatmapResult("t", np.zeros((2, 2))),
            "comparison": lambda: {"runs": [old_run("a", 1), old_run("b", 2)]},
            "app_models": lambda: AppModels({"x": tiny_model()}),
            "validation": lambda: ValidationResult("cycles", "log", [10], 5, 1, ["stepwise"],
                                                   {"stepwise": {10: np.ones(5)}})}[stage]()


def stored_then_read(home, stage: str, value):
    """A fresh handle's reading of *value* stored raw as *stage* (a valid version first)."""
    ws, k = create_workspace("typed")
    ws.set_space(load_preset("stargazer"), "preset")  # the report speaks about a design space
    ws.put_analysis(stage, placeholder(stage), inputs=[])
    write_raw(ws, stage, value)
    ws.close()
    return open_workspace(ws.id, k)


@functools.cache
def tiny_model():
    """A stepwise fit of cycles = 50 + 3·blk + noise (a fitted model to store)."""
    from gpudse_core.model.stepwise import fit_stepwise

    rng = np.random.default_rng(1)
    blk = rng.choice([1, 2, 4, 8, 16], 40)
    return fit_stepwise(pd.DataFrame({"blk": blk, "cycles": 50 + 3 * blk + rng.normal(0, 1, 40)}), "cycles",
                        robust="none")


def test_every_registered_result_names_its_stage_and_has_a_stored_form():
    assert set(RESULT_TYPES) == {"scan", "true_error", "heatmap", "validation", "comparison", "app_models",
                                 "search", "check"}
    for stage in RESULT_TYPES:
        cls = result_class(stage)
        assert cls.STAGE == stage and callable(cls.from_stored) and callable(cls.to_stored)
    assert result_class("my_notes") is None  # an analysis a caller names stays plain data


def test_a_scan_result_stores_the_dashboards_record_and_reads_it_back(home):
    cloud = pd.DataFrame({"predicted": [1.0, 2.0], "cost": [0.5, 1.5]})
    r = ScanResult(best=best_table(), shown=best_table(2), used=["blk", "simd"], level=0.95, left_out=1,
                   pareto=best_table(2).assign(cost=[1.0, 0.5]), space_size=1000, feasible=900, evaluated=40,
                   method="exact", notes=["a note"], cloud=cloud, request={"k": 4, "maximize": False, "cost": "levels"})
    assert set(r.to_stored()) == DASHBOARD_SCAN_KEYS
    ws, key = create_workspace("scan")
    ws.put_analysis("scan", r, inputs=[])
    ws.close()
    back = open_workspace(ws.id, key).get("scan").value
    assert isinstance(back, ScanResult)
    assert (back.used, back.level, back.left_out, back.space_size, back.feasible, back.evaluated, back.method) == \
        (["blk", "simd"], 0.95, 1, 1000, 900, 40, "exact")
    assert back.designs == 900 and back.cost == "levels" and not back.maximize and back.notes == ["a note"]
    pd.testing.assert_frame_equal(back.best, r.best)
    pd.testing.assert_frame_equal(back.cloud, cloud)


def test_the_dict_forms_earlier_versions_stored_read_as_the_classes(home):
    """A workspace written before the classes existed opens: its scan, true error and heatmap dicts
    become ScanResult, TrueError and HeatmapResult with the stored values."""
    old_scan = {"best": best_table(), "pareto": best_table(2).assign(cost=[2.0, 1.0]), "request": {"cost": "simd"}}
    scan = stored_then_read(home, "scan", old_scan).get("scan").value
    assert isinstance(scan, ScanResult) and scan.cost == "simd" and scan.shown is None and scan.used == []
    assert scan.best.predicted.tolist() == [100.0, 110.0, 125.0, 140.0] and len(scan.pareto) == 2

    q = np.linspace(0, 0.3, 1001)
    old_true = {"kernel": "BFS", "points": 10, "space_points": 10, "mean": 0.05, "median": 0.04, "p98": 0.2,
                "max": 0.3, "quantiles": q}
    true = stored_then_read(home, "true_error", old_true).get("true_error").value
    assert isinstance(true, TrueError) and (true.kernel, true.points, true.p98, true.max) == ("BFS", 10, 0.2, 0.3)
    assert np.array_equal(true.quantiles, q)
    assert true.table().iloc[0].to_dict() == {"kernel": "BFS", "points": 10, "mean": 0.05, "median": 0.04,
                                              "p98": 0.2, "max": 0.3}

    cost = np.arange(12.0).reshape(3, 4)
    old_heat = {"source": "built-in ray caster", "request": {"size": 4, "spheres": 2, "boxes": 1, "seed": 3},
                "cost": cost, "image": np.zeros((3, 4, 3)), "rgb": None}
    heat = stored_then_read(home, "heatmap", old_heat).get("heatmap").value
    assert isinstance(heat, HeatmapResult) and not heat.uploaded and heat.request["spheres"] == 2
    assert np.array_equal(heat.cost, cost) and heat.image.shape == (3, 4, 3) and heat.rgb is None


def old_run(label: str, version: int) -> dict:
    """A run as report.compare.snapshot stored it before the Comparison class (a dict)."""
    return {"label": label, "workspace": "w", "workspace_id": "abc", "version": version, "kind": "stepwise",
            "origin": "fit", "results": "BFS on the built-in simulator", "kernel": "BFS", "noise": 0.01, "rows": 150,
            "response": "cycles", "headline": {"source": "leave-one-out", "value": 0.021, "interpolates": False,
                                               "note": None, "detail": "over 150 rows"},
            "r2": 0.98, "terms": 6, "errors": np.array([0.01, 0.02, 0.05]), "errors_source": "leave-one-out",
            "trend": None, "contributions": pd.DataFrame({"term": ["blk"], "gain": [0.9]}), "param": "simd",
            "curve": None}


def test_a_comparison_stored_as_a_dict_reads_as_runs_and_a_forged_run_is_damaged(home):
    from gpudse_core.report.comparison import Comparison

    old = {"runs": [old_run("a", 1), old_run("b", 2)], "param": "simd"}
    cmp = stored_then_read(home, "comparison", old).get("comparison").value
    assert isinstance(cmp, Comparison) and cmp.param == "simd" and [r.label for r in cmp.runs] == ["a", "b"]
    r = cmp.runs[1]
    assert (r.version, r.kernel, r.noise, r.terms, r.headline.value, r.headline.detail) == \
        (2, "BFS", 0.01, 6, 0.021, "over 150 rows")
    assert set(r.to_stored()) == set(old_run("x", 1))  # stored as before
    forged = {"runs": [old_run("a", 1), {**old_run("b", 2), "headline": {"value": "good"}}]}
    d = stored_then_read(home, "comparison", forged).get("comparison").value
    assert isinstance(d, Damaged) and "run 2's headline" in d.why and "'source' is missing" in d.why


def test_per_application_models_stored_as_a_mapping_read_as_app_models(home):
    from gpudse_core.model.per_application import AppModels

    model = tiny_model()
    apps = stored_then_read(home, "app_models", {"BFS": model, "AES": model}).get("app_models").value
    assert isinstance(apps, AppModels) and sorted(apps.models) == ["AES", "BFS"]
    assert apps.models["AES"].terms == model.terms and apps.describe() == "2 applications: AES, BFS"
    forged = stored_then_read(home, "app_models", {"BFS": "not a model"}).get("app_models").value
    assert isinstance(forged, Damaged) and "'BFS' is a str, not a fitted model" in forged.why


def test_a_space_scan_the_core_stored_earlier_reads_as_a_scan_result(home):
    legacy = SpaceScan(points=7, best=best_table(3), pareto=pd.DataFrame(), predictions=None)
    scan = stored_then_read(home, "scan", legacy).get("scan").value
    assert isinstance(scan, ScanResult) and scan.evaluated == 7 and scan.method == "predict"
    assert scan.best.blk.tolist() == [64, 128, 256] and scan.cost is None


@pytest.mark.parametrize("stage, forged, field", [
    ("scan", {"best": "not a table"}, "best"),
    ("scan", {"best": pd.DataFrame({"blk": [1]})}, "best"),  # no predicted column
    ("scan", {"best": best_table(), "left_out": -2}, "left_out"),
    ("scan", {"best": best_table(), "request": {"k": "twenty"}}, "request"),
    ("scan", [1, 2, 3], "record of fields"),
    ("true_error", {"kernel": "BFS", "points": 10, "mean": "low", "median": 0.1, "p98": 0.2, "max": 0.3}, "mean"),
    ("true_error", {"kernel": "BFS", "points": 10}, "'mean' is missing"),
    ("heatmap", {"source": "t", "cost": np.zeros(5)}, "cost"),
    ("heatmap", {"source": "t", "cost": np.zeros((2, 2)), "rgb": np.zeros((3, 3, 3), np.uint8)}, "rgb"),
    ("validation", {"errors": {}}, "not a validation result"),
])
def test_a_forged_stored_value_is_damaged_named_and_left_out_of_the_report(home, stage, forged, field):
    ws = stored_then_read(home, stage, forged)
    sv = ws.get(stage)
    assert isinstance(sv.value, Damaged) and sv.value.stage == stage and sv.value.version == sv.version
    assert field in sv.value.why and "cannot be read" in sv.value.message()
    assert stage in ws.damaged()  # the page names it and offers to drop it
    rc = report_contents(ws)
    assert stage not in rc.analyses and "cannot be read" in rc.left_out[stage]
    ws.drop_damaged(stage)
    assert ws.get(stage).value is None and ws.damaged() == {}


def test_a_malformed_result_is_refused_when_stored_and_nothing_is_kept(home):
    ws, _ = create_workspace("refuse")
    first = ws.put_analysis("scan", {"best": best_table()}, inputs=[])
    assert isinstance(first.value, ScanResult)  # a plain record of an earlier caller: read as the class
    with pytest.raises(StageError, match=r"best designs.*'best' is a str, not a table"):
        ws.put_analysis("scan", {"best": "x"}, inputs=[])
    with pytest.raises(StageError, match=r"true error.*'kernel' is missing"):
        ws.put_analysis("true_error", {"points": 3}, inputs=[])
    assert ws.get("scan").version == first.version and ws.get("true_error").value is None


@pytest.mark.slow
def test_workspace_show_lists_what_a_typed_analysis_holds_and_a_damaged_one(home):
    import os
    import subprocess
    import sys

    ws = stored_then_read(home, "true_error", {"kernel": "BFS", "points": 1000, "mean": 0.05, "median": 0.04,
                                                "p98": 0.2, "max": 0.3})
    ws.put_analysis("scan", {"best": best_table(), "space_size": 933_120}, inputs=[])
    write_raw(ws, "scan", {"best": best_table(), "left_out": "two"})

    def show() -> str:
        r = subprocess.run([sys.executable, "-m", "gpudse_core", "workspace", "show", ws.id], capture_output=True,
                           text=True, timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        return r.stdout

    out = show()
    assert "median 4 %, 98th percentile 20 % over 1,000 designs against BFS" in out
    assert "damaged" in out and "field 'left_out' is str 'two', not a whole number" in out
    ws.put_analysis("scan", {"best": best_table(3), "space_size": 933_120}, inputs=[])  # computed again
    assert "the 3 lowest-predicted designs of 933,120 designs" in show()


def test_a_simulated_check_puts_each_simulation_beside_its_prediction():
    from gpudse_core.explore.checks import SimulatedCheck

    rows = [{"blk": b, "predicted": 100.0, "lower": 90.0, "upper": 110.0, "group": g}
            for g, b in enumerate([64, 128, 256, 512])]
    rows[3].update(lower=None, upper=None)  # a design without an interval
    table = pd.DataFrame({"blk": [64, 128, 256, 512], "cycles": [105.0, 130.0, np.nan, 99.0],
                          "status": ["done", "done", "failed", "done"], "error": ["", "", "exit 1", ""]})
    c = SimulatedCheck.of("explore 1a2b", {"rows": rows, "scan_version": 3, "backend": "builtin"}, table, "cycles")
    assert (c.campaign, c.backend, c.scan_version) == ("explore 1a2b", "builtin", 3)
    assert c.table["in interval"].tolist() == ["yes", "no", "failed", "no interval"]
    assert (c.simulated, c.judged, c.inside) == (3, 2, 1) and c.failed.blk.tolist() == [256]
    assert c.table.why.tolist() == ["", "", "exit 1", ""]
    np.testing.assert_allclose(c.table.error[[0, 1, 3]], [0.05, 0.3, -0.01])


@pytest.mark.parametrize("spec, problem", [({"rows": "x"}, "'rows' is not a list"),
                                           ({"rows": [{"predicted": "fast", "lower": 1, "upper": 2, "group": 0}]},
                                            "design 1 with predicted = 'fast'"),
                                           ({"rows": [{"predicted": 1.0, "lower": 1, "upper": 2}]}, "group = None"),
                                           (None, "not a record of fields")])
def test_a_damaged_campaign_record_is_named_not_a_key_error(spec, problem):
    from gpudse_core.explore.checks import SimulatedCheck
    from gpudse_core.stored import StoredFormError

    with pytest.raises(StoredFormError, match="campaign 'explore 9'") as err:
        SimulatedCheck.of("explore 9", spec, pd.DataFrame(), "cycles")
    assert problem in str(err.value)


# ---- a workspace whose scan the core's start_scan stored: the Explore page and the report ----------
@pytest.fixture(scope="module")
def core_scanned(tmp_path_factory):
    """The built-in example, scanned by gpudse_core.workspace.start_scan (not the dashboard's job)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUDSE_HOME", str(tmp_path_factory.mktemp("home")))
        mp.delenv("GPUDSE_SINGLE_USER", raising=False)
        ws, key = create_workspace("core scan")
        fill_example(ws)
        job = start_scan(ws, cost=lambda f: f["blk"].to_numpy(dtype=float), k=5)
        assert job.wait(600)
        ws.close()
        yield ws.id, key


def explore(ws_id: str, key: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["ws"] = ws_id
    at.session_state["_gpudse_keys"] = {ws_id: key}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/7_Explore.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_core_scan_opens_on_the_explore_page_and_in_the_report(core_scanned):
    from gpudse_core.report.workspace_report import workspace_report

    ws_id, key = core_scanned
    ws = open_workspace(ws_id, key)
    sv = ws.get("scan")
    assert sv.ok and isinstance(sv.value, ScanResult) and sv.value.request == {"k": 5, "maximize": False, "cost": None}
    assert sv.value.evaluated == sv.value.space_size == ws.get("space").value.size and sv.value.complete
    at = explore(ws_id, key)
    heading = [m.value for m in at.markdown if m.value.startswith("**The 5 lowest predicted")]
    assert heading and "933,120 designs" in heading[0], [m.value for m in at.markdown][:10]
    assert len(at.dataframe[0].value) == 5
    assert any("Shown: the scan for 5 lowest predictions." in i.value for i in at.info)  # the page asks for 20
    html = workspace_report(ws)
    assert "Best designs (whole-space scan)" in html and "Pareto front" in html
    assert "Left out" not in html


def test_an_earlier_space_scan_and_a_damaged_scan_on_the_explore_page(core_scanned):
    from gpudse_core.report.workspace_report import workspace_report

    ws_id, key = core_scanned
    ws = open_workspace(ws_id, key)
    legacy = SpaceScan(points=933_120, best=best_table(3).assign(cc=16), pareto=pd.DataFrame(), predictions=None)
    write_raw(ws, "scan", legacy)
    at = explore(ws_id, key)  # the TypeError "argument of type 'SpaceScan' is not iterable" is gone
    assert len(at.dataframe[0].value) == 3 and not at.error
    write_raw(ws, "scan", {"best": "forged"})
    at = explore(ws_id, key)
    assert any("best designs" in e.value and "'best' is a str, not a table" in e.value for e in at.error)
    drop = [b for b in at.button if b.label.startswith("Drop the damaged")]
    assert drop and any(b.label.startswith("Find the best of all") for b in at.button)
    with open_workspace(ws_id, key) as again:
        html = workspace_report(again)
    assert "Best designs (whole-space scan)" not in html and "cannot be read" in html
    drop[0].click().run()
    assert not at.exception and open_workspace(ws_id).get("scan").value is None
