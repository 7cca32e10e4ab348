"""A design review's numbers: fits headed by an out-of-sample error (never R²), the one rule that calls
a fit interpolating (and hides F-tests of numerical noise), reports that name what produced their
results and hold every current analysis, and runs compared side by side."""

from __future__ import annotations

import json
import math

import re
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from gpudse_core import load_preset, sample
from gpudse_core.model.headline import F_LIMIT, fit_headline, interpolation_note, loo_errors
from gpudse_core.model.inference import anova
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.sim.simulator import simulate

SPACE = load_preset("stargazer")
PARAMS = list(SPACE.parameter_names)


def results(kernel: str, noise: float, n: int = 100, seed: int = 1) -> pd.DataFrame:
    pts = sample(SPACE, n=n, seed=seed).table()
    return pts.join(simulate(pts, kernel, noise=noise, seed=seed))


@pytest.fixture(scope="module")
def noise_free():
    """CP without noise on 100 samples: a function the robust defaults reproduce in every row (16
    coefficients). (matMul without noise they approximate: 1 − R² ≈ 3e-6, tested below.)"""
    d = results("CP", 0.0)
    return fit_stepwise(d[PARAMS + ["cycles"]], "cycles"), d


@pytest.fixture(scope="module")
def noisy():
    d = results("BFS", 0.01, n=150)
    return fit_stepwise(d[PARAMS + ["cycles"]], "cycles"), d


# ---- the headline ----------------------------------------------------------------------------------
def test_a_noise_free_fit_interpolates_and_loses_its_r2_headline(noise_free):
    model, data = noise_free
    h = fit_headline(model, data)
    assert h.interpolates and h.value is None and h.source == "none"
    assert "interpolates" in h.note and "R²" in h.note
    assert "R²" not in h.text() and "interpolates" in h.text()
    # what it replaces is indeed noise: an F far beyond any test
    assert anova(model, data).F.max() > F_LIMIT


@pytest.mark.slow
def test_a_noisy_fit_is_headed_by_its_leave_one_out_error(noisy):
    model, data = noisy
    h = fit_headline(model, data)
    assert not h.interpolates and h.source == "leave-one-out"
    assert 0.001 < h.value < 0.2  # 1 % measurement noise: errors of a few per cent, not zero
    assert h.text().startswith("leave-one-out error ") and "R²" not in h.text()
    assert anova(model, data).F.max() <= F_LIMIT  # the rule's guarantee, on a real fit


