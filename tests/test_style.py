"""The one chart style: a palette with twelve distinguishable colours, the template carried
inside every figure (so the report is in colour even where Streamlit replaced Plotly's default template),
log2 axes ticked at the legal values, legal values marked on response curves with the model line dashed, and
the HTML report in colour, offline and without "NaN"."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.explore.scan import interaction_grid, response_curve, sensitivity
from gpudse_core.model.inference import anova, qq_points, residual_table, variable_clusters
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.model.validation import ValidationResult
from gpudse_core.report import figures, style
from gpudse_core.report.html import html_report
from gpudse_core.sim.simulator import simulate
from gpudse_core.workspace.project import Project


def lab(hexcolour: str) -> np.ndarray:
    """sRGB → CIELAB (D65), to measure how far apart two colours look."""
    c = np.array([int(hexcolour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)])
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_palette_has_twelve_distinguishable_colours_readable_on_white():
    assert len(style.PALETTE) >= 12 and len(set(style.PALETTE)) == len(style.PALETTE)
    labs = [lab(c) for c in style.PALETTE]
    closest = min(float(np.linalg.norm(a - b)) for a, b in itertools.combinations(labs, 2))
    assert closest >= 25, closest  # CIE76 ΔE; 2.3 is a just-noticeable difference
    assert all(20 <= L[0] <= 80 for L in labs)  # no white-on-white yellow, no near-black


@pytest.fixture(scope="module")
def fitted():
    space = load_preset("stargazer")
    s = sample(space, 150, seed=2)
    results = s.table().join(simulate(s.table(), "matMul", noise=0.01, seed=2))
    model = fit_stepwise(results[list(space.parameter_names) + ["cycles"]], "cycles", transform="log")
    base = {p.name: p.values[len(p.values) // 2] for p in space.parameters}
    return space, results, model, base


def fake_validation() -> ValidationResult:
    rng = np.random.default_rng(0)
    models = ["stepwise", "fixed", "forest"]
    errors = {m: {n: rng.gamma(2, 0.02 * (k + 1), 200) for n in (30, 60, 90)} for k, m in enumerate(models)}
    errors["fixed"][90][:3] = np.inf  # a blow-up: non-finite errors
    return ValidationResult("cycles", "log", [30, 60, 90], 200, 1, models, errors)


def all_figures(fitted):
    space, results, model, base = fitted
    val = fake_validation()
    resid = residual_table(model, results)
    xs, ys, z = interaction_grid(model, "blk", "simd", base, space)
    span = sensitivity(model, base, space).groupby("parameter").change.agg(["min", "max"])
    curve = response_curve(model, results, "blk", base, space)
    return {
        "contributions": figures.contributions(model),
        "response_curve": figures.response_curve(curve, "blk", "#blk", "cycles", results,
                                                 parameter=space.parameter("blk")),
        "error_cdf": figures.error_cdf(val), "error_trend": figures.error_trend(val),
        "error_by_size": figures.error_by_size(val),
        "predicted_vs_observed": figures.predicted_vs_observed(model, results),
        "residuals_vs_fitted": figures.residuals_vs_fitted(resid, "log"),
        "qq_plot": figures.qq_plot(qq_points(resid.residual.to_numpy())),
        "residuals_by": figures.residuals_by(resid, "blk", space.parameter("blk")),
        "dendrogram": figures.dendrogram(variable_clusters(results, list(space.parameter_names))),
        "interaction_heatmap": figures.interaction_heatmap(xs, ys, z, space.parameter("blk"),
                                                           space.parameter("simd"), "cycles"),
        "sensitivity": figures.sensitivity(span, "cycles"),
        "sample_counts": figures.sample_counts(results, space.parameters),
        "space_error_cdf": figures.space_error_cdf(np.abs(np.random.default_rng(1).normal(0, 0.05, 5000))),
        "pareto": figures.pareto(pd.DataFrame({"cost": [1, 2, 3], "predicted": [9, 5, 4]}), "area", "cycles"),
    }


def trace_colours(tr: dict) -> set[str]:
    out = set()
    for part in ("line", "marker"):
        c = (tr.get(part) or {}).get("color")
        if isinstance(c, str):
            out.add(c)
    if tr.get("fillcolor"):
        out.add(tr["fillcolor"])
    return out


def test_every_builder_carries_the_template_and_explicit_colours(fitted):
    for name, fig in all_figures(fitted).items():
        d = json.loads(fig.to_json())
        layout = d["layout"]
        assert layout["template"]["layout"]["colorway"] == list(style.PALETTE), name
        assert layout["template"]["layout"]["font"]["size"] >= 14, name
        for tr in d["data"]:
            if tr["type"] == "heatmap":
                assert tr.get("colorscale"), name
                continue
            colours = trace_colours(tr)
            assert colours, f"{name}: trace {tr.get('name')!r} has no colour of its own"
            assert not any(re.fullmatch(r"#0000\d\d", c) for c in colours), name  # Streamlit's placeholders
        title = layout.get("title", {}).get("text", "")
        assert all(len(line) <= style.TITLE_WRAP for line in title.split("<br>")), (name, title)


def test_distinct_series_get_distinct_colours_and_one_legend_entry(fitted):
    space, results, model, base = fitted
    m2 = fit_stepwise(results[list(space.parameter_names) + ["cycles"]], "cycles", theta=0.001, phi=0.001)
    fig = figures.contributions(model, {"A": model, "B": m2})
    d = json.loads(fig.to_json())["data"]
    colour_of = {}
    for tr in d:
        colour_of.setdefault(tr["name"], set()).add(tr["marker"]["color"])
    assert all(len(c) == 1 for c in colour_of.values())  # a term keeps its colour in every bar
    firsts = [next(iter(c)) for c in colour_of.values()]
    assert len(set(firsts[:12])) == min(12, len(firsts))  # different terms, different colours
    shown = [tr["name"] for tr in d if tr.get("showlegend", True)]
    assert sorted(shown) == sorted(set(shown)) == sorted(colour_of)  # one legend entry per term
    cdf = json.loads(figures.error_cdf(fake_validation()).to_json())["data"]
    assert len({next(iter(trace_colours(t))) for t in cdf}) == 3
    assert any("not finite" in t["name"] for t in cdf)  # the blow-up is counted, not hidden


def test_thirteen_and_more_series_stay_distinguishable(fitted):
    space, results, model, base = fitted
    curves = {f"app{i}": response_curve(model, results, "blk", base, space, points=30) for i in range(14)}
    d = json.loads(figures.response_curves(curves, "blk", "#blk", "cycles", parameter=space.parameter("blk"))
                   .to_json())["data"]
    markers = [t for t in d if t.get("mode") == "markers"]
    look = [(t["marker"]["color"], t["marker"]["symbol"]) for t in markers]
    assert len(markers) == 14 and len(set(look)) == 14
    assert len({c for c, _ in look[:12]}) == 12


def test_axis_for_parameters():
    space = load_preset("stargazer")
    blk = style.axis_for(space.parameter("blk"))
    assert blk["type"] == "log" and blk["tickvals"] == [1, 2, 4, 8, 16] and blk["ticktext"] == ["1", "2", "4", "8",
                                                                                               "16"]
    assert blk["title"]["text"] == "#blk (blocks/core)"
    assert style.axis_for(space.parameter("mshr"))["type"] == "linear"  # 1, 2, 3: not geometric
    assert style.axis_for(space.parameter("inter"))["tickvals"] == [2, 4, 6]
    from gpudse_core import Parameter

    cat = style.axis_for(Parameter("sched", ("gto", "lrr"), kind="categorical"))
    assert cat["type"] == "category" and cat["categoryarray"] == ["gto", "lrr"]
    assert style.is_geometric([8, 16, 32]) and not style.is_geometric([2, 4, 6]) and not style.is_geometric([0, 1, 2])


@pytest.mark.parametrize("lo, hi", [(2.3, 97.0), (0.5, 3.0), (0.01, 1e4), (1e3, 2.2e3), (5, 5)])
def test_log_ticks_have_no_two_to_nine_clutter(lo, hi):
    ticks = style.log_ticks(lo, hi)
    assert len(ticks) >= 2 and ticks[0] <= lo and ticks[-1] >= hi
    mantissas = {round(t / 10 ** np.floor(np.log10(t)), 6) for t in ticks}
    assert mantissas <= {1, 2, 5}
    axis = style.log_axis([lo, hi], "error", unit="%")
    assert all(t.endswith(" %") for t in axis["ticktext"]) and axis["type"] == "log"


def test_response_curve_marks_legal_values_and_dashes_the_line_between_them(fitted):
    space, results, model, base = fitted
    curve = response_curve(model, results, "blk", base, space, points=120)
    d = json.loads(figures.response_curve(curve, "blk", "#blk", "cycles", results,
                                          parameter=space.parameter("blk")).to_json())
    line = next(t for t in d["data"] if t["name"] == "model")
    assert line["line"]["dash"] == "dash"
    legal = next(t for t in d["data"] if t["name"] == "model at legal values")
    assert legal["x"] == [1.0, 2.0, 4.0, 8.0, 16.0]
    exact = model.predict(pd.DataFrame([{**base, "blk": v} for v in (1, 2, 4, 8, 16)]))
    np.testing.assert_allclose(legal["y"], exact, rtol=2e-3)  # read off the 120-point curve
    assert d["layout"]["xaxis"]["type"] == "log" and d["layout"]["xaxis"]["tickvals"] == [1, 2, 4, 8, 16]
    # exact values when given; no parameter: the old solid line, no markers
    given = pd.DataFrame({"blk": [1, 2, 4, 8, 16], "predicted": exact})
    d2 = json.loads(figures.response_curve(curve, "blk", "#blk", "cycles", legal=given,
                                           parameter=space.parameter("blk")).to_json())
    np.testing.assert_allclose(next(t for t in d2["data"] if t.get("mode") == "markers")["y"], exact)
    plain = json.loads(figures.response_curve(curve, "blk", "#blk", "cycles").to_json())
    assert [t["line"].get("dash") for t in plain["data"] if t["name"] == "model"] == ["solid"]


def visible_text(page: str) -> str:
    return re.sub(r"<script.*?</script>", "", page, flags=re.S)


def test_html_report_is_in_colour_offline_and_without_nan(fitted):
    space, results, model, base = fitted
    import streamlit.elements.plotly_chart  # noqa: F401 — replaces Plotly's default template, as in the app

    old = pio.templates.default
    try:
        assert pio.templates.default == "streamlit"
        import plotly.graph_objects as go

        foreign = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="drawn on a page"))  # under Streamlit's template
        figs = list(all_figures(fitted).values()) + [foreign]
        table = anova(model, results)
        assert table["F"].isna().any()  # the ERROR row: what used to print "NaN"
        page = html_report(Project(space, None, results, "cycles", model), figs,
                           {"ANOVA": table, "Validation": fake_validation().summary()})
    finally:
        pio.templates.default = old
    text = visible_text(page)
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
    bundle = [sc for sc in scripts if "plotly.js v" in sc[:3000]]
    charts = [sc for sc in scripts if "Plotly.newPlot" in sc and sc not in bundle]
    assert len(bundle) == 1 and len(charts) == len(figs)  # plotly.js inlined once; every chart drawn
    assert "NaN" not in text and "e+0" not in text and "NaN" not in "".join(charts)
    assert "<td>–</td>" in text  # ANOVA's ERROR row
    for chart in charts:
        assert not re.search(r"#0000(0\d|10)\b", chart)  # none of Streamlit's placeholder colours
        assert '"colorway":["#4E79A7"' in chart  # the gpudse template travels with the chart
    assert all(colour in "".join(charts) for colour in style.PALETTE[:4])
    assert style.PALETTE[0] in charts[-1]  # the page-drawn figure was recoloured too
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']https?://", page)  # nothing fetched
    assert "cdn.plot.ly" not in text


def test_a_stopped_validation_draws_only_the_sizes_it_reached():
    """A validation stopped after N = 30 (of 30, 60, 90): the CDF is N = 30's, not an empty N = 90;
    Fig. 6 has no empty slots; the maximum shows as markers (a line of one point would not show)."""
    full = fake_validation()
    errors = {m: {30: e[30]} for m, e in full.errors.items()}
    partial = ValidationResult("cycles", "log", [30, 60, 90], 200, 1, full.models, errors)
    cdf = json.loads(figures.error_cdf(partial).to_json())
    assert "N = 30" in cdf["layout"]["title"]["text"] and len(cdf["data"]) == 3
    bars = json.loads(figures.error_by_size(partial, full.models).to_json())["data"]
    assert all(tr["x"] == ["30"] for tr in bars)
    trend = json.loads(figures.error_trend(partial).to_json())["data"]
    assert all("markers" in tr["mode"] for tr in trend) and {tr["name"].split()[-1] for tr in trend} == {"mean", "max"}
