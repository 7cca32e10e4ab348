"""A lecture in a real browser: presentation mode at 1280×800 (a projector), the stepwise replay played
and followed, an input changed mid-session and the page reloaded (Stargazer Table 1 on screen); and
docs/lecture.md followed step by step, failing on a stale banner, a blank chart, an exception or a trace
whose statistic column is out of view.

Uses the session's served dashboard and headless Chromium (tests/browser_support.py: a fresh
GPUDSE_HOME, ``streamlit run app.py`` on a free port, ``/usr/bin/chromium``; skips where they are
missing, fails in CI). Screenshots go to ``tests/artifacts/lecture_*.png`` for a person to look at.
"""

from __future__ import annotations

from browser_support import SHOTS, Tab

ROW_IN_VIEW = """() => {
  const box = [...document.querySelectorAll('.gtrace.follow')].pop();
  const row = box && box.querySelector('tr.now');
  if (!row) return null;
  const b = box.getBoundingClientRect(), r = row.getBoundingClientRect();
  const head = box.querySelector('thead').getBoundingClientRect();
  return {row: +row.dataset.row, inBox: r.top >= head.bottom - 1 && r.bottom <= b.bottom + 1,
          inWindow: r.top >= 0 && r.bottom <= window.innerHeight, overflows: box.scrollHeight > box.clientHeight,
          headers: [...box.querySelectorAll('thead th')].map(th => th.innerText),
          labels: [...box.querySelectorAll('td.lb')].map(td => td.innerText)};
}"""
SCROLL_TO_REPLAY = """() => [...document.querySelectorAll('[data-testid=stExpander]')]
  .find(e => e.innerText.includes('Replay the fit row by row')).scrollIntoView({block: 'start'})"""
PRESENTING = """() => ({font: getComputedStyle(document.documentElement).fontSize,
  sidebar: document.querySelector('[data-testid=stSidebar]')?.getAttribute('data-collapsed')})"""


def _present(a: Tab, ws_id: str, title_path: str, heading: str) -> None:
    a.page.goto(f"{a.server}/{title_path}?ws={ws_id}&present=1", wait_until="domcontentloaded")
    a.page.get_by_role("heading", name=heading).first.wait_for(timeout=120_000)
    a.settle()


def _shot(a: Tab, name: str) -> None:
    a.page.screenshot(path=str(SHOTS / f"lecture_{name}.png"))


