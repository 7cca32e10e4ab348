"""Dashboard pages driven headlessly with Streamlit's AppTest (the real-browser test is test_browser.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from conftest import ROOT  # noqa: E402


@pytest.fixture
def app():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    return at


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_home_opens_on_the_builtin_example(app):
    captions = [c.value for c in app.caption]
    assert "stargazer: 933,120 points" in captions and "300 points drawn" in captions
    assert app.session_state.space.size == 933120 and len(app.session_state.samples) == 300


def test_design_space_page_shows_exact_size_and_loads_presets(app):
    app.switch_page("pages/1_Design_space.py").run()
    assert not app.exception
    assert metrics(app)["Design points"] == "933,120"
    app.selectbox[0].set_value("lee-brooks").run()
    [b for b in app.button if b.label == "Load preset"][0].click().run()
    assert not app.exception
    m = metrics(app)
    assert m["Design points"] == "937,500,000" and m["Dimensions"] == "12" and m["Parameters"] == "23"


def test_bad_constraint_shows_error_and_keeps_space(app):
    app.switch_page("pages/1_Design_space.py").run()
    app.text_area[0].set_value("simd * 2 >= smem_kb").run()
    [b for b in app.button if b.label == "Apply changes"][0].click().run()
    assert not app.exception
    assert any("unknown name 'smem_kb'" in e.value and "Nothing was changed" in e.value for e in app.error)
    assert metrics(app)["Design points"] == "933,120"
    assert app.session_state.space.name == "stargazer"


def test_valid_constraint_is_applied(app):
    app.switch_page("pages/1_Design_space.py").run()
    app.text_area[0].set_value("simd * blk <= 128").run()
    [b for b in app.button if b.label == "Apply changes"][0].click().run()
    assert not app.exception and not app.error
    feasible = sum(1 for s in (8, 16, 32) for b in (1, 2, 4, 8, 16) if s * b <= 128) * 933120 // 15
    assert metrics(app)["Feasible points"] == f"{feasible:,}"


def test_sampling_page_errors_keep_previous_samples(app):
    app.switch_page("pages/2_Sampling.py").run()
    assert metrics(app)["Points"] == "300"
    app.number_input[0].set_value(2_000_000)
    app.button[0].click().run()  # the form's submit button
    assert not app.exception
    assert any("only 933,120 points" in e.value and "previous samples are kept" in e.value for e in app.error)
    assert metrics(app)["Points"] == "300"


def test_sampling_page_fraction_mode(app):
    app.switch_page("pages/2_Sampling.py").run()
    app.radio[0].set_value("Fraction of the whole space")
    app.number_input[1].set_value(0.001)
    app.button[0].click().run()
    assert not app.exception and not app.error
    assert metrics(app)["Points"] == f"{round(0.001 * 933120):,}"


def test_analytical_models_page(app):
    app.switch_page("pages/9_Analytical_models.py").run()
    assert not app.exception and not app.error
    m = metrics(app)
    assert m["Optimum N_PE"] == "160"  # Fig. 18(a) at the default 104 GB/s, 30 registers
    assert m["CYC_compute"] == "16 cycles" and m["Latency_exposed"] == "130 cycles"  # 004 Fig. 1
    assert m["Launch overhead"] == f"{16 * 256 + 800 * 4 + 17600:,} cycles"
    assert m["Runtime"].endswith("cycles")
    app.select_slider[0].set_value(32).run()
    app.select_slider[1].set_value(10).run()
    assert metrics(app)["Optimum N_PE"] == "184"  # Fig. 18(f)


def test_simulations_page_runs_the_builtin_example(app):
    app.switch_page("pages/3_Simulations.py").run()
    assert not app.exception and not app.error
    assert metrics(app)["Done"] == "0"
    [b for b in app.button if b.label == "Start / resume"][0].click().run(timeout=120)
    assert not app.exception and not app.error
    assert metrics(app)["Done"] == "300" and metrics(app)["Remaining"] == "0"
    [b for b in app.button if b.label == "Use these results for the regression"][0].click().run()
    assert len(app.session_state.results) == 300 and app.session_state.results_response == "cycles"


def test_simulations_page_without_samples_of_this_space(app):
    app.switch_page("pages/1_Design_space.py").run()
    app.selectbox[0].set_value("lee-brooks").run()
    [b for b in app.button if b.label == "Load preset"][0].click().run()
    app.switch_page("pages/3_Simulations.py").run()
    assert not app.exception
    assert any("Sample design points of the current space first" in i.value for i in app.info)


def test_ray_tracing_page(app):
    app.switch_page("pages/8_Ray_tracing.py").run(timeout=120)
    assert not app.exception and not app.error
    m = metrics(app)
    assert m["K (downscaling)"] == "4"  # 8 SMs, 4 memory partitions
    assert m["Self-check error"].endswith("%") and m["Predicted speedup (eq. 4)"].endswith("×")
    [r for r in app.radio if r.label == "Division"][0].set_value("coarse").run(timeout=120)
    assert not app.exception and not app.error


def test_stepwise_page_fits_with_live_trace(app):
    app.switch_page("pages/4_Stepwise_fit.py").run(timeout=120)
    assert not app.exception and not app.error
    m = metrics(app)
    assert float(m["R²"]) > 0.9  # the built-in example's model
    app.button[0].click().run(timeout=120)  # the form's Fit button
    assert not app.exception and not app.error
    assert "blk" in app.session_state.model.terms


def test_response_curves_accuracy_explore_pages(app):
    app.switch_page("pages/5_Response_curves.py").run(timeout=120)
    assert not app.exception and not app.error
    app.switch_page("pages/6_Accuracy.py").run(timeout=120)
    assert not app.exception and not app.error
    app.button[0].click().run(timeout=300)  # Validate
    assert not app.exception and not app.error
    assert "stepwise" in app.session_state.validation.models
    app.switch_page("pages/7_Explore.py").run(timeout=120)
    assert not app.exception and not app.error
    [b for b in app.button if b.label.startswith("Predict all")][0].click().run(timeout=300)
    assert not app.exception and not app.error
    assert app.session_state.scan.points == 933_120


def test_html_report_from_the_home_page(app):
    [b for b in app.button if b.label == "Prepare an HTML report"][0].click().run(timeout=120)
    assert not app.exception and not app.error
    html = app.session_state.report_html
    assert html.startswith("<!doctype html>") and "Plotly.newPlot" in html
    assert "ANOVA" in html and app.session_state.model.terms[0] in html


def test_stepwise_trace_rows_and_per_application_models(app):
    import numpy as np

    from gpudse_core.sim.simulator import simulate

    results = app.session_state.results
    rng = np.random.default_rng(0)
    apps = rng.choice(["matMul", "nw"], len(results))
    cycles = np.where(apps == "matMul", simulate(results, "matMul").cycles, simulate(results, "nw").cycles)
    app.session_state.results = results.assign(app=apps, cycles=cycles)
    app.switch_page("pages/4_Stepwise_fit.py").run(timeout=120)
    app.button[0].click().run(timeout=120)
    assert not app.exception and not app.error
    assert len(app.dataframe[0].value) >= 2  # the trace shows its rows
    by_app = app.session_state.models_by_app
    assert set(by_app) == {"matMul", "nw"} and by_app["nw"].terms[0] == "smp" and by_app["matMul"].terms[0] == "blk"
    app.switch_page("pages/5_Response_curves.py").run(timeout=120)
    assert not app.exception and not app.error
