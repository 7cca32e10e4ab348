"""Real-browser test: the dashboard served by `streamlit run app.py`, driven in headless Chromium.

Needs Debian's chromium (``/usr/bin/chromium``) and the Playwright Python package (never
``playwright install``). Skips with a reason where they are missing, except in CI (``CI=true``),
where .ci/run installs chromium and a missing browser is a failure. Screenshots are written to
``tests/artifacts/`` for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "artifacts"  # git-ignored; CI keeps them as artifacts
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _need(ok: bool, reason: str) -> None:
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must run the browser test; .ci/run installs chromium)")
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            pytest.fail("streamlit exited: " + (proc.stdout.read() if proc.stdout else ""))
    else:
        proc.kill()
        pytest.fail("streamlit did not become healthy within 90 s")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    _need(os.path.exists(CHROMIUM), f"no chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "the playwright Python package is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.mark.slow
def test_dashboard_in_a_real_browser(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    page.goto(server + "/Design_space", wait_until="domcontentloaded")  # deep links work
    page.get_by_role("heading", name="Design space").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    assert not page.get_by_text("Page not found").count()

    page.goto(server, wait_until="domcontentloaded")
    page.get_by_text("gpudse — GPU design space exploration").first.wait_for(timeout=60_000)
    page.get_by_text("stargazer: 933,120 points").first.wait_for(timeout=30_000)
    page.get_by_text("Reset to the built-in example").first.wait_for(timeout=30_000)
    page.get_by_text("terms").first.wait_for(timeout=30_000)  # the Stepwise fit stage: R² and terms
    page.screenshot(path=str(SHOTS / "home.png"), full_page=True)

    page.get_by_role("link", name="Design space").first.click()
    page.get_by_role("heading", name="Design space").first.wait_for(timeout=30_000)
    page.get_by_text("933,120").first.wait_for(timeout=30_000)
    page.locator("[data-testid='stDataFrame'], [data-testid='stDataEditor'], .stDataFrame").first.wait_for(
        timeout=30_000)
    page.screenshot(path=str(SHOTS / "design_space.png"), full_page=True)

    page.goto(server + "/Sampling", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Sample design points").first.wait_for(timeout=60_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    page.get_by_text("0.0322%").first.wait_for(timeout=30_000)  # the built-in example's 300 points
    page.get_by_role("spinbutton", name="N (points)").fill("500")
    page.get_by_role("button", name="Sample", exact=True).click()
    page.get_by_text(f"{500 / 933120:.4%}").first.wait_for(timeout=30_000)
    page.screenshot(path=str(SHOTS / "sampling.png"), full_page=True)
    assert not page.get_by_text("Traceback").count()
    assert not page.get_by_text("Page not found").count()

    page.goto(server + "/Simulations", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Simulations").first.wait_for(timeout=60_000)
    page.get_by_role("button", name="Start / resume").click()
    page.get_by_text("300/300 done").first.wait_for(timeout=120_000)
    page.get_by_text("points done in").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(SHOTS / "simulations.png"), full_page=True)

    page.goto(server + "/Stepwise_fit", wait_until="domcontentloaded")  # a fit in the browser
    page.get_by_text("The fitted equation").first.wait_for(timeout=120_000)
    page.get_by_role("button", name="Fit", exact=True).click()
    page.get_by_text("initial").first.wait_for(state="attached", timeout=60_000)  # the trace grid is a canvas
    page.wait_for_timeout(2000)
    assert page.locator("[data-testid='stException']").count() == 0

    for path, marker, shot in (("Stepwise_fit", "The fitted equation", "stepwise"),
                               ("Response_curves", "Interaction of two parameters", "response_curves"),
                               ("Accuracy", "Validation", "accuracy"), ("Explore", "One parameter at a time", "explore")):
        page.goto(f"{server}/{path}", wait_until="domcontentloaded")
        page.get_by_text(marker).first.wait_for(timeout=120_000)
        if path == "Accuracy":  # run a validation and wait for its table and charts
            page.get_by_role("button", name="Validate").click()
            page.get_by_text("Relative error (%), pooled over repeats").first.wait_for(timeout=180_000)
        page.locator(".js-plotly-plot:visible").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        assert not page.get_by_text("Traceback").count()
        assert page.locator("[data-testid='stException']").count() == 0, path
        page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)

    page.goto(server + "/Ray_tracing", wait_until="domcontentloaded")
    page.get_by_text("Self-check error").first.wait_for(timeout=120_000)
    page.get_by_text("selected pixels").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(SHOTS / "ray_tracing.png"), full_page=True)

    page.goto(server + "/Analytical_models", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Analytical models").first.wait_for(timeout=60_000)
    page.get_by_text("Optimum N_PE").first.wait_for(timeout=60_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    page.screenshot(path=str(SHOTS / "analytical_equal_area.png"), full_page=True)
    page.get_by_role("tab", name="Work flow graph").click()
    page.get_by_text("Latency_exposed").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(SHOTS / "analytical_wfg.png"), full_page=True)
    page.get_by_role("tab", name="Built-in simulator").click()
    page.get_by_text("Tail-trimmed").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(SHOTS / "analytical_simulator.png"), full_page=True)
    assert not page.get_by_text("Traceback").count()
    assert page.locator("[data-testid='stException']").count() == 0

    # save the project from the home page and load it back through the upload widget
    page.goto(server, wait_until="domcontentloaded")
    page.get_by_text("Projects and reports").first.wait_for(timeout=60_000)
    with page.expect_download() as dl:
        page.get_by_role("button", name="Save the project (zip)").click()
    saved = SHOTS / "project.zip"
    dl.value.save_as(str(saved))
    page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(saved))
    page.get_by_role("button", name="Load this project").click()
    page.get_by_text("stargazer: 933,120 points").first.wait_for(timeout=60_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert not errors, errors
    page.close()


@pytest.mark.slow
def test_two_sessions_do_not_share_state(server, browser):
    a = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    b = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    for p in (a, b):
        p.goto(server + "/Design_space", wait_until="domcontentloaded")
        p.get_by_text("933,120").first.wait_for(timeout=120_000)
    a.get_by_text("Load a preset or a file").click()
    a.get_by_role("button", name="Load preset").wait_for(timeout=30_000)
    a.locator("[data-testid='stSelectbox']").first.click()
    a.get_by_role("option", name="lee-brooks").click()
    a.get_by_role("button", name="Load preset").click()
    a.get_by_text("937,500,000").first.wait_for(timeout=60_000)
    b.reload(wait_until="domcontentloaded")
    b.get_by_text("933,120").first.wait_for(timeout=60_000)
    assert b.get_by_text("937,500,000").count() == 0  # the other person's space is not here