def test_leave_one_out_errors_equal_refitting_without_each_row(noisy):
    """The hat-matrix shortcut against the definition: refit the same columns without row i, by least
    squares on the model's working response (the data, or a Huber fit's pseudo-observations)."""
    from gpudse_core.model.fitted import inverse_transform
    from gpudse_core.model.inference import _response, design_matrix

    model, data = noisy
    fast = loo_errors(model, data)
    A = design_matrix(model, data)
    z = _response(model, data)
    for i in (0, 7, 42, len(data) - 1):
        keep = np.arange(len(data)) != i
        beta = np.linalg.lstsq(A[keep], z[keep], rcond=None)[0]
        pred = inverse_transform(A[i] @ beta, model.transform)
        assert fast[i] == pytest.approx(abs(pred - data.cycles.iloc[i]) / data.cycles.iloc[i], rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("n, coef", [(300, 30), (50, 49), (1000, 5)])
def test_a_fit_not_called_interpolating_has_no_f_above_the_limit(n, coef):
    """The largest partial F is (n − p)/(1 − R²) · SS share ≤ (n − p)/(1 − R²): just past the rule's
    boundary the bound is within the limit, just inside it the note is given."""
    dof = n - coef
    boundary = max(1e-9, dof / F_LIMIT)
    assert interpolation_note(1 - boundary * 0.99, n, coef) is not None
    gap = boundary * 1.01
    assert interpolation_note(1 - gap, n, coef) is None and dof / gap <= F_LIMIT
    assert interpolation_note(0.9, n, coef, loo_median=1e-7) is not None  # left out yet exact: no noise
    assert interpolation_note(0.9, n, coef, loo_median=0.02) is None


# ---- the CLI -----------------------------------------------------------------------------------------
def cli(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "gpudse_core", *argv], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_simulator_adds_one_per_cent_noise_by_default_and_fit_says_when_it_interpolates(tmp_path):
    s, r, r0 = tmp_path / "s.csv", tmp_path / "r.csv", tmp_path / "r0.csv"
    assert cli("sample", "stargazer", "-n", "100", "--seed", "1", "-o", str(s)).returncode == 0
    assert cli("simulate", str(s), "--kernel", "matMul", "--workers", "1", "-o", str(r)).returncode == 0
    noise_free = cli("simulate", str(s), "--kernel", "matMul", "--noise", "0", "--workers", "1", "-o", str(r0))
    assert noise_free.returncode == 0
    ratio = np.log(pd.read_csv(r).cycles / pd.read_csv(r0).cycles)
    assert 0.006 < ratio.std() < 0.014  # σ = 0.01 of log-normal noise
    from gpudse_core.fmt import _repr_digits

    cells = [line.split(",")[PARAMS.__len__()] for line in r.read_text().splitlines()[1:]]
    assert max(_repr_digits(c) for c in cells) == 7  # computed cycles: 7 significant digits, not 17
    assert pd.read_csv(s).equals(sample(SPACE, n=100, seed=1).table())  # design values exactly
    out = cli("fit", str(r0), "--response", "cycles", "--params", ",".join(PARAMS), "-o", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    # noise-free matMul is approximated, not reproduced: R² close to 1 shows how close, never as 1.0000
    line = next(x for x in out.stdout.splitlines() if x.startswith("final model"))
    # (the data's R², on its response scale, 0.99985–0.99995 here: four decimals show it below 1)
    assert re.search(r"; R² 0\.9999\d*, adj R² 0\.999\d* of ", line) and "1.0000" not in line, line
    # noise-free CP is a function the model reproduces in every row: no R², the note instead
    r0cp = tmp_path / "r0cp.csv"
    assert cli("simulate", str(s), "--kernel", "CP", "--noise", "0", "--workers", "1", "-o", str(r0cp)).returncode == 0
    out = cli("fit", str(r0cp), "--response", "cycles", "--params", ",".join(PARAMS), "-o", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    final = out.stdout[out.stdout.index("final model"):].splitlines()
    assert "R²" not in final[0] and final[1].startswith("note: This fit interpolates")
    out = cli("fit", str(r), "--response", "cycles", "--params", ",".join(PARAMS), "-o", str(tmp_path / "m1.json"))
    line = next(x for x in out.stdout.splitlines() if x.startswith("final model"))
    assert re.search(r"; leave-one-out error [\d.]+ % \(median, over 100 rows\); R² 0\.\d{4}", line), line


# ---- reports -------------------------------------------------------------------------------------------
@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path


def study(name: str, kernel: str, noise: float, n: int = 150):
    """A workspace whose results come from a built-in simulator campaign (the record names the kernel and noise)."""
    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace import create_workspace
    from gpudse_core.workspace.campaigns import start_campaign

    ws, _ = create_workspace(name)
    ws.set_space(SPACE, "stargazer")
    ws.set_samples(sample(SPACE, n=n, seed=3), "uniform")
    start_campaign(ws, AnalyticalBackend(kernel, noise=noise, seed=3), name=f"{kernel}-run", workers=1, adopt=True)
    deadline = time.monotonic() + 600  # a deadline only, no timing assertion
    while ws.jobs(active=True):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    res = ws.get("results")
    assert res.ok and res.origin.startswith(f"campaign {kernel}-run"), res.origin
    model = fit_stepwise(res.value.table[PARAMS + ["cycles"]], "cycles")
    ws.set_model(model, "stepwise", inputs=[res])
    return ws


def headings(html: str) -> list[str]:
    return [re.sub("<.*?>", "", h) for h in re.findall(r"<h[123]>.*?</h[123]>", html)]


@pytest.mark.slow
def test_a_bfs_report_names_bfs_its_noise_and_every_current_analysis(home):
    from gpudse_core.explore.best import find_best
    from gpudse_core.model.validation import validate
    from gpudse_core.report import compare
    from gpudse_core.report.workspace_report import workspace_report

    ws = study("Kernel review", "BFS", 0.02)
    other = study("AES review", "AES", 0.01, n=120)
    space, results, model = ws.get("space"), ws.get("results"), ws.get("model")
    val = validate(results.value.table, "cycles", PARAMS, train_sizes=[40, 80], test_size=40, repeats=1,
                   models=["stepwise", "fixed"], seed=1)
    ws.put_analysis("validation", val, inputs=[results, model])
    ws.put_analysis("true_error", {"kernel": "BFS", "points": 10, "mean": 0.05, "median": 0.04, "p98": 0.2,
                                   "max": 0.3, "quantiles": np.linspace(0, 0.3, 1001)}, inputs=[results, model, space])
    best = find_best(model.value, space.value, top=5, pareto="simd", workers=1)
    ws.put_analysis("scan", {"best": best.best, "pareto": best.pareto, "request": {"cost": "simd"}},
                    inputs=[model, space])
    ws.put_analysis("heatmap", {"source": "t", "request": None, "cost": np.arange(64.0).reshape(8, 8)}, inputs=[])
    ws.put_analysis("comparison", compare.comparison([compare.snapshot(ws, param="simd"),
                                                      compare.snapshot(other, param="simd")], "simd"), inputs=[])
    html = workspace_report(ws)
    title = re.search(r"<h1>(.*?)</h1>", html).group(1)
    assert title == "gpudse — Kernel review: BFS on the built-in simulator, 2 % noise, 150 results"
    sub = re.search(r"<p class='muted'>(.*?)</p>", html).group(1)
    assert re.match(r"gpudse \d+\.\d+\.\d+ · made \d{4}-\d\d-\d\d \d\d:\d\d UTC · Design space v1, Samples v1, "
                    r"Results v\d+, Model v1", sub) and "Validation v1" in sub and "Comparison v1" in sub
    h = headings(html)
    order = ["The fit", "Accuracy: validation", "Accuracy: diagnostics", "Accuracy: the true error",
             "Explore: the best designs", "Explore: one parameter at a time", "Ray tracing", "Runs side by side"]
    at = [next(i for i, x in enumerate(h) if x.startswith(o)) for o in order]
    assert at == sorted(at), h  # in the pages' order
    assert "Left out" not in html
    assert "Stargazer Fig. 6" in html  # the stepwise/fixed comparison of the validation
    assert "partial_ss (cycles²)" in html or "partial_ss ((log cycles)²)" in html  # ANOVA SS in the response's unit²
    assert "predicted (cycles)" in html  # best designs' predictions with their unit
    assert ">True<" not in html and ">False<" not in html
    assert "AES on the built-in simulator, 1 % noise, 120 results" in html  # the other run names its origin
    m = re.search(r"<h2>Model</h2><p><b>(.*?)</b>", html).group(1)
    assert m.startswith("Leave-one-out error") or m.startswith("Validation error")  # the headline, not R²


def test_a_noise_free_report_shows_no_r2_headline_and_no_f_test(home):
    from gpudse_core.report.workspace_report import workspace_report

    ws = study("Noise-free", "matMul", 0.0, n=100)
    html = workspace_report(ws)
    assert "noise-free" in re.search(r"<h1>(.*?)</h1>", html).group(1)
    model_part = html[html.index("<h2>Model</h2>"):html.index("</p>", html.index("Terms in selection order"))]
    lead = re.search(r"<h2>Model</h2><p><b>(.*?)</b>", model_part).group(1)
    assert lead.startswith("Leave-one-out error ") or lead.startswith("Interpolates")  # never R²
    assert "noise-free" in model_part and not re.search(r"R² [\d.]", html)  # no R² value anywhere
    assert "ANOVA (Lee" not in html and "partial_ss" not in html and "Q-Q" not in html  # no F-tests, no residuals


# ---- the dashboard (Streamlit's AppTest, as tests/test_app.py) ---------------------------------------------
@pytest.mark.slow
def test_a_noise_free_fit_on_every_page_and_two_runs_side_by_side(home):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from dashboard import frame as ui

    def page(at, path):
        at.switch_page(path).run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    w = at.session_state["_gpudse_ws"]
    example_version = w.get("model").version
    d = results("CP", 0.0)
    res = w.set_results(d, "cycles", "built-in simulator, CP, noise-free", inputs=("space",))
    w.set_model(fit_stepwise(d[PARAMS + ["cycles"]], "cycles"), "stepwise on noise-free results", inputs=[res])
    page(at, "app.py")
    side = " ".join(c.value for c in at.sidebar.caption)
    assert "interpolates" in side and "R²" not in side
    assert any("accuracy out of sample:** interpolates" in m.value for m in at.markdown)
    page(at, "pages/4_Stepwise_fit.py")
    labels = [m.label for m in at.metric]
    assert labels[0] == "Out-of-sample error" and at.metric[0].value == "interpolates"
    assert not any("R²" in label for label in labels)
    assert any("This fit interpolates" in x.value for x in at.warning)
    assert not any("F" in df.value.columns for df in at.dataframe)  # no ANOVA table at all
    page(at, "pages/6_Accuracy.py")
    assert any("This fit interpolates" in x.value for x in at.info)  # diagnostics: the note, no residual plots
    # runs side by side: the example's model (1 % noise) and the noise-free one
    pick = next(m for m in at.multiselect if m.label == "Runs")
    assert len(pick.options) >= 2
    mine = [o for o in pick.options if o.startswith(w.name)]
    pick.set_value(mine[:2])
    next(m for m in at.selectbox if m.label == "Response curves along").set_value("simd")
    next(b for b in at.button if b.label == "Compare").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    cmp = w.get("comparison").value
    assert {r.version for r in cmp.runs} == {example_version, w.get("model").version} and cmp.param == "simd"
    table = next(df.value for df in at.dataframe if "run" in df.value.columns)
    assert len(table) == 2 and set(table["out-of-sample error (median)"]) >= {"interpolates"}
    charts = at.get("plotly_chart")
    # the spec as text, whatever plotly's JSON encoder escaped (with orjson installed it writes R² as is,
    # without it as R\\u00b2); titles wrapped in columns read with a space
    titles = " ".join(json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in charts).replace("<br>", " ")
    for t in ("Error CDFs of the runs", "contribution to R², per run", "Response along simd"):
        assert t in titles, t
    # a reload keeps the comparison and the picker's choice
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    again.query_params["ws"] = w.id
    again.run()
    page(again, "pages/6_Accuracy.py")
    assert next(m for m in again.multiselect if m.label == "Runs").value == mine[:2]
    assert any("2 runs side by side" in m.value for m in again.markdown)
    html = ui.report_html(w)
    assert "<h2>Runs side by side</h2>" in html and all(r.label in html for r in cmp.runs)
    assert "Error CDFs of the runs" in html


# ---- CSV precision ---------------------------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402


def written(columns: dict, precision) -> pd.DataFrame:
    import io

    from gpudse_core.space.sampling import write_csv

    buf = io.StringIO()
    write_csv(buf, {k: np.asarray(v) for k, v in columns.items()}, precision)
    return pd.read_csv(io.StringIO(buf.getvalue()), keep_default_na=True), buf.getvalue()


short = hst.decimals(min_value=-1e9, max_value=1e9, places=3, allow_nan=False, allow_infinity=False).map(float)
anyfloat = hst.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False)


@settings(max_examples=200)
@given(hst.lists(short, min_size=1, max_size=20))
def test_auto_precision_keeps_the_datas_own_digits_exactly(values):
    """Values that came in as text with a few decimals (measurements, design values) read back equal."""
    back, _ = written({"x": values}, None)
    assert back.x.tolist() == values


@settings(max_examples=200)
@given(hst.lists(anyfloat, min_size=1, max_size=20), hst.integers(1, 17))
def test_a_given_precision_reads_back_within_its_digits(values, digits):
    back, text = written({"x": values}, digits)
    for v, b in zip(values, back.x.tolist()):
        # half a unit of the last written digit, and half a unit in the last place of the float the text reads
        # back as (at 16-17 digits the written decimal is finer than a double: 10000000000000.38 reads back
        # as 10000000000000.380859375)
        assert abs(b - v) <= 5 * 10.0 ** -digits * abs(v) * (1 + 1e-12) + 0.5 * math.ulp(b) + 1e-300
    assert "e" not in text.lower().replace("x\n", "")  # positional notation, never 1e+05


@settings(max_examples=100)
@given(hst.lists(anyfloat.filter(lambda v: v != 0), min_size=1, max_size=20))
def test_auto_precision_writes_computed_values_to_seven_digits(values):
    from gpudse_core.fmt import CSV_COMPUTED_DIGITS, CSV_EXACT_DIGITS, _repr_digits

    computed = [v * (1 + 1 / 3) for v in values]  # a computation's decimals
    back, text = written({"y": computed}, None)
    if any(_repr_digits(repr(v)) > CSV_EXACT_DIGITS for v in computed):
        cells = text.splitlines()[1:]
        assert all(_repr_digits(c) <= CSV_COMPUTED_DIGITS for c in cells)
    for v, b in zip(computed, back.y.tolist()):
        assert b == pytest.approx(v, rel=5e-7)


def test_nan_stays_empty_and_integers_and_text_are_untouched():
    back, text = written({"a": [1.5, np.nan, 2.123456789012345], "n": [1, 2, 3], "t": ["x", "y,z", ""]}, None)
    assert text.splitlines()[1:] == ["1.5,1,x", ",2,\"y,z\"", "2.123457,3,"]
    assert np.isnan(back.a[1])
