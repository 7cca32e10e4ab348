"""A "Simulate these" check confirms a recommendation without invalidating it (gpudse_core.workspace.checks).

Stargazer §7.4 uses the model to predict the whole space and pick the best designs; simulating a few of
them checks the model there. The check is stored as the ``check`` analysis computed from the model and
the scan it checked: the results, the model, the best designs and the validation stay current. Adding
the simulated designs to the results and refitting is a separate step, after which the model and the
scan are new versions and what was computed from the old ones is stale.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from gpudse_core import GpudseError
from gpudse_core.space.presets import load_preset

KERNEL = "matMul"
ROWS = 3


def _wait(ws, job):
    assert job.wait(300), "the job did not end"
    info = ws.job(job.id)
    assert info.state == "finished", info.error
    return info


def small_workspace(name: str):
    """60 simulated designs on the built-in simulator, a stepwise fit, its scan and validation (all current)."""
    from dashboard import work as ui_work

    from gpudse_core.sim.simulator import simulate
    from gpudse_core.space.sampling import sample
    from gpudse_core.workspace import create_workspace, start_validation
    from gpudse_core.workspace.fits import fit_stepwise_into

    ws, key = create_workspace(name)
    space = load_preset("stargazer")
    samples = sample(space, 60, seed=1)
    points = samples.table()
    ws.set_space(space, "stargazer")
    ws.set_samples(samples, "60 uniform samples")
    results = ws.set_results(points.join(simulate(points, KERNEL, noise=0.01, seed=1)), "cycles",
                             f"built-in simulator, {KERNEL}, 1 % noise", inputs=("space", "samples"))
    fit_stepwise_into(ws, results, {})
    _wait(ws, ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=5)))
    _wait(ws, start_validation(ws, train_sizes=[20], test_size=20, repeats=1))
    return ws, key


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("home")
        mp.setenv("GPUDSE_HOME", str(path))
        mp.delenv("GPUDSE_SINGLE_USER", raising=False)
        yield path


@pytest.fixture(scope="module")
def checked(home):
    """The small workspace after a check of its 3 best rows on the noise-free built-in simulator."""
    from dashboard import work as ui_work

    from gpudse_core.sim.campaign import AnalyticalBackend

    ws, _ = small_workspace("check")
    before = {s: ws.get(s) for s in ("results", "model", "scan", "validation")}
    assert all(sv.ok for sv in before.values())
    best = ws.get("scan").value.best
    _wait(ws, ui_work.start_simulate_best(ws, AnalyticalBackend(KERNEL, noise=0.0, seed=0), best.iloc[:ROWS]))
    yield ws, before, best.iloc[:ROWS].reset_index(drop=True)
    ws.close()


def test_a_check_keeps_the_results_model_best_designs_and_validation_current(checked):
    ws, before, _ = checked
    for stage, sv in before.items():
        now = ws.get(stage)
        assert now.version == sv.version and now.ok, (stage, now.status)
    check = ws.get("check")
    assert check.ok
    # bound to the model and the scan it checked
    assert check.inputs["model"].version == before["model"].version
    assert check.inputs["scan"].version == before["scan"].version
    assert (check.value.model_version, check.value.scan_version) == (before["model"].version, before["scan"].version)


def test_the_check_stores_prediction_interval_and_simulation_per_design(checked):
    from gpudse_core.sim.simulator import simulate

    ws, before, chosen = checked
    check = ws.get("check").value
    table = check.table
    space = ws.get("space").value
    params = list(space.parameter_names)
    assert len(table) == ROWS and check.simulated == ROWS and table.group.tolist() == list(range(ROWS))
    pd.testing.assert_frame_equal(table[params].reset_index(drop=True), chosen[params], check_dtype=False)
    np.testing.assert_allclose(table.predicted, chosen.predicted)
    np.testing.assert_allclose(table[["lower", "upper"]], chosen[["lower", "upper"]])
    # the noise-free simulator's own values for these designs
    np.testing.assert_allclose(table.simulated, simulate(chosen[params], KERNEL, noise=0.0)["cycles"])
    np.testing.assert_allclose(table.error, table.simulated / table.predicted - 1)
    inside = (table.simulated >= table.lower) & (table.simulated <= table.upper)
    assert table["in interval"].tolist() == ["yes" if i else "no" for i in inside]
    # read back from the workspace's file as its class
    from gpudse_core.explore.checks import SimulatedCheck
    from gpudse_core.workspace import open_workspace

    again = open_workspace(ws.id).get("check").value
    assert isinstance(again, SimulatedCheck) and again.campaign == check.campaign
    pd.testing.assert_frame_equal(again.table, table)


def test_a_malformed_check_is_refused_and_names_the_field(checked):
    ws, _, _ = checked
    with pytest.raises(GpudseError, match="simulated check.*'table'"):
        ws.put_analysis("check", {"campaign": "explore x"}, inputs=["model"])
    with pytest.raises(GpudseError, match="lacks the column"):
        ws.put_analysis("check", {"campaign": "explore x", "table": pd.DataFrame({"predicted": [1.0]})},
                        inputs=["model"])


def test_add_these_appends_the_rows_refits_with_the_same_settings_and_rescans(checked):
    from dashboard import work as ui_work

    from gpudse_core.workspace.checks import add_check_to_results

    ws, before, chosen = checked
    check = ws.get("check").value
    _wait(ws, ui_work.start_add_check(ws))
    results, model, scan = ws.get("results"), ws.get("model"), ws.get("scan")
    old = before["results"].value.table
    assert results.version == before["results"].version + 1 and results.ok
    assert len(results.value.table) == len(old) + ROWS
    params = list(ws.get("space").value.parameter_names)
    added = results.value.table.iloc[len(old):].reset_index(drop=True)
    pd.testing.assert_frame_equal(added[params], check.table[params], check_dtype=False)
    np.testing.assert_allclose(added.cycles, check.table.simulated)
    # a new fit on the new results with the old model's settings, and a new scan of it
    assert model.version > before["model"].version and model.ok
    assert model.inputs["results"].version == results.version
    assert model.value.settings == before["model"].value.settings
    assert model.value.n == len(results.value.table)
    assert scan.version > before["scan"].version and scan.ok and scan.inputs["model"].version == model.version
    assert scan.value.request == before["scan"].value.request
    # what was computed from the old model is stale: the check itself, and the validation
    assert not ws.get("check").ok and not ws.get("validation").ok
    assert ws.status("check").action == "Simulate the new best designs on the Explore page"
    with pytest.raises(GpudseError, match="out of date"):  # never added twice
        add_check_to_results(ws)


def test_a_check_of_an_out_of_date_model_is_refused(home):
    from dashboard import work as ui_work

    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace import NotReady, create_workspace
    from gpudse_core.workspace.checks import add_check_to_results

    ws, _ = create_workspace("empty")
    with pytest.raises(NotReady):
        ui_work.start_simulate_best(ws, AnalyticalBackend(KERNEL), pd.DataFrame())
    with pytest.raises(GpudseError, match="no check to add"):
        add_check_to_results(ws)


@pytest.mark.slow
def test_the_explore_page_checks_then_adds_as_a_separate_step(home):
    """On the Explore page: "Simulate these" shows predicted beside simulated with the versions it
    checked and no stale banner; "Add these to the results and refit" is its own button, whose job
    appends, refits and rescans, after which the page names what is out of date."""
    pytest.importorskip("streamlit")
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    ws, key = small_workspace("page")
    results = ws.get("results").version
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["ws"] = ws.id
    at.session_state["_gpudse_keys"] = {ws.id: key}
    at.run()
    at.switch_page("pages/7_Explore.py").run()
    assert not at.exception, [e.value for e in at.exception]

    def button(label):
        return next(b for b in at.button if b.label == label)

    def settle():
        end = time.monotonic() + 300
        while ws.jobs(active=True):
            assert time.monotonic() < end, "a job did not end"
            time.sleep(0.1)
        at.run()
        assert not at.exception, [e.value for e in at.exception]

    button("Simulate these").click().run()
    settle()
    markdown = " ".join(m.value for m in at.markdown)
    captions = " ".join(c.value for c in at.caption)
    assert "Predicted vs simulated" in markdown and "5 of 5 designs simulated" in markdown
    assert "Checks model version 1, best designs version 1" in captions
    assert not at.warning, [x.value for x in at.warning]  # no "Refit on the new results"
    assert ws.get("results").version == results and ws.get("model").ok and ws.get("scan").ok
    assert ws.get("validation").ok and ws.get("check").ok

    button("Add these to the results and refit").click().run()
    settle()
    assert ws.get("results").version == results + 1 and len(ws.get("results").value.table) == 65
    assert ws.get("model").version == 2 and ws.get("model").ok and ws.get("scan").ok
    info = " ".join(i.value for i in at.info)
    assert ("added to the results (version 2), the model refitted (version 2) and the best designs found again; "
            "out of date now: Validation") in info, info
    assert "made with model version 1" in " ".join(c.value for c in at.caption)
    assert not any(b.label == "Add these to the results and refit" for b in at.button)
    ws.close()


def test_a_learners_refit_is_left_to_the_fit_page(home):
    """refit_into repeats a stepwise model's own settings; a learner's are chosen on the fit page, so it
    says so instead of refitting with settings it cannot know."""
    from gpudse_core.model.registry import fit_model
    from gpudse_core.sim.simulator import simulate
    from gpudse_core.space.sampling import sample
    from gpudse_core.workspace import create_workspace
    from gpudse_core.workspace.fits import refit_into

    ws, _ = create_workspace("learner")
    space = load_preset("stargazer")
    points = sample(space, 40, seed=2).table()
    table = points.join(simulate(points, KERNEL, noise=0.01, seed=2))
    ws.set_space(space, "stargazer")
    results = ws.set_results(table, "cycles", "built-in simulator")
    model = ws.set_model(fit_model("forest", table, "cycles", list(space.parameter_names)), "forest")
    with pytest.raises(GpudseError, match="model version 1 is a forest model: refit it on the Stepwise fit page"):
        refit_into(ws, results, model)
    assert [v.version for v in ws.history("model")] == [1]
    ws.close()
