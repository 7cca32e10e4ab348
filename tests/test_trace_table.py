"""Stargazer Table 1 built from a fit's trace (gpudse_core.report.trace): R² columns for every criterion,
the paper's 'Adjusted R² of simd:' rows, the accepted term marked, the criterion's statistic beside."""

from __future__ import annotations

import pytest

from gpudse_core import load_preset, sample
from gpudse_core.model.stepwise import PAPER_SETTINGS, fit_stepwise
from gpudse_core.report import trace
from gpudse_core.sim.simulator import simulate


@pytest.fixture(scope="module")
def matmul():
    space = load_preset("stargazer")
    pts = sample(space, 300, seed=1).table()
    return list(space.parameter_names), pts.join(simulate(pts, "matMul"))[list(space.parameter_names) + ["cycles"]]


def _values_agree(model, table):
    """Every R² value in the table is the trace's own number for that candidate, in the candidate's column."""
    for step, row in zip(model.trace, table.rows):
        own = step["r2s"] if step["kind"] == "initial" else step["adj_r2s"]
        shown = sorted(v for v in row.values.values() if v is not None)
        assert shown == sorted(v for v in own.values() if v is not None) or step["kind"] == "lookahead", step
        if step["chosen"] in own and row.column is not None:
            assert row.values[row.column] == own[step["chosen"]]


def test_the_paper_settings_give_the_papers_layout(matmul):
    params, data = matmul
    model = fit_stepwise(data, "cycles", transform="log", **{**PAPER_SETTINGS, "theta": 0.003, "phi": 0.0})
    table = trace.build(model.trace, params)
    _values_agree(model, table)
    first = table.rows[0]
    assert first.label == "R²" and set(first.values) == set(params)  # every parameter alone
    assert first.column == max(first.values, key=first.values.get) and first.accepted
    inter = next(r for r in table.rows if r.kind == "interaction")
    head, other = inter.chosen.split(":")
    assert inter.label == f"adj. R² of {head}:" and inter.column == other  # 'Adjusted R² of simd:' under #blk
    assert table.columns[:len(params)] == params
    later = table.rows[1]
    assert later.label == "adj. R²" and later.statistic == "gain"
    assert later.statistic_value == pytest.approx(model.trace[1]["gain"])
    page = trace.html(table, current=2)
    assert page.count("class='add'") == sum(r.accepted and r.column is not None for r in table.rows)
    assert "<tr data-row='2' class=now>" in page


@pytest.mark.parametrize("criterion,statistic", [("ftest", "p (F-test)"), ("aic", "AIC drop"), ("bic", "BIC drop")])
def test_every_criterion_shows_r2_beside_its_own_statistic(matmul, criterion, statistic):
    params, data = matmul
    model = fit_stepwise(data, "cycles", transform="log", criterion=criterion)
    table = trace.build(model.trace, params)
    _values_agree(model, table)
    scored = [r for r, s in zip(table.rows, model.trace) if s.get("adj_r2s")]
    assert len(scored) >= 4 and all(r.values for r in scored)
    assert all(0.0 <= v <= 1.0 for r in scored[:1] for v in r.values.values())
    assert {r.statistic for r in scored[1:]} == {statistic}
    if criterion == "ftest":
        chosen = scored[1]
        assert chosen.statistic_value == model.trace[1]["candidates"][model.trace[1]["chosen"]]
        assert trace.statistic_text(chosen).startswith("p ")
    text = trace.text(table)
    assert text.splitlines()[0].split()[:3] == ["step", "row", params[0]]
    # every column the table has is in the header: no term is cut off into an ellipsis
    assert all(c in text.splitlines()[0] for c in trace.used_columns(table)) and "…" not in text


def test_names_from_the_data_are_escaped():
    rows = [{"step": 1, "kind": "initial", "metric": "r2", "candidates": {"<b>x</b>": 0.5}, "chosen": "<b>x</b>",
             "accepted": True, "gain": None, "terms": ["<b>x</b>"], "r2": 0.5, "adj_r2": 0.4,
             "r2s": {"<b>x</b>": 0.5}, "adj_r2s": {"<b>x</b>": 0.4}}]
    page = trace.html(trace.build(rows, ["<b>x</b>"]))
    assert "<b>x</b>" not in page
    assert "<td class='st'>1</td><td class='tm' title='first term'><b>+ &lt;b&gt;x&lt;/b&gt;" in page


def test_two_non_linear_parts_in_one_row_keep_both_values_and_mark_the_chosen():
    row = {"step": 16, "kind": "revisit", "metric": "p_value", "chosen": "b:a (full)", "accepted": True,
           "candidates": {"c:a (full)": 0.2, "b:a (full)": 1e-5}, "gain": 1e-5, "terms": ["a", "b", "c"],
           "r2": 0.99, "adj_r2": 0.98, "r2s": {}, "adj_r2s": {"c:a (full)": 0.9801, "b:a (full)": 0.9812}}
    table = trace.build([row], ["a", "b", "c"])
    r = table.rows[0]
    assert r.values == {trace.NONLINEAR: 0.9812, "c:a (full)": 0.9801} and r.column == trace.NONLINEAR
    assert "<td class='add' title=\"p = 1.0e-05\">0.9812</td>" in trace.html(table)  # its p on the cell
    assert r.scores == {trace.NONLINEAR: 1e-5, "c:a (full)": 0.2}


