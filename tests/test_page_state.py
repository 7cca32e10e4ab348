"""Page state in the address: a copied link opens the same view — the page's tab (?tab=), the replay's
row (?row=) and Explore's settings (?goal=, ?top=, ?cost=). Values from the address are user input: a
legal one is taken, a number out of range is clamped, anything else is ignored without a traceback."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from gpudse_core import load_preset, sample
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.sim.simulator import simulate
from gpudse_core.workspace import create_workspace

SPACE = load_preset("stargazer")
PARAMS = list(SPACE.parameter_names)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A workspace with BFS results (80 rows, 1 % noise) and a stepwise model fitted on them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUDSE_HOME", str(tmp_path_factory.mktemp("home")))
        mp.delenv("GPUDSE_SINGLE_USER", raising=False)
        ws, key = create_workspace("Address review")
        ws.set_space(SPACE, "preset stargazer")
        samples = sample(SPACE, n=80, seed=2)
        ws.set_samples(samples, "uniform")
        pts = samples.table()
        data = pts.join(simulate(pts, "BFS", noise=0.01, seed=2))
        res = ws.set_results(data, "cycles", "built-in simulator, BFS, 1 % noise", inputs=("space", "samples"))
        model = fit_stepwise(data[PARAMS + ["cycles"]], "cycles")
        ws.set_model(model, "stepwise (Algorithm 1)", inputs=[res])
        ws.close()
        yield ws.id, key, len(model.trace)


def page(fitted, path: str, **params: str) -> AppTest:
    """*path* opened from a link carrying *params* (besides the workspace)."""
    ws_id, key, _ = fitted
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["ws"] = ws_id
    at.session_state["_gpudse_keys"] = {ws_id: key}
    at.run()
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_explore_opens_with_the_links_settings_and_clamps_the_count(fitted):
    at = page(fitted, "pages/7_Explore.py", goal="highest prediction", top="500", cost="simd")
    assert at.radio(key="goal").value == "highest prediction"
    assert at.slider(key="top").value == 100  # 500 asked: the slider's most
    assert at.selectbox(key="cost").value == "simd"
    at = page(fitted, "pages/7_Explore.py", top="2")
    assert at.slider(key="top").value == 5 and at.radio(key="goal").value == "lowest prediction"  # the least
    assert page(fitted, "pages/7_Explore.py", top="37").slider(key="top").value == 37


@pytest.mark.parametrize("bad", [{"goal": "<script>", "top": "abc", "cost": "no_such_parameter"},
                                 {"top": "nan", "cost": ""}, {"top": "-1e400", "goal": ""}])
def test_explore_ignores_bad_values_from_the_address(fitted, bad):
    at = page(fitted, "pages/7_Explore.py", **bad)
    assert at.radio(key="goal").value == "lowest prediction"
    assert at.slider(key="top").value == 20  # -1e400 reads as -∞: not a count
    assert at.selectbox(key="cost").value == "levels"
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("path, tab, first", [("pages/6_Accuracy.py", "Runs side by side", "Validation"),
                                              ("pages/3_Simulations.py", "Upload results", "Run a campaign"),
                                              ("pages/9_Analytical_models.py", "Work flow graph", "Equal-area model")])
def test_the_pages_tab_comes_from_the_address_and_a_bad_one_is_ignored(fitted, path, tab, first):
    assert page(fitted, path, tab=tab).session_state["tab"] == tab
    at = page(fitted, path, tab="Not a tab")
    assert at.session_state["tab"] == first and not at.error


def test_the_sampling_request_form_comes_from_the_address(fitted):
    at = page(fitted, "pages/2_Sampling.py", how="Fraction of the whole space")
    assert at.radio(key="how").value == "Fraction of the whole space"
    assert any(n.label == "Fraction (0–1]" for n in at.number_input)
    at = page(fitted, "pages/2_Sampling.py", how="all of them")
    assert at.radio(key="how").value == "Number of points" and not at.error


@pytest.mark.slow
def test_the_replay_opens_at_the_links_row(fitted):
    rows = fitted[2]
    assert rows >= 3
    for asked, row in (("100000", rows), ("0", 1), ("three", 1), ("", 1)):
        at = page(fitted, "pages/4_Stepwise_fit.py", row=asked)
        shown = [m.value for m in at.markdown if m.value.startswith("**Row ")]
        assert shown[0].startswith(f"**Row {row} of {rows}**"), (asked, shown)
    plain = page(fitted, "pages/4_Stepwise_fit.py")
    assert not next(e for e in plain.expander if e.label.startswith("Replay the fit")).proto.expanded
    at = page(fitted, "pages/4_Stepwise_fit.py", row="3")
    box = next(e for e in at.expander if e.label.startswith("Replay the fit"))
    assert box.proto.expanded  # the link's view: the replay open
    shown = [m.value for m in at.markdown if m.value.startswith("**Row ")]
    assert shown and shown[0].startswith(f"**Row 3 of {rows}**"), shown
    next(b for b in at.button if b.label == "Step").click().run()
    assert [m.value for m in at.markdown if m.value.startswith("**Row ")][0].startswith(f"**Row 4 of {rows}**")
    assert at.query_params["row"] in ("4", ["4"])  # the address follows: a copied link opens row 4
    next(b for b in at.button if b.label == "Restart").click().run()
    assert "row" not in at.query_params  # row 1 is the plain link
    next(b for b in at.button if b.label == "Step").click().run()
    # a refit in this session (the last use of the module's workspace): its replay starts at row 1
    w = at.session_state["_gpudse_ws"]
    data = w.get("results").value.table
    w.set_model(fit_stepwise(data[PARAMS + ["cycles"]], "cycles", theta=0.01, phi=0.01), "a refit",
                inputs=[w.get("results")])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.value for m in at.markdown if m.value.startswith("**Row ")][0].startswith("**Row 1 of ")
    assert "row" not in at.query_params


def test_url_numbers_are_parsed_and_clamped(monkeypatch):
    """The parser behind ?top= and ?row=, on the values a hand-edited link holds; the address's own
    parameters cannot be taken by a page's state."""
    import streamlit as st

    from dashboard import state

    cases = {"12": 12, " 12 ": 12, "12.6": 13, "-3": 1, "1e9": 50, "inf": None, "nan": None, "0x10": None,
             "twelve": None, "": None}
    for raw, want in cases.items():
        monkeypatch.setattr(st, "query_params", {"n": raw})
        assert state.url_number("n", 1, 50) == want, raw
    monkeypatch.setattr(st, "query_params", {})
    assert state.url_number("n", 1, 50) is None
    for own in ("ws", "present"):
        with pytest.raises(ValueError):
            state.bound(own)
        with pytest.raises(ValueError):
            state.to_url(own, "x")