def test_a_lecture_replays_the_r2_table_in_presentation_mode(browser, server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    a = Tab(browser, server, "lecture")
    page = a.page
    page.goto(server, wait_until="domcontentloaded")
    a.text("Where you are", timeout=180_000)
    a.settle()
    ws_id = a.ws_id
    a.key_cookie(ws_id)
    _present(a, ws_id, "", "gpudse — GPU design space exploration")  # the link a lecturer bookmarks
    assert page.evaluate(PRESENTING) == {"font": "19px", "sidebar": "true"}
    _shot(a, "00_home")
    _present(a, ws_id, "Stepwise_fit", "Fit a model")
    a.check("fit page, presentation mode")
    look = page.evaluate(PRESENTING)
    assert look == {"font": "19px", "sidebar": "true"}, look  # larger type, the sidebar folded
    _shot(a, "01_fit_page")

    # the replay, played as in a lecture: the newest row stays in view and highlighted
    a.text("Replay the fit row by row").click()
    a.settle()
    page.evaluate(SCROLL_TO_REPLAY)  # the lecturer scrolls the replay to the top of the screen
    a.button("Play").click()
    n = int(a.text("Row 1 of").inner_text().split(" of ")[1].split()[0].strip("*"))
    target = min(n, 12)
    a.text(f"Row {target} of {n}", timeout=60_000)
    state = page.evaluate(ROW_IN_VIEW)
    _shot(a, "02_replay_playing")
    assert state is not None and state["row"] >= target, state
    assert state["inBox"] and state["inWindow"], state  # the current row is visible, not scrolled away
    assert state["overflows"] or target < 8, state  # the table is taller than its box: following is needed
    assert {"blk", "simd", "statistic", "threshold", "R²"} <= set(state["headers"]), state["headers"]
    assert state["labels"][0] == "R²" and "adj. R²" in state["labels"], state["labels"]  # Table 1's rows
    chart = page.evaluate("() => { const g = document.querySelector('[data-testid=stExpander] .js-plotly-plot');"
                          " return [g._fullLayout.xaxis.range, g._fullLayout.title.text]; }")
    assert chart[0][0] >= 0 and chart[1].startswith("Row "), chart  # −log10 p or R²: never a negative axis
    a.button("Pause").click()
    a.settle()
    a.check("replay")

    # the same at 1920×1080
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.wait_for_timeout(800)
    page.evaluate(SCROLL_TO_REPLAY)
    page.wait_for_timeout(300)
    assert page.evaluate(ROW_IN_VIEW)["inWindow"]
    assert page.evaluate(PRESENTING)["font"] == "23px"
    _shot(a, "03_replay_1920")
    page.set_viewport_size({"width": 1280, "height": 800})

    # mid-session: another criterion (the gain input follows it), Stargazer as written, refit
    a.choose("Criterion", "adjr2")
    assert a.has("Gain measured against")
    a.choose("Criterion", "ftest")
    assert not a.has("Gain measured against")  # the F-test compares no gain
    page.get_by_text("Stargazer as written").first.click()
    a.settle()
    assert page.get_by_role("combobox", name="Transform").first.input_value() == "none"  # §5: no transform
    a.button("Fit").click()
    a.text("Model version 2", timeout=120_000)
    a.settle()
    a.check("refit")
    _shot(a, "04_refit")

    # reload: still presenting, the new model's table with R² and the gain the paper's rule compared
    page.reload(wait_until="domcontentloaded")
    page.get_by_role("heading", name="Fit a model").first.wait_for(timeout=120_000)
    a.settle()
    assert "present=1" in page.url and page.evaluate(PRESENTING)["font"] == "19px"
    a.text("Model version 2")
    labels = page.locator(".gtrace td.lb").all_inner_texts()
    stats = page.locator(".gtrace tbody tr td:nth-child(3)").all_inner_texts()  # the statistic, beside the term
    assert labels[0] == "R²" and labels[1].startswith("adj. R²"), labels
    assert any(s.startswith("gain +") for s in stats), stats  # adjusted R² against θ: the gain is shown
    assert page.locator(".gtrace td.add").count() >= 3  # the accepted terms, bold
    a.check("reload")
    _shot(a, "05_after_reload")
    a.close()


METRICS_CUT = """() => [...document.querySelectorAll('[data-testid=stMetricValue]')]
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""
PRIMARY = """() => [...document.querySelectorAll('button')]
  .filter(b => (b.getAttribute('data-testid') || '').includes('primary') && b.offsetParent !== null).length"""


def test_the_smaller_lecture_items_in_presentation_mode(browser, server):
    """The lecture's smaller items, each seen at 1280×800 in presentation mode with an input changed."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    a = Tab(browser, server, "lecture_items")
    page = a.page
    page.goto(server, wait_until="domcontentloaded")
    a.text("Where you are", timeout=180_000)
    a.settle()
    ws_id = a.ws_id
    a.key_cookie(ws_id)

    # Sampling: the inputs follow "How many"; one primary button
    _present(a, ws_id, "Sampling", "Sample design points")
    a.text("Points per value")  # the whole page drawn
    _shot(a, "09_sampling")
    assert page.get_by_role("spinbutton", name="N (points)").count() == 1
    assert page.get_by_role("spinbutton", name="Fraction (0–1]").count() == 0
    page.get_by_text("Fraction of the whole space").first.click()
    a.settle()
    assert page.get_by_role("spinbutton", name="N (points)").count() == 0
    assert page.get_by_role("spinbutton", name="Fraction (0–1]").count() == 1
    assert page.evaluate(PRIMARY) == 1
    a.check("sampling")
    _shot(a, "10_sampling_fraction")

    # Design space: Load preset asks before it replaces the space; Cancel keeps it
    _present(a, ws_id, "Design_space", "Design space")
    a.text("Load a preset or a file").click()
    a.settle()
    a.choose("Preset", "lee-brooks")
    a.button("Load preset").click()
    a.settle()
    assert "Replace the design space" in " ".join(a.alerts()) and a.has("933,120")
    _shot(a, "11_load_preset_asks")
    a.button("Cancel").click()
    a.settle()
    assert not a.has("937,500,000") and a.has("933,120")
    a.check("design space")

    # Response curves: a categorical parameter says it has markers, not a line; the heatmap at legal values
    _present(a, ws_id, "Response_curves", "Response curves")
    a.choose("Curve along", "simd")
    assert a.has("enters the model as categories")
    heat = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(g => g._fullLayout.xaxis.type)")
    assert heat[-1] == "category", heat  # the interaction heatmap: one cell per legal design
    a.check("response curves")
    _shot(a, "12_response_simd")

    # Analytical models: the work flow graph's headline numbers whole; launch overhead in µs like its chart
    _present(a, ws_id, "Analytical_models", "Analytical models")
    page.get_by_role("tab", name="Launch overhead").click()
    a.settle()
    assert any("µs" in t for t in page.locator("[data-testid=stMetricValue]").all_inner_texts())
    page.get_by_role("tab", name="Work flow graph").click()
    a.settle()
    assert page.evaluate(METRICS_CUT) == []
    a.check("analytical models")
    _shot(a, "13_work_flow_graph")
    a.close()


STALE = ("changed after", "out of date", "stale")
CHARTS = """() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')].filter(c => c.offsetParent !== null)
  .map(c => { const g = c.querySelector('.js-plotly-plot'); return g ? {traces: (g._fullData || []).length,
    points: (g._fullData || []).reduce((n, t) => n + ((t.x || t.y || t.z || t.values || []).length || 0), 0),
    w: g.clientWidth} : {traces: 0, points: 0, w: 0}; })"""
SCROLL_CHARTS = """async () => { for (const c of document.querySelectorAll('[data-testid=stPlotlyChart]')) {
  c.scrollIntoView({block: 'center'}); await new Promise(r => setTimeout(r, 400)); }
  document.querySelector('h1').scrollIntoView({block: 'start'}); }"""
STATISTIC_IN_VIEW = """() => {
  const box = [...document.querySelectorAll('.gtrace:not(.follow)')][0];
  const th = box && [...box.querySelectorAll('thead th')].find(t => t.innerText === 'statistic');
  const td = box && box.querySelector('tbody tr:nth-child(2) td.sm');
  if (!th || !td) return null;
  const b = box.getBoundingClientRect(), h = th.getBoundingClientRect(), c = td.getBoundingClientRect();
  return {right: Math.max(h.right, c.right), box: b.right, window: window.innerWidth, p: td.innerText,
          rows: box.querySelectorAll('tbody tr').length, columns: box.querySelectorAll('thead th').length};
}"""


def _no_stale_blank_or_exception(a: Tab, where: str, charts: int = 1) -> None:
    """The doc announces no banner here: nothing out of date, no empty chart, no exception."""
    stale = [t for t in a.alerts() if any(s in t for s in STALE)]
    assert not stale, (where, stale)
    for _ in range(20):  # a chart is drawn once it has been scrolled into view
        a.page.evaluate(SCROLL_CHARTS)
        drawn = a.page.evaluate(CHARTS)
        if len(drawn) >= charts and all(c["w"] for c in drawn):
            break
        a.page.wait_for_timeout(500)
    assert len(drawn) >= charts and all(c["traces"] and c["points"] and c["w"] > 100 for c in drawn), (where, drawn)
    a.check(where)


def test_the_lecture_runs_as_written(browser, server):
    """docs/lecture.md step by step at 1280×800 in presentation mode: one live fit (Stargazer as written,
    θ = 0.003, φ = 0), then the robust defaults again — the example's own settings on its own data, so
    model v1 and its validation, scan and true error are reused and Accuracy and Explore stay current; a
    "Simulate these" check on Explore leaves them current too."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    a = Tab(browser, server, "lecture_walk")
    page = a.page
    page.goto(server, wait_until="domcontentloaded")
    a.text("Where you are", timeout=180_000)
    a.settle()
    ws_id = a.ws_id
    a.key_cookie(ws_id)
    _present(a, ws_id, "", "gpudse — GPU design space exploration")  # 0–2 min
    a.text("Where you are")
    a.check("home")
    _present(a, ws_id, "Design_space", "Design space")  # 2–4 min: Stargazer Table 2
    assert a.has("933,120")
    a.check("design space")
    _present(a, ws_id, "Sampling", "Sample design points")  # 4–6 min
    a.text("Points per value")
    _no_stale_blank_or_exception(a, "sampling")
    _present(a, ws_id, "Simulations", "Simulations")  # 6–8 min
    a.check("simulations")

    # 8–14 min, step 1: Stargazer as written with Table 1's θ and φ, the one fit computed live
    _present(a, ws_id, "Stepwise_fit", "Fit a model")
    page.get_by_text("Stargazer as written").first.click()
    a.settle()
    page.get_by_role("spinbutton", name="θ (add a parameter)").fill("0.003")
    page.get_by_role("spinbutton", name="φ (add an interaction)").fill("0")
    a.button("Fit").click()
    a.text("Model version 2", timeout=120_000)
    a.settle()
    labels = page.locator(".gtrace:not(.follow) td.lb").all_inner_texts()
    assert labels[0] == "R²" and labels[1].startswith("adj. R²"), labels  # Stargazer Table 1
    _no_stale_blank_or_exception(a, "stepwise fit, Stargazer as written")
    _shot(a, "20_walk_paper_fit")
    # step 2: the replay, played for a few rows
    a.text("Replay the fit row by row").click()
    a.settle()
    page.evaluate(SCROLL_TO_REPLAY)
    a.button("Play").click()
    a.text("Row 3 of", timeout=60_000)
    a.button("Pause").click()
    a.settle()
    a.check("replay")

    # step 4: the robust defaults again — the example's settings on its data: model v1 reused, not refitted
    page.get_by_text("Robust defaults").first.click()
    a.settle()
    assert page.get_by_role("combobox", name="Criterion").first.input_value() == "ftest"
    assert not a.has("Gain measured against")
    a.button("Fit").click()
    a.alert("Same settings and data as model v1: reused", timeout=120_000)
    a.settle()
    a.text("Model version 1")
    page.locator(".gtrace:not(.follow)").first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    state = page.evaluate(STATISTIC_IN_VIEW)
    _shot(a, "21_walk_robust_reused")
    assert state is not None and state["rows"] >= 10, state
    assert state["right"] <= min(state["box"], state["window"]) + 1, state  # the p-value without scrolling
    assert state["p"].startswith("p "), state  # the F-test's p-value in the statistic column
    _no_stale_blank_or_exception(a, "stepwise fit, robust defaults")

    # 14–16 min: response curves along blk
    _present(a, ws_id, "Response_curves", "Response curves")
    a.choose("Curve along", "blk")
    _no_stale_blank_or_exception(a, "response curves")
    _shot(a, "22_walk_curves")
    # 16–19 min: Fig. 5 and the error CDF from the example's validation, current again (nothing recomputed)
    _present(a, ws_id, "Accuracy", "Accuracy")
    _no_stale_blank_or_exception(a, "accuracy", charts=2)
    _shot(a, "23_walk_accuracy")
    # 19–20 min: the best designs over the whole space
    _present(a, ws_id, "Explore", "Explore the design space")
    _no_stale_blank_or_exception(a, "explore")
    assert page.locator("[data-testid=stDataFrame]").count() >= 1  # the example's best designs, not recomputed
    _shot(a, "24_walk_explore")
    # optionally, Simulate these: a check of the first five rows confirms them and makes nothing stale
    a.button("Simulate these").click()
    a.text("5 of 5 designs simulated", timeout=120_000)
    a.settle()
    a.text("the results are unchanged")
    _no_stale_blank_or_exception(a, "explore after the check")
    _shot(a, "25_walk_explore_checked")
    _present(a, ws_id, "Accuracy", "Accuracy")  # the validation and the true error stay current
    _no_stale_blank_or_exception(a, "accuracy after the check", charts=2)
    a.close()
