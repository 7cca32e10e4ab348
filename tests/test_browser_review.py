"""Real-browser test of a design review at 1280×800: the model's headline is an out-of-sample error, two
fits compared side by side on the Accuracy page, an input changed mid-session, and a reload that keeps
the comparison. Served by `streamlit run app.py`, driven in headless Chromium through Playwright
(Debian's /usr/bin/chromium; never `playwright install`); screenshots go to tests/artifacts/ (review_*)
for a person to look at. The server, browser and tab helpers are the session's (tests/browser_support.py).
"""

from __future__ import annotations

import pytest
from browser_support import SHOTS, Tab, workspace


def plot_titles(tab: Tab) -> str:
    """The titles of the Plotly charts on the page, as drawn (SVG text), without spaces (a wrapped title's
    lines are drawn without the space between them)."""
    texts = tab.page.locator(".js-plotly-plot .gtitle").evaluate_all("els => els.map(e => e.textContent)")
    return "|".join("".join(t.split()) for t in texts)


def titled(titles: str, text: str) -> bool:
    return "".join(text.split()) in titles


def wait_titled(tab: Tab, text: str, timeout_s: float = 60) -> None:
    """Wait until a chart titled *text* is drawn: the page's rerun after a press can outlast the settle
    (it did once under a loaded CI-sized machine, the old chart still drawn); fails with what is drawn."""
    for _ in range(int(timeout_s * 4)):
        titles = plot_titles(tab)
        if titled(titles, text):
            return
        tab.page.wait_for_timeout(250)
    assert titled(titles, text), (text, titles)


def open_compare_tab(a: Tab) -> None:
    a.open("Accuracy")
    a.page.get_by_role("tab", name="Runs side by side").click()
    a.settle()


@pytest.mark.slow
def test_two_fits_side_by_side_change_mid_session_and_reload(server, browser, home):
    SHOTS.mkdir(parents=True, exist_ok=True)
    a = Tab(browser, server, "review")
    a.page.goto(server, wait_until="domcontentloaded")
    a.heading("Home")
    a.key_cookie(a.ws_id)
    a.text("accuracy out of sample:")
    assert a.has("leave-one-out error"), "Home leads with the out-of-sample error"
    side = a.page.locator("[data-testid='stSidebar']").inner_text()
    assert "leave-one-out error" in side and "R²" not in side
    a.shot("home")

    # a second fit: the same results on the square-root scale (an input changed mid-session)
    a.open("Stepwise fit")
    assert a.page.locator("[data-testid='stMetricLabel']").first.inner_text().startswith("Leave-one-out error")
    a.choose("Transform", "sqrt")
    a.button("Fit").click()
    a.settle()
    a.text("Model version 2")
    a.check("the second fit")

    open_compare_tab(a)
    a.check("the comparison tab")
    a.shot("compare_picker")
    a.button("Compare").click()
    a.settle()
    a.text("2 runs side by side")
    a.check("after Compare")
    titles = plot_titles(a)
    for t in ("Error CDFs", "contribution to R²", "Response along blk"):
        assert titled(titles, t), (t, titles)
    w = workspace(home, a.ws_id)
    runs = w.get("comparison").value.runs
    assert sorted(r.version for r in runs) == [1, 2] and w.get("comparison").value.param == "blk"
    table = a.page.locator("[data-testid='stDataFrame']").last
    table.scroll_into_view_if_needed()
    a.shot("compared")

    # change the response curves' parameter mid-session and compare again
    a.choose("Response curves along", "simd")
    a.button("Compare").click()
    a.settle()
    wait_titled(a, "Response along simd")
    assert w.get("comparison").value.param == "simd" and w.get("comparison").version == 2

    # a reload keeps the comparison (it is in the workspace) and the picker's choice
    a.page.reload(wait_until="domcontentloaded")
    a.heading("Accuracy")
    a.page.get_by_role("tab", name="Runs side by side").click()
    a.settle()
    a.text("2 runs side by side")
    wait_titled(a, "Response along simd")
    a.check("after the reload")
    a.text("2 runs side by side").scroll_into_view_if_needed()
    a.page.wait_for_timeout(500)
    a.shot("after_reload")
    a.close()
