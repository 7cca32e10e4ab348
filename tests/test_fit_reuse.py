"""A fit is a function of its data and settings (gpudse_core.workspace.fits): pressing Fit again with a
kept version's settings on the same results returns that version, and the analyses computed from it
(validation, scan, any analysis computed from the model) stay current; another setting or other
results give a new version."""

from __future__ import annotations

import pytest

from gpudse_core import load_preset, sample
from gpudse_core.sim.simulator import simulate
from gpudse_core.workspace import create_workspace, fill_example
from gpudse_core.workspace.fits import fit_stepwise_into

PAPER = {"reference": True, "theta": 0.003, "phi": 0.0, "response_transform": "log"}  # Stargazer 1.0, Table 1


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="module")
def inputs():
    space = load_preset("stargazer")
    samples = sample(space, 120, seed=3)
    pts = samples.table()
    return space, samples, pts.join(simulate(pts, "matMul", noise=0.01, seed=3))


def _workspace(inputs):
    space, samples, results = inputs
    ws, _ = create_workspace("reuse")
    ws.set_space(space, "preset")
    ws.set_samples(samples, "uniform")
    ws.set_results(results, "cycles", "built-in simulator", inputs=("space", "samples"))
    return ws


def test_the_same_settings_twice_is_one_version_and_its_analyses_stay_current(home, inputs):
    ws = _workspace(inputs)
    steps = []
    first = fit_stepwise_into(ws, ws.get("results"), PAPER, callback=steps.append)
    assert not first.reused and first.stored.version == 1 and steps
    ws.put_analysis("review_notes", {"median": 0.05}, inputs=[ws.get("results"), first.stored])
    steps.clear()
    again = fit_stepwise_into(ws, ws.get("results"), dict(PAPER))
    assert again.reused and again.stored.version == 1 and not steps  # not fitted a second time
    assert [v.version for v in ws.history("model")] == [1]
    assert ws.status("review_notes").ok and ws.get("model").version == 1
    assert again.message().startswith("Same settings and data as model v1: reused")


def test_a_changed_setting_is_a_new_version_and_going_back_reuses_the_first(home, inputs):
    ws = _workspace(inputs)
    first = fit_stepwise_into(ws, ws.get("results"), PAPER).stored
    ws.put_analysis("review_notes", {"best": [1, 2]}, inputs=[first, ws.get("space")])
    other = fit_stepwise_into(ws, ws.get("results"), {**PAPER, "theta": 0.01})
    assert not other.reused and other.stored.version == 2
    assert ws.status("review_notes").state == "stale"  # computed from version 1, no longer current
    back = fit_stepwise_into(ws, ws.get("results"), PAPER)
    assert back.reused and back.stored.version == 1 and ws.get("model").version == 1
    assert ws.status("review_notes").ok  # the analysis of version 1 is current again, nothing recomputed
    assert ws.get("model").value.to_dict() == first.value.to_dict()
    fewer = fit_stepwise_into(ws, ws.get("results"), PAPER, params=["blk", "simd", "cc"])
    assert not fewer.reused and fewer.stored.version == 3  # another parameter list is another fit


def test_other_results_are_a_new_fit_even_with_the_same_settings(home, inputs):
    results = inputs[2]
    ws = _workspace(inputs)
    fit_stepwise_into(ws, ws.get("results"), PAPER)
    ws.set_results(results.assign(cycles=results["cycles"] * 1.5), "cycles", "scaled",
                   inputs=("space", "samples"))
    refit = fit_stepwise_into(ws, ws.get("results"), PAPER)
    assert not refit.reused and refit.stored.version == 2 and ws.status("model").ok


def test_the_examples_own_settings_reuse_the_examples_model(home):
    """The lecture's step 4: Fit with the robust defaults the example was fitted with, on its data."""
    ws, _ = create_workspace("example")
    made = fill_example(ws)
    ws.put_analysis("review_notes", {"median": 0.05}, inputs=[made["results"], made["model"]])
    model = made["model"].value
    again = fit_stepwise_into(ws, ws.get("results"), model.settings, response=model.response)
    assert again.reused and again.stored.version == made["model"].version == 1
    assert ws.status("review_notes").ok


@pytest.mark.slow
def test_the_command_lines_workspace_fit_goes_through_the_same_reuse(home):
    """``gpudse fit --workspace ID``: the robust defaults on the example's results are the example's own fit."""
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT

    from gpudse_core.workspace import open_workspace

    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def gpudse(*argv, code=0):
        r = subprocess.run([sys.executable, "-m", "gpudse_core", *argv], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300, check=False)
        assert r.returncode == code, r.stderr
        return r

    made = json.loads(gpudse("workspace", "new", "--example", "--json").stdout)
    same = gpudse("fit", "--workspace", made["id"])
    assert "Same settings and data as model v1: reused" in same.stdout and "statistic" in same.stdout
    other = json.loads(gpudse("fit", "--workspace", made["id"], "--preset", "stargazer", "--theta", "0.003",
                              "--phi", "0", "--json").stdout)
    assert (other["version"], other["reused"]) == (2, False) and other["trace_table"]["rows"]
    assert open_workspace(made["id"]).get("model").version == 2
    bad = gpudse("fit", "results.csv", "--workspace", made["id"], code=2)
    assert "drop DATA" in bad.stderr and "Traceback" not in bad.stderr
    none = gpudse("fit", "--response", "cycles", code=2)
    assert "give DATA, -o" in none.stderr


def test_the_forest_blend_off_is_its_own_version_and_the_default_keeps_its_fingerprint(home, inputs):
    """The Fit page's "Forest blend" (not an estimator parameter) reaches the fit: off gives the equation alone
    as a new version; the default, named or not, is one version."""
    ws = _workspace(inputs)
    default = fit_stepwise_into(ws, ws.get("results"), {}).stored
    assert default.value.fallback is not None
    named = fit_stepwise_into(ws, ws.get("results"), {"blend": "forest"})
    assert named.reused and named.stored.version == default.version
    off = fit_stepwise_into(ws, ws.get("results"), {"blend": "off"})
    assert not off.reused and off.stored.version == default.version + 1
    assert off.stored.value.fallback is None and off.stored.value.settings["blend"] == "off"
    assert fit_stepwise_into(ws, ws.get("results"), {"blend": "off"}).reused
