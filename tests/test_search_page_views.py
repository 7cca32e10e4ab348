"""The Search page's views of a stored search, driven headlessly with AppTest (dashboard.search_views):
the history table has no "None" cell, parallel coordinates and parameter importance are drawn, and two
stored searches are shown side by side (best-so-far curves on one chart, a table of their settings).
GPUDSE_HOME is a temporary folder."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from gpudse_core.search.pool import make_pool
from gpudse_core.search.runner import search_settings, study_doc
from gpudse_core.search.study import run_search
from gpudse_core.sim.campaign import AnalyticalBackend


@pytest.fixture(scope="module", autouse=True)
def home(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUDSE_HOME", str(tmp_path_factory.mktemp("gpudse_home")))
        mp.delenv("GPUDSE_SINGLE_USER", raising=False)
        yield


def store_search(w, seed: int, budget: int = 24, goal: str = "min") -> None:
    """A search of the workspace's space on the built-in simulator, stored as the page's job stores it."""
    (space_sv,) = w.require("space")
    space = space_sv.value
    backend = AnalyticalBackend("BFS")

    def evaluate(digits, designs):
        return [(o.result["cycles"], "") for o in backend.run_batch([(i, d, 1) for i, d in enumerate(designs)])]

    res = run_search(make_pool(space), evaluate, goal=goal, budget=budget, batch=4, initial=12, seed=seed,
                     response="cycles", surrogate="forest")
    settings = search_settings(space, "BFS", goal, budget, seed, initial=12, batch=4)
    w.put_analysis("search", study_doc(settings, res), inputs=[space_sv], origin=f"search, seed {seed}")


def page(ws_id: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    if ws_id:
        at.query_params["ws"] = ws_id
    for key, value in params.items():  # the rest of an address
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/10_Search.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_two_stored_searches_side_by_side_and_a_history_without_none():
    at = page()
    w = at.session_state["_gpudse_ws"]
    store_search(w, seed=1)
    store_search(w, seed=2, budget=28)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    subheaders = [s.value for s in at.subheader]
    assert {"Parallel coordinates", "Parameter importance", "Every simulation",
            "Two searches side by side"} <= set(subheaders)
    assert any(c.value.startswith("Method: fANOVA-like") for c in at.caption)
    assert not [m for m in at.multiselect if m.key == "se_compare"]  # read only when asked for
    at.toggle(key="compare").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]

    picker = at.multiselect(key="se_compare")
    assert len(picker.value) == 2 and all("search v" in label for label in picker.value)
    described = [label.split("(")[1].split(")")[0] for label in picker.value]
    assert described == ["min cycles, 28 simulations", "min cycles, 24 simulations"]  # both studies, newest first
    assert picker.value[0].endswith("· current")
    table = next(df.value for df in at.dataframe if "best design" in df.value.columns)
    assert len(table) == 2 and sorted(table["seed"]) == ["1", "2"] and sorted(table["simulated"]) == ["24", "28"]

    history = next(df.value for df in at.dataframe if "acquisition" in df.value.columns)
    assert len(history) == 28  # the current study's every simulation
    assert not history.isna().any().any()  # a null cell is drawn "None" by the grid
    assert (history["acquisition"] == "–").sum() == 12  # the initial sample has no acquisition value
    # each model proposal's predicted value and interval, made before it was simulated; none for the initial sample
    assert (history["predicted"] == "–").sum() == (history["inside"] == "–").sum() == 12
    assert set(history["inside"]) <= {"yes", "no", "–"}
    assert any("inside their 95 % intervals" in c.value for c in at.caption)
    assert history["cycles"].dtype.kind == "f"  # complete columns stay numbers (sortable)


def test_the_comparison_is_in_the_address_and_a_new_session_opens_it():
    at = page()
    w = at.session_state["_gpudse_ws"]
    for seed, budget in ((1, 24), (2, 28), (3, 32)):
        store_search(w, seed=seed, budget=budget)
    at.run()
    at.toggle(key="compare").set_value(True).run()
    picker = at.multiselect(key="se_compare")
    oldest = next(label for label in picker.options if "24 simulations" in label)
    picker.set_value([picker.value[0], oldest]).run()
    assert not at.exception, [e.value for e in at.exception]
    # (?compare= is written by the browser, Streamlit's bind="query-params"; ?searches= by the page)
    picks = at.query_params["searches"]
    picks = picks[0] if isinstance(picks, list) else picks
    versions = [v.version for v in w.history("search")]
    assert picks == f"{versions[-1]},{versions[0]}"  # the newest and the oldest, in the order picked

    # a copied link (or a reload): a new session with that address draws the same two
    again = page(w.id, compare="true", searches=picks)
    assert not again.exception, [e.value for e in again.exception]
    shown = again.multiselect(key="se_compare").value
    assert [label.split("(")[1].split(")")[0] for label in shown] == ["min cycles, 32 simulations",
                                                                      "min cycles, 24 simulations"]
    # a version that is not stored, or not a number, is ignored: the two newest instead
    for bad in ("999,abc", "-1", "1" * 40):
        other = page(w.id, compare="true", searches=bad)
        assert not other.exception, [e.value for e in other.exception]
        assert len(other.multiselect(key="se_compare").value) == 2


def test_one_stored_search_says_what_a_comparison_needs():
    at = page()
    store_search(at.session_state["_gpudse_ws"], seed=3)
    at.toggle(key="compare").set_value(True).run()
    assert not at.exception
    assert any("Needs two stored searches" in c.value for c in at.caption)
    assert not [m for m in at.multiselect if m.key == "se_compare"]
