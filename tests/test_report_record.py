"""The HTML report as the design review's record (gpudse_core.report.record): built from a workspace with
a fit, a search stored by ``gpudse search --workspace``, a "Simulate these" check and a comparison, the
report — parsed as HTML — carries every setting that produced the numbers (the samples' method and seed,
the simulator and its noise, the model's θ, φ, criterion, knots, robust rounds, transform and kind), the
search's goal, budget, best design and history, each checked design's predicted, interval and simulated
values, and the compared runs' settings — each read back from the workspace, not from the test."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from gpudse_core import fmt


class Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts, with the heading (h2/h3) it came under."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.heading, self.text, self.cell, self.row = "", None, None, None
        self.paragraphs: list[str] = []
        self.headings: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3", "p"):
            self.text = ""
        elif tag == "table":
            self.tables.append((self.heading, []))
        elif tag == "tr":
            self.row = []
            self.tables[-1][1].append(self.row)
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("h2", "h3") and self.text is not None:
            self.heading, self.text = self.text, None
            self.headings.append(self.heading)
        elif tag == "p" and self.text is not None:
            self.paragraphs.append(self.text)
            self.text = None
        elif tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data
        elif self.text is not None:
            self.text += data

    def table(self, heading: str) -> list[dict]:
        """The rows (dicts by header) of the first table under a heading that starts with *heading*."""
        for h, rows in self.tables:
            if h.startswith(heading):
                return [dict(zip(rows[0], r)) for r in rows[1:]]
        raise AssertionError(f"no table under {heading!r}; headings: {[h for h, _ in self.tables]}")


def _settings(rows: list[dict], part: str) -> dict[str, str]:
    return {r["setting"]: r["value"] for r in rows if r["part"].startswith(part)}


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """The example workspace, a second fit, a search from the command line, a check and a comparison."""
    import os

    home = tmp_path_factory.mktemp("home")
    old = os.environ.get("GPUDSE_HOME")
    os.environ["GPUDSE_HOME"] = str(home)
    try:
        yield _build()
    finally:
        if old is None:
            os.environ.pop("GPUDSE_HOME")
        else:
            os.environ["GPUDSE_HOME"] = old


def _build():
    import pandas as pd

    from gpudse_core.cli import main
    from gpudse_core.explore.checks import EXPLORE_ORIGIN
    from gpudse_core.report import compare
    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace import create_workspace, open_workspace, start_campaign
    from gpudse_core.workspace.example import fill_example
    from gpudse_core.workspace.fits import fit_stepwise_into

    ws, _ = create_workspace("design review")
    fill_example(ws)
    first = compare.snapshot(ws, param="simd")
    # a second fit with Stargazer's absolute thresholds: a model version whose settings differ
    fit_stepwise_into(ws, ws.get("results"), {"theta": 0.01, "phi": 0.01, "threshold_rule": "absolute",
                                              "robust": "none", "cells": False})
    assert main(["search", "stargazer", "--kernel", "matMul", "--goal", "min", "--budget", "14", "--initial", "10",
                 "--batch", "2", "--seed", "3", "--workers", "1", "--workspace", ws.id]) == 0
    ws = open_workspace(ws.id, trusted=True)
    model = ws.get("model").value
    space = ws.get("space").value
    designs = ws.get("results").value.table[list(space.parameter_names)].iloc[:3].reset_index(drop=True)
    pred = model.predict_details(designs) if hasattr(model, "predict_details") else None
    predicted = pd.Series(model.predict(designs), dtype=float)
    lower, upper = predicted * 0.9, predicted * 1.1  # an interval the check compares the simulations with
    rows = [{**{k: (v.item() if hasattr(v, "item") else v) for k, v in designs.iloc[i].items()},
             "predicted": float(predicted[i]), "lower": float(lower[i]), "upper": float(upper[i]), "group": i}
            for i in range(3)]
    del pred
    job = start_campaign(ws, AnalyticalBackend("matMul", noise=0.0), name="explore check1", points=designs,
                         extra={"chosen_by": EXPLORE_ORIGIN, "rows": rows}, origin=EXPLORE_ORIGIN)
    assert job.wait(300)
    ws.put_analysis("comparison", compare.comparison([first, compare.snapshot(ws, param="simd")], "simd"), inputs=[])
    return ws, workspace_report(ws)


def test_the_report_gives_every_setting_that_produced_the_model(reviewed):
    ws, html = reviewed
    page = Tables()
    page.feed(html)
    rows = page.table("What produced these numbers")
    samples = ws.get("samples").value
    s = _settings(rows, "Samples")
    assert s["method"] == samples.method and s["seed"] == fmt.fmt_value(samples.seed)
    r = _settings(rows, "Results")
    assert r["simulator"] == "built-in simulator" and r["kernel"] == "matMul"
    assert r["measurement noise"] == "σ = 1 % (log-normal)"  # the example's 1 % noise
    model_sv = ws.get("model")
    m = _settings(rows, f"Model v{model_sv.version}")
    settings = model_sv.value.settings
    assert m["kind"] == "stepwise (Stargazer Algorithm 1)" and m["criterion"].startswith(settings["criterion"] + ": ")
    assert m["θ (main effects)"] == "0.01, absolute" and m["φ (pairs)"] == "0.01"
    assert m["knots"] == f"{settings['knots']} ({settings['knot_placement']})"
    assert m["robust"] == "none (least squares)" and m["level cells"] == "no"
    assert m["response transform"].startswith(model_sv.value.transform)
    assert m["fitted on"] == f"results v{ws.get('results').version}"


def test_the_report_carries_the_search_its_best_design_and_history(reviewed):
    ws, html = reviewed
    study = ws.get("search").value
    page = Tables()
    page.feed(html)
    settings = {r["setting"]: r["value"] for r in page.table("The search's settings")}
    assert f"Search v{ws.get('search').version}: space stargazer, kernel matMul" in page.headings
    assert settings["goal"] == "minimise" and settings["budget"] == "14 simulations"
    assert settings["seed"] == "3" and settings["simulator"] == "built-in simulator, kernel matMul, noise-free"
    assert settings["stopped"] == study.stopped and settings["simulated"].startswith("14 (")
    best = study.best()
    said = next(p for p in page.paragraphs if p.startswith("Best design:"))
    assert f"; {fmt.fmt_number(best.value, 'cycles')} (simulation {best.number + 1}" in said
    assert all(f"{k} = {fmt.fmt_value(v)}" in said for k, v in best.design.items())
    history = page.table("History: every simulation")
    assert len(history) == len(study.trials) == 14
    assert [h["round"] for h in history] == [str(t.round) for t in study.trials]
    assert "Sequential search: every simulation and the best so far" in html  # the history's chart
    assert [h.version for h in ws.history("search")] == [ws.get("search").version]  # one version, all rounds


def test_the_report_carries_each_check_with_prediction_interval_and_simulation(reviewed):
    from gpudse_core.workspace.campaigns import campaign_table

    ws, html = reviewed
    page = Tables()
    page.feed(html)
    rows = page.table("Predicted against simulated (explore check1)")
    simulated = campaign_table(ws, "explore check1", include_failed=True)["cycles"].tolist()
    spec = next(c.spec for c in ws.campaigns() if c.name == "explore check1")
    assert len(rows) == 3
    for shown, chosen, sim in zip(rows, spec["rows"], simulated):
        assert shown["predicted (cycles)"] == fmt.fmt_number(chosen["predicted"])
        assert shown["lower (cycles)"] == fmt.fmt_number(chosen["lower"])
        assert shown["upper (cycles)"] == fmt.fmt_number(chosen["upper"])
        assert shown["simulated (cycles)"] == fmt.fmt_number(sim)
        inside = chosen["lower"] <= sim <= chosen["upper"]
        assert shown["in interval"] == ("yes" if inside else "no")


def test_the_report_gives_the_compared_runs_settings(reviewed):
    ws, html = reviewed
    page = Tables()
    page.feed(html)
    rows = page.table("What produced each run")
    runs = ws.get("comparison").value.runs
    for run in runs:
        got = {r["setting"]: r["value"] for r in rows if r["run"] == run.label}
        assert got["model version"] == f"v{run.version}" and got["results"] == run.results
        model = ws.get("model", run.version).value
        assert got["θ (main effects)"].split(",")[0] == fmt.fmt_value(model.settings["theta"])
        assert got["robust"].startswith("none" if model.settings["robust"] == "none" else "Huber")
    assert {r["value"] for r in rows if r["setting"] == "θ (main effects)"} == {"0.001, absolute", "0.01, absolute"}


def test_a_search_with_an_objective_reports_the_objective_and_the_simulated_response():
    """A min search of an objective (``gpudse search --objective``, which stores no --batch): the best
    design's objective and its simulated cycles, the batch read off the history's rounds."""
    from gpudse_core.report.record import search_items
    from gpudse_core.search.result import SearchStudy
    from gpudse_core.search.study import Trial

    settings = {"source": "space stargazer, kernel BFS", "goal": "min", "response": "cycles", "objective":
                "cycles * simd", "params": ["blk", "simd"], "budget": 7, "initial": 4, "seed": 2}
    cycles = [5000.0, 4000.0, 3000.0, 9000.0, 2500.0, 2600.0, 8000.0]
    simd = [8, 16, 32, 8, 8, 16, 32]
    rounds = [0, 0, 0, 0, 1, 1, 2]
    trials = tuple(Trial(i, r, r, {"blk": 4, "simd": s}, None, c * s, "ok", measured=c)
                   for i, (r, c, s) in enumerate(zip(rounds, cycles, simd)))
    items = search_items(SearchStudy(settings, trials, "budget"))
    table = dict(items[0][1].itertuples(index=False))
    assert table["objective"] == "cycles * simd" and table["batch"] == "2 per round (from the history)"
    said = next(i[1] for i in items if isinstance(i, tuple) and i[0] == "text")
    # the smallest objective is 2500 × 8 = 20,000 (simulation 5), not the fewest cycles
    assert said.startswith("Best design: blk = 4, simd = 8; objective 20,000 at 2,500 cycles (simulation 5")
    history = next(i[1] for i in items if isinstance(i, tuple) and i[0].startswith("History"))
    assert history["objective"].tolist() == [c * s for c, s in zip(cycles, simd)]
    assert history["cycles"].tolist() == cycles


def test_the_report_shows_each_proposals_interval_against_its_simulated_value():
    """The search section: the predicted value and 95 % interval each proposal carried, whether the simulated
    value fell inside, and the count (the initial sample has none)."""
    from gpudse_core.report.record import search_items
    from gpudse_core.search.result import SearchStudy
    from gpudse_core.search.study import Trial

    settings = {"source": "space stargazer, kernel BFS", "goal": "min", "response": "cycles", "params": ["blk"],
                "budget": 3, "initial": 1, "seed": 0}
    trials = (Trial(0, 0, 0, {"blk": 4}, None, 5000.0, "ok"),
              Trial(1, 1, 1, {"blk": 8}, 0.1, 4000.0, "ok", predicted=3900.0, lower=3000.0, upper=4500.0, level=0.95),
              Trial(2, 2, 2, {"blk": 16}, 0.1, 6000.0, "ok", predicted=3500.0, lower=2800.0, upper=5000.0, level=0.95))
    items = search_items(SearchStudy(settings, trials, "budget"))
    said = [i[1] for i in items if isinstance(i, tuple) and i[0] == "text"]
    assert any(t.endswith("1 of 2 simulated values (50 %) inside their 95 % intervals.") for t in said), said
    history = next(i for i in items if isinstance(i, tuple) and i[0].startswith("History"))
    table, units = history[1], history[2]
    assert table["inside"].tolist()[1:] == ["yes", "no"] and table[["predicted", "inside"]].iloc[0].isna().all()
    assert table["upper"].tolist()[1:] == [4500.0, 5000.0] and units["lower"] == "cycles"


def test_a_pareto_search_reports_its_simulated_front():
    from gpudse_core.report.record import search_items
    from gpudse_core.search.result import SearchStudy
    from gpudse_core.search.study import Trial

    settings = {"source": "space stargazer, kernel BFS", "goal": "pareto", "response": "cycles", "cost": "simd",
                "params": ["simd"], "budget": 4, "initial": 4, "seed": 0}
    points = [(8, 900.0), (16, 500.0), (32, 450.0), (32, 700.0)]  # (cost, cycles): the last is beaten
    trials = tuple(Trial(i, 0, 0, {"simd": c}, None, v, "ok", cost=float(c)) for i, (c, v) in enumerate(points))
    items = search_items(SearchStudy(settings, trials, "budget"))
    table = dict(items[0][1].itertuples(index=False))
    assert table["goal"] == "Pareto front against a cost" and table["cost"] == "simd"
    front = next(i[1] for i in items if isinstance(i, tuple) and i[0].startswith("Pareto front"))
    assert sorted(zip(front["cost"], front["cycles"])) == [(8, 900.0), (16, 500.0), (32, 450.0)]


def test_gpudse_workspace_report_writes_the_same_record(reviewed, tmp_path):
    """``gpudse workspace report`` on the workspace built from the command line carries every table the
    report function does (the settings, the search, its history, the check, the runs)."""
    from gpudse_core.cli import main

    ws, html = reviewed
    out = tmp_path / "report.html"
    assert main(["workspace", "report", ws.id, "-o", str(out)]) == 0
    ours, theirs = Tables(), Tables()
    ours.feed(html)
    theirs.feed(out.read_text())
    assert [h for h, _ in theirs.tables] == [h for h, _ in ours.tables]
    for heading in ("What produced these numbers", "The search's settings", "History: every simulation",
                    "Predicted against simulated (explore check1)", "What produced each run"):
        assert theirs.table(heading) == ours.table(heading)


def test_a_study_left_by_a_search_that_died_reads_as_interrupted_not_running(tmp_path, monkeypatch):
    """A study stored mid-search (no reason to stop yet) whose search is no longer running: the report
    says it ended before it finished rather than "running"."""
    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.search.result import SearchStudy
    from gpudse_core.search.study import Trial
    from gpudse_core.space.presets import load_space
    from gpudse_core.workspace import create_workspace

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    ws, _ = create_workspace("died")
    ws.put("space", load_space("stargazer"))
    settings = {"source": "space stargazer, kernel BFS", "goal": "min", "response": "cycles", "params": ["simd"],
                "budget": 10, "initial": 2, "seed": 0}
    trials = tuple(Trial(i, 0, 0, {"simd": s}, None, v, "ok") for i, (s, v) in enumerate([(8, 900.0), (16, 500.0)]))
    ws.put_analysis("search", SearchStudy(settings, trials, ""), inputs=[], partial=True)
    page = Tables()
    page.feed(workspace_report(ws))
    assert "Search v1: space stargazer, kernel BFS (ended before it finished: interrupted)" in page.headings
    settings = {r["setting"]: r["value"] for r in page.table("The search's settings")}
    assert settings["stopped"] == "not yet: stored while it ran"
