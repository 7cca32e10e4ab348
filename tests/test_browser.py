"""Real-browser test: the dashboard served by `streamlit run app.py`, driven in headless Chromium.

Walks a user's path: the example → lee-brooks → every page (no exception box; banners where inputs
are missing) → back to stargazer → sample 200 → simulate BFS → fit → every page shows only current
results → F5 → the same state → a second browser with the link sees it read-only → Stop a long
validation. Also: the HTML report, bad uploads while a second browser keeps loading pages, and no
request leaves the machine. Screenshots of every page at 1280×800 go to ``tests/artifacts/`` (with a
``_full`` twin showing the whole page) for a person to look at; timings (first paint, Stop, pages
during a bad upload) go to ``tests/artifacts/timings.json`` and are printed, never asserted.

The served dashboard and the browser are the session's (tests/browser_support.py: one server and one
Chromium for every browser test; skips with a reason where chromium or Playwright is missing, fails in
CI). GPUDSE_HOME is a temporary folder.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from browser_support import HEADINGS, PAGES, SHOTS, Tab, workspace

MODEL_PAGES = ("Stepwise fit", "Response curves", "Accuracy", "Explore")
TIMINGS: dict[str, object] = {}


@pytest.mark.slow
def test_a_walk_through_every_page_in_a_real_browser(server, browser, home):
    SHOTS.mkdir(parents=True, exist_ok=True)
    a = Tab(browser, server, "a")
    page = a.page

    # first visit: the home page paints, then the example is ready (built once per server)
    t0 = time.perf_counter()
    page.goto(server, wait_until="domcontentloaded")
    a.text(HEADINGS["Home"], timeout=180_000)
    TIMINGS["home_first_paint_s"] = round(time.perf_counter() - t0, 2)
    a.text("Where you are", timeout=180_000)
    TIMINGS["home_example_ready_s"] = round(time.perf_counter() - t0, 2)
    a.settle()
    ws_id = a.ws_id
    a.key_cookie(ws_id)
    a.check("home")
    a.text("stargazer · 933,120 points")
    a.shot("home")
    for title, path in PAGES.items():  # every page of the example: filled, nothing stale
        a.open(title)
        if title == "Ray tracing":
            a.text("selected pixels", timeout=180_000)
        if title == "Accuracy":
            a.text("Relative error (%), pooled over 3 repeats")
        if title == "Explore":
            a.text("The 20 lowest predicted cycles of 933,120 designs")
        if title == "Stepwise fit":  # the replay, as in a lecture: Play and watch the rows come
            a.text("Replay the fit row by row").click()
            a.button("Play").click()
            a.text("Row 3 of", timeout=30_000)
            a.shot("replay_playing")
            a.button("Pause").click()
        a.settle()
        a.check(title)
        assert not any("changed" in t for t in a.alerts()), (title, a.alerts())
        a.shot(f"example_{path or 'home'}")

    # another design space: every page usable, banners where inputs are out of date
    a.load_preset("lee-brooks", "937,500,000")
    for title, path in PAGES.items():
        a.open(title)
        a.check(f"lee-brooks {title}")
        if title in ("Sampling", "Simulations", *MODEL_PAGES):
            a.alert("design space changed")
        a.shot(f"lee_brooks_{path or 'home'}")

    # back to stargazer, sample 200, simulate BFS, fit
    a.load_preset("stargazer", "933,120")
    a.open("Sampling")
    page.get_by_role("spinbutton", name="N (points)").fill("200")
    a.button("Sample").click()
    a.text("200 points, uniform", timeout=60_000)  # the sidebar counts the new samples
    a.open("Simulations")
    a.choose("Application (Stargazer Table 4)", "BFS")
    a.button("Start").click()
    a.text("results in use", timeout=300_000)
    a.settle()
    a.check("simulations")
    a.shot("simulations_bfs")
    a.open("Stepwise fit")
    a.alert("results changed after this model was fitted")
    a.button("Fit").click()
    a.text("The fitted equation", timeout=120_000)
    a.settle()
    a.check("fit")
    a.shot("stepwise_fit_bfs")

    # every page shows only current results
    w = workspace(home, ws_id)
    model = w.get("model")
    assert model.ok and "BFS" in w.input_of(model, "results").origin
    for title, path in PAGES.items():
        a.open(title)
        a.check(f"after the fit: {title}")
        if title == "Accuracy":
            a.alert("model changed")
            assert not a.has("Relative error (%), pooled")  # the example's validation is not shown
            page.get_by_role("tab", name="True error over the space").click()
            a.text("points (BFS)")  # the application the results came from
        if title == "Explore":
            a.alert("model changed")
            assert not a.has("The 20 lowest predicted")
            a.button("Recompute with the new model").click()
            a.text("The 20 lowest predicted cycles of 933,120 designs", timeout=180_000)
            a.settle()
        a.shot(f"bfs_{path or 'home'}")
    scan = w.get("scan")
    assert scan.ok and scan.inputs["model"].version == model.version

    # F5: the same workspace, still writable, the same best designs
    a.open("Explore")
    page.reload(wait_until="domcontentloaded")
    a.heading("Explore")
    a.text("The 20 lowest predicted cycles of 933,120 designs")
    assert a.ws_id == ws_id and not a.has("Shared with you read-only")
    a.check("F5")

    # a second browser with the link: the same workspace, read-only
    b = Tab(browser, server, "b")
    b.open("Explore", ws_id)
    b.text("Shared with you read-only")
    b.text("The 20 lowest predicted cycles of 933,120 designs")
    assert b.ws_id == ws_id
    b.check("read-only")
    b.shot("read_only_explore")
    b.open("Design space", ws_id)
    assert b.button("Apply changes").is_disabled()

    _stop_a_long_validation(a, w)
    _download_the_report(a)

    assert not a.outside and not b.outside, (a.outside, b.outside)  # nothing fetched from the network
    a.check("end")
    b.close()
    a.close()
    w.close()
    _save_timings()


def _stop_a_long_validation(a, w) -> None:
    """Stop a long validation: the time from the click until the job has ended (TIMINGS)."""
    page = a.page
    a.open("Accuracy")
    page.get_by_role("slider", name="Repeats").first.focus()
    for _ in range(7):
        page.keyboard.press("ArrowRight")
    for model_name in ("forest", "boosting", "hybrid"):  # about a second per draw each: a long run
        a.add("Models", model_name)
    a.settle()
    a.button("Validate").click()
    a.text("is running", timeout=60_000)
    t_run = time.perf_counter()  # the page's progress bar moves: the first count above 0 it shows
    page.get_by_text(re.compile(r"^[1-9][0-9]* of 150 ")).first.wait_for(timeout=60_000)
    TIMINGS["validation_first_count_shown_s"] = round(time.perf_counter() - t_run, 2)
    page.wait_for_timeout(max(0.0, 2000 - 1000 * (time.perf_counter() - t_run)))
    job = next(j for j in w.jobs(active=True) if j.kind == "validation")
    TIMINGS["validation_progress_at_2s"] = f"{job.done:.0f} of {job.total:.0f}"
    a.shot("validation_running")
    # the time of the click as the page saw it (Playwright may wait for the button before clicking)
    page.evaluate("() => document.addEventListener('pointerdown', () => { window.__clicked = Date.now() / 1000 },"
                  " {capture: true, once: true})")
    a.button("Stop").click()
    t_click = page.evaluate("() => window.__clicked")
    end = time.monotonic() + 60
    while w.job(job.id).active:
        assert time.monotonic() < end, "the validation did not stop"
        time.sleep(0.05)
    TIMINGS["validation_stop_s"] = round(w.job(job.id).finished - t_click, 2)
    a.text("Partial result (stopped)", timeout=30_000)
    a.settle()
    assert w.job(job.id).state == "stopped" and w.get("validation").partial
    a.check("stopped")
    a.shot("validation_stopped")



def _download_the_report(a) -> None:
    """The HTML report: downloaded, opened offline, looked at."""
    page = a.page
    a.open("Home")
    with page.expect_download() as dl:
        a.button("Download an HTML report").click()
    report = SHOTS / "report.html"
    dl.value.save_as(str(report))
    html = report.read_text()
    assert "Plotly.newPlot" in html and "Best designs" in html
    viewer = a.ctx.new_page()
    viewer.goto(report.as_uri())
    viewer.wait_for_timeout(2000)
    viewer.screenshot(path=str(SHOTS / "report.png"), full_page=True)
    viewer.close()


@pytest.mark.slow
def test_bad_uploads_while_a_second_browser_keeps_loading_pages(server, browser, home):
    """A bad upload is refused with our error, changes nothing, and does not stall other sessions."""
    from dashboard_uploads import zip_bomb

    a = Tab(browser, server, "upload")
    a.page.goto(server, wait_until="domcontentloaded")
    a.text("Where you are", timeout=180_000)
    a.settle()
    ws_id = a.ws_id
    a.key_cookie(ws_id)
    w = workspace(home, ws_id)
    before = w.revision
    b = Tab(browser, server, "other")  # another person: their own workspace
    b.page.goto(server, wait_until="domcontentloaded")
    b.text("Where you are", timeout=180_000)
    b.settle()
    other = b.ws_id
    loads: list[float] = []
    bomb = SHOTS / "bomb.zip"
    bomb.write_bytes(zip_bomb())

    a.page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(bomb))
    a.button("Load this project").wait_for(timeout=60_000)

    a.button("Load this project").click()  # returns at once: the server works on the file meanwhile
    t_end = time.monotonic() + 30
    while time.monotonic() < t_end and not a.has("Your workspace is unchanged"):
        t = time.perf_counter()  # the page shown (its heading) and complete (its script run ended)
        b.open("Design space" if len(loads) % 2 else "Sampling", other, settle=False)
        shown = time.perf_counter() - t
        loads.append([round(shown, 2), round(b.settle() - t, 2)])
    a.text("Your workspace is unchanged", timeout=120_000)
    a.check("bad upload")
    a.shot("bad_upload")
    assert w.revision == before
    TIMINGS["page_loads_during_bad_upload_s (shown, complete)"] = loads
    b.check("other session")
    b.close()
    a.close()
    w.close()
    _save_timings()


def _save_timings() -> None:
    path = SHOTS / "timings.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**old, **TIMINGS}, indent=1))
    print("timings (measured on a shared machine):", json.dumps(TIMINGS))


def test_simulate_these_checks_the_best_designs_with_the_builtin_simulator(server, browser, home):
    """Explore's grouped best designs → "Simulate these" → the built-in simulator runs one design per
    chosen row as a campaign → predicted beside simulated as a check that leaves the model and the best
    designs current → "Add these to the results and refit": the results gain the designs, refitted."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    a = Tab(browser, server, "simulate")
    a.page.goto(server, wait_until="domcontentloaded")
    a.text("Where you are", timeout=180_000)
    a.settle()
    ws_id = a.ws_id
    a.key_cookie(ws_id)
    w = workspace(home, ws_id)
    n_results = len(w.get("results").value.table)
    a.open("Explore")
    a.text("each row stands for every design with its prediction", timeout=60_000)
    end = time.monotonic() + 30
    while not a.has("95 % interval (cycles)") and time.monotonic() < end:  # the grid's headers (a canvas)
        a.page.wait_for_timeout(200)
    assert a.has("95 % interval (cycles)") and a.has("designs")
    a.check("explore")
    a.settle()  # the settings above the table drawn, not their placeholders
    a.shot("explore_grouped")
    a.button("Simulate these").click()
    a.text("Predicted vs simulated", timeout=120_000)
    end = time.monotonic() + 120
    while not a.has("5 of 5 designs simulated") and time.monotonic() < end:
        a.page.wait_for_timeout(500)
        if not a.has("5 of 5 designs simulated"):
            a.page.reload(wait_until="domcontentloaded")
            a.heading("Explore")
    assert a.has("5 of 5 designs simulated"), a.alerts()
    end = time.monotonic() + 60
    while a.has("Simulating the chosen designs") and time.monotonic() < end:  # the job's panel goes once it ended
        a.page.wait_for_timeout(500)
    a.settle()
    a.shot("explore_predicted_vs_simulated")
    a.check("simulated")
    a.text("the results are unchanged")  # a check confirms: no "Refit on the new results"
    assert not a.has("Refit on the new results"), a.alerts()
    w = workspace(home, ws_id)
    assert len(w.get("results").value.table) == n_results
    assert w.get("model").ok and w.get("scan").ok and w.get("check").ok
    a.button("Add these to the results and refit").click()  # its own step: append, refit, rescan
    a.text("The checked designs were added to the results", timeout=300_000)
    a.settle()
    a.shot("explore_check_added")
    a.check("added")
    w = workspace(home, ws_id)
    results = w.get("results")
    assert len(results.value.table) == n_results + 5 and "simulated designs added" in results.note
    assert w.get("model").ok and w.get("scan").ok and not w.get("check").ok  # refitted, rescanned
    a.close()
