"""The "Runs side by side" picker lists every run: this workspace's model versions, and each other
workspace held here with its current model or why it is not offered (no model, a stale model, a
different design space) — never silently leaving one out — with the settings that produced each."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from gpudse_core import load_preset, sample
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.sim.simulator import simulate
from gpudse_core.workspace import create_workspace

SPACE = load_preset("stargazer")
PARAMS = list(SPACE.parameter_names)


def _fitted(name: str, kernel: str, n: int = 60, **settings):
    ws, key = create_workspace(name)
    ws.set_space(SPACE, "preset stargazer")
    samples = sample(SPACE, n=n, seed=4)
    ws.set_samples(samples, "uniform")
    pts = samples.table()
    data = pts.join(simulate(pts, kernel, noise=0.01, seed=4))
    res = ws.set_results(data, "cycles", f"built-in simulator, {kernel}", inputs=("space", "samples"))
    ws.set_model(fit_stepwise(data[PARAMS + ["cycles"]], "cycles", **settings), f"stepwise on {kernel}", inputs=[res])
    return ws, key, data


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUDSE_HOME", str(tmp_path_factory.mktemp("home")))
        mp.setenv("GPUDSE_SINGLE_USER", "1")  # every workspace of the server is this visitor's
        mine, key, _ = _fitted("BFS review", "BFS")
        aes, _, _ = _fitted("AES review", "AES", criterion="adjr2", theta=0.01, phi=0.02)
        stale, _, data = _fitted("Stale review", "matMul")
        stale.set_results(data.assign(cycles=data.cycles * 1.1), "cycles", "matMul again, 10 % slower",
                          inputs=("space", "samples"))
        empty, _ = create_workspace("No model yet")
        empty.set_space(SPACE, "preset stargazer")
        lb = load_preset("lee-brooks")
        other, _ = create_workspace("Lee and Brooks review")
        other.set_space(lb, "preset lee-brooks")
        pts = sample(lb, n=40, seed=1).table()
        numeric = [p.name for p in lb.parameters if p.kind == "numeric"][:3]
        pts["cycles"] = 1000 + sum(np.log2(pts[p].astype(float) + 1) * (i + 1) * 50 for i, p in enumerate(numeric))
        res = other.set_results(pts, "cycles", "synthetic", inputs=("space",))
        other.set_model(fit_stepwise(pts[numeric + ["cycles"]], "cycles", knots=3), "stepwise", inputs=[res])
        for w in (mine, aes, stale, empty, other):
            w.close()
        yield mine.id, key


def accuracy(ws_id: str, key: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["ws"] = ws_id
    at.session_state["_gpudse_keys"] = {ws_id: key}
    at.run()
    at.switch_page("pages/6_Accuracy.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_picker_lists_every_workspace_and_says_why_one_is_not_offered(workspaces):
    at = accuracy(*workspaces)
    table = next(df.value for df in at.dataframe if "offered" in df.value.columns)
    why = dict(zip(table["workspace · model"], table["offered"]))
    assert why["AES review · current model"] == "yes"
    assert why["No model yet · current model"].startswith("not offered: it has no model yet")
    assert why["Stale review · current model"].startswith("not offered: its model is out of date")
    assert "results changed" in why["Stale review · current model"]
    assert why["Lee and Brooks review · current model"].startswith("not offered: a different design space (lee-brooks")
    mine = [r for r in why if r.startswith("BFS review · model v1")]
    assert mine and why[mine[0]] == "yes"
    # the picker offers exactly the runs marked yes
    pick = next(m for m in at.multiselect if m.label == "Runs")
    short = {o.split(" (")[0] + (" · current" if o.endswith(" · current") else "") for o in pick.options}
    assert len(pick.options) == len(short) and short == {r for r, w in why.items() if w == "yes"}
    assert any("not offered" in c.value and "says why" in c.value for c in at.caption)
    # the settings columns: AES was fitted with the adjusted-R² criterion, θ = 0.01, φ = 0.02
    aes = table[table["workspace · model"] == "AES review · current model"].iloc[0]
    assert (aes["criterion"], aes["θ"], aes["φ"]) == ("adjusted R²", "0.01", "0.02")
    bfs = table[table["workspace · model"] == mine[0]].iloc[0]
    assert bfs["criterion"] == "F-test" and bfs["fit"] == "Huber" and bfs["data"].startswith("results v1 (built-in")
    stale = table[table["workspace · model"] == "Stale review · current model"].iloc[0]
    assert stale["model"] == "stepwise" and stale["data"].startswith("results v1")  # its last fit's settings


def test_two_runs_compared_show_their_settings(workspaces):
    at = accuracy(*workspaces)
    pick = next(m for m in at.multiselect if m.label == "Runs")
    pick.set_value([o for o in pick.options if o.startswith(("BFS review", "AES review"))][:2])
    next(b for b in at.button if b.label == "Compare").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(df.value for df in at.dataframe if "out-of-sample error (median)" in df.value.columns)
    assert len(table) == 2 and {"θ", "φ", "criterion", "knots", "response scale", "fit"} <= set(table.columns)
    assert sorted(table["criterion"]) == ["F-test", "adjusted R²"]