def test_the_statistic_and_r2_come_before_the_candidates_in_the_html_table(matmul):
    """On a projector (~1,200 px) the robust fit's 20-odd candidate columns pushed the statistic to
    x ≈ 2,190 px: the HTML table puts the step's outcome right after the frozen term column."""
    import re

    params, data = matmul
    model = fit_stepwise(data, "cycles", transform="log", criterion="ftest")
    table = trace.build(model.trace, params)
    page = trace.html(table)
    head = re.findall(r"<th[^>]*>([^<]*)</th>", page.split("</thead>")[0])
    assert head[:6] == ["step", "term", "statistic", "R²", "adj. R²", "values"], head
    assert head[6:6 + len(params)] == params and len(head) == 6 + len(trace.used_columns(table)) + 1
    rows = re.findall(r"<tr data-row='\d+'[^>]*>(.*?)</tr>", page)
    assert len(rows) == len(table.rows)
    for r, tr in zip(table.rows, rows):
        cells = re.findall(r"<td class='sm'>([^<]*)</td>", tr)
        assert cells == [trace.statistic_text(r), trace.fmt.fmt_r2(r.r2), trace.fmt.fmt_r2(r.adj_r2)], tr
    inter = next(r for r in table.rows if r.kind == "interaction" and r.accepted)
    assert f"+ {inter.chosen.replace(':', ':<wbr>')}" in page  # a long term wraps at its colons


def test_the_text_table_shows_the_threshold_each_step_was_held_to(matmul):
    """θ for a parameter, φ for a pair, φ₃ for a triple (Stargazer Algorithm 1): with three different limits
    the one a row names is the one its decision obeyed, so 'rejected p = 0.0039' reads against it."""
    params, data = matmul
    settings = {"theta": 0.002, "phi": 0.0005, "phi3": 0.0001}
    model = fit_stepwise(data, "cycles", transform="log", criterion="ftest", **settings)
    table = trace.build(model.trace, params)
    text = trace.text(table, model.settings)
    head = text.splitlines()[0].split()
    assert head[-3:] == ["statistic", "threshold", "R²"] and "threshold: what the statistic had to pass" in text
    limits = {"θ": 0.002, "φ": 0.0005, "φ₃": 0.0001}
    tested = [r for r in table.rows if r.kind not in ("initial", "forced") and r.statistic_value is not None
              and r.statistic.startswith("p")]
    assert {r.kind for r in tested} >= {"main", "interaction"}
    for r in tested:
        shown = trace.threshold_text(r, model.settings)
        sym = shown.split()[2]
        assert shown == f"p < {sym} = {limits[sym]:g}" and shown in text
        assert r.accepted == (r.statistic_value < limits[sym]), (r.chosen, r.statistic_value, shown)
        assert sym == {"main": "θ", "lookahead": "θ"}.get(r.kind, "φ₃" if r.chosen.count(":") >= 2 else "φ")
    assert trace.threshold_text(table.rows[0], model.settings) == "none (first term)"
    assert "threshold" not in trace.text(table).splitlines()[0]  # without settings: the table as before


def test_the_papers_relative_rule_is_shown_as_a_share_of_r2():
    row = trace.Row(3, "main", "adj. R²", {}, "simd", "simd", True, "gain", 0.1, 0.5, 0.5)
    paper = {**PAPER_SETTINGS, "theta": 0.003}
    assert trace.threshold_text(row, paper) == "gain ≥ θ × R² = 0.003 × R²"
    assert trace.threshold_text(row, {**paper, "threshold_rule": "absolute"}) == "gain > θ = 0.003"
    assert trace.threshold("revisit", "a:b:c", {"phi": 0.1, "phi3": 0.2}) == ("φ₃", 0.2)
    assert trace.threshold("nonlinear", "a:b", {"phi": 0.1, "phi3": 0.2}) == ("φ", 0.1)


def test_the_html_table_shows_the_same_threshold_as_the_text_table(matmul):
    """The dashboard's and the report's Table 1 name the limit each step was held to (θ, φ, φ₃: Stargazer
    Algorithm 1) right after the statistic, from the same :func:`trace.threshold_text` as the CLI's table."""
    import re

    params, data = matmul
    settings = {"theta": 0.002, "phi": 0.0005, "phi3": 0.0001}
    model = fit_stepwise(data, "cycles", transform="log", criterion="ftest", **settings)
    table = trace.build(model.trace, params)
    page = trace.html(table, model.settings)
    head = re.findall(r"<th[^>]*>([^<]*)</th>", page.split("</thead>")[0])
    assert head[:7] == ["step", "term", "statistic", "threshold", "R²", "adj. R²", "values"], head
    rows = re.findall(r"<tr data-row='\d+'[^>]*>(.*?)</tr>", page)
    shown = [re.findall(r"<td class='sm'>([^<]*)</td>", tr)[1] for tr in rows]
    assert shown == [trace._html.escape(trace.threshold_text(r, model.settings)) for r in table.rows]
    assert shown[0] == "none (first term)"
    assert "p &lt; θ = 0.002" in shown and "p &lt; φ = 0.0005" in shown  # a parameter's and a pair's limit
