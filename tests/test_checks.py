"""A "Simulate these" check confirms a recommendation without invalidating it (gpudse_core.workspace.checks).

Stargazer §7.4 uses the model to predict the whole space and pick the best designs; simulating a few of
them checks the model there. The check is stored as the ``check`` analysis computed from the model and
the scan it checked: the results, the model, the best designs and the validation stay current. Adding
the simulated designs to the results and refitting is a separate step, after which the model and the
scan are new versions and what was computed from the old ones is stale.
"""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """60 simulated designs, a stepwise fit, its scan and validation, then a check of the 3 best rows on
    the noise-free built-in simulator."""
    from dashboard import work as ui_work

    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.sim.simulator import simulate
    from gpudse_core.space.sampling import sample
    from gpudse_core.workspace import create_workspace, start_validation
    from gpudse_core.workspace.fits import fit_stepwise_into

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUDSE_HOME", str(tmp_path_factory.mktemp("home")))
        mp.delenv("GPUDSE_SINGLE_USER", raising=False)
        ws, _ = create_workspace("check")
        space = load_preset("stargazer")
        samples = sample(space, 60, seed=1)
        points = samples.table()
        ws.set_space(space, "stargazer")
        ws.set_samples(samples, "60 uniform samples")
        results = ws.set_results(points.join(simulate(points, KERNEL, noise=0.01, seed=1)), "cycles",
                                 f"built-in simulator, {KERNEL}", inputs=("space", "samples"))
        fit_stepwise_into(ws, results, {})
        _wait(ws, ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=5)))
        _wait(ws, start_validation(ws, train_sizes=[20], test_size=20, repeats=1))
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
    with pytest.raises(GpudseError, match="out of date"):  # never added twice
        add_check_to_results(ws)


def test_a_check_of_an_out_of_date_model_is_refused(tmp_path, monkeypatch):
    from dashboard import work as ui_work

    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace import NotReady, create_workspace
    from gpudse_core.workspace.checks import add_check_to_results

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    ws, _ = create_workspace("empty")
    with pytest.raises(NotReady):
        ui_work.start_simulate_best(ws, AnalyticalBackend(KERNEL), pd.DataFrame())
    with pytest.raises(GpudseError, match="no check to add"):
        add_check_to_results(ws)
