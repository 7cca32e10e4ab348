"""Real-browser test of "Simulate these" on an external command simulator, at 1280×800.

The server describes two command backends (tests/browser_support.py): tests/fake_sim.py, which prints
GPGPU-Sim-style statistics (``gpu_tot_sim_cycle`` = 100000 // (8 · blk) + 17), and the same program
crashing at 16 blocks per core. The walk: sample 40 points → simulate them with the fake GPGPU-Sim
from the Simulations page → fit → Explore's best designs → pick rows → "Simulate these" on the command
backend → predicted beside simulated as a check (the model and best designs stay current) → "Add these
to the results and refit" (a results version, a refit and a new scan) and another selection
mid-session → reload: the same state → "Simulate these" on the crashing simulator → a clear message,
the failure recorded, and the next scan (which the page offers) never recommends its row again.

Screenshots go to ``tests/artifacts/command_*.png`` (with a ``_full`` twin) for a person to look at.
"""

from __future__ import annotations

import re
import time

import pytest
from browser_support import FAKE_BACKEND, FLAKY_BACKEND, FLAKY_BLK, Tab, workspace

RESPONSE = "gpu_tot_sim_cycle"  # the first metric of the description


def fake_cycles(blk) -> int:
    """What tests/fake_sim.py prints for a design (8 clusters in its config template)."""
    return 100000 // (8 * int(blk)) + 17


def wait_for(tab: Tab, text: str, timeout: float = 180.0) -> None:
    """Wait until the page says *text*, reloading now and then (a job's panel refreshes itself, but a
    finished campaign's appended results reach the page on its next run)."""
    end = time.monotonic() + timeout
    while not tab.has(text):
        assert time.monotonic() < end, (text, tab.alerts())
        tab.page.wait_for_timeout(1000)
        if not tab.has(text):
            tab.page.reload(wait_until="domcontentloaded")
            tab.heading("Explore")


def grid_headers(tab: Tab, want: str, timeout: float = 30.0) -> None:
    """The data grid draws on a canvas; its column headers are also in the accessible DOM."""
    end = time.monotonic() + timeout
    while not tab.has(want):
        assert time.monotonic() < end, want
        tab.page.wait_for_timeout(200)


def fit(tab: Tab, version: int) -> None:
    tab.open("Stepwise fit")
    tab.button("Fit").click()
    tab.text(f"Model version {version}", timeout=120_000)
    tab.settle()
    tab.check(f"fit {version}")


def rescan(tab: Tab) -> None:
    """Explore after a new model: Recompute the best designs (the old ones are never shown as current)."""
    tab.open("Explore")
    tab.alert("model changed")
    tab.button("Recompute with the new model").click()
    tab.text(f"predicted {RESPONSE} of 933,120 designs", timeout=180_000)
    tab.settle()


def choose_simulator(tab: Tab, name: str) -> None:
    tab.page.get_by_role("radiogroup", name="Simulator").get_by_text(f"external: {name}").click()
    tab.settle()


@pytest.mark.slow
def test_simulate_these_on_a_command_simulator_with_a_refit_a_reload_and_a_failure(server, browser, home):
    a = Tab(browser, server, "command")
    try:
        walk(a, home)
    except BaseException:
        a.shot("at_failure")  # what the page showed when a step failed
        raise
    finally:
        a.close()


def walk(a: Tab, home) -> None:
    page = a.page
    ws_id = a.first_visit()

    # 40 samples simulated by the external (command) simulator from the Simulations page
    a.open("Sampling")
    page.get_by_role("spinbutton", name="N (points)").fill("40")
    a.button("Sample").click()
    a.text("40 points, uniform", timeout=60_000)
    a.open("Simulations")
    page.get_by_text("External simulator (configured on the server)").click()
    a.settle()
    assert page.get_by_role("combobox", name="Simulator description").first.input_value() == FAKE_BACKEND
    a.button("Start").click()
    a.text(f"40 rows of {RESPONSE}", timeout=300_000)  # the sidebar: the campaign's results are in use
    a.settle()
    a.check("simulations")
    a.shot("simulations")
    w = workspace(home, ws_id)
    results = w.get("results")
    assert results.value.response == RESPONSE and len(results.value.table) == 40
    first_results = results.version

    # fit, then Explore's best designs from the new model
    fit(a, 2)
    rescan(a)
    # the fake simulator is a noise-free function of blk: the fit reproduces its rows, so no interval
    # of zero width is shown, and the page says why
    wait_for(a, "no prediction interval: the fit reproduces its rows")
    a.check("explore")
    scan = w.get("scan").value
    best = scan.best
    assert "blk" in scan.used and len(best) >= 4
    a.shot("explore_best")

    # pick rows: the first four (the default five less the last), on the command simulator
    choose_simulator(a, FAKE_BACKEND)
    rows = page.get_by_role("combobox", name="Rows").first
    rows.click()
    page.keyboard.press("Backspace")  # drops the last chosen row
    page.keyboard.press("Escape")
    a.settle()
    a.button("Simulate these").click()
    a.text("Predicted vs simulated", timeout=120_000)
    wait_for(a, "4 of 4 designs simulated")
    a.check("simulated")
    grid_headers(a, "simulated (cycles)")
    a.text("the results are unchanged")  # a check confirms the model and best designs: nothing to refit
    assert not a.has("Refit on the new results"), a.alerts()
    a.shot("predicted_vs_simulated")
    check = _latest(w)
    shown = check.table
    assert "command" in (check.backend or "") and len(shown) == 4
    assert (shown.simulated == [fake_cycles(b) for b in shown.blk]).all()  # the command's own output, per design
    assert shown["predicted"].tolist() == pytest.approx(best.predicted.iloc[:4].tolist())  # beside the prediction
    assert w.get("results").version == first_results and w.get("model").ok and w.get("scan").ok

    # mid-session: add the checked designs (the 44 results refitted and rescanned), choose other rows; reload
    a.button("Add these to the results and refit").click()
    wait_for(a, "The checked designs were added to the results")
    results = w.get("results")
    assert results.version == first_results + 1 and len(results.value.table) == 44
    assert "4 simulated designs added" in results.note
    assert w.get("model").version == 3 and w.get("model").ok and w.get("scan").ok
    a.text(f"predicted {RESPONSE} of 933,120 designs")
    wait_for(a, "4 of 4 designs simulated")  # the check stays on the page after the refit
    tags = re.compile(r"^\d+: [\d,]+ cycles$")  # the chosen rows' tags
    chosen = page.locator("[data-testid='stMultiSelect']").first.get_by_text(tags)
    assert chosen.count() == 5  # the default: five distinct rows
    rows = page.get_by_role("combobox", name="Rows").first
    rows.click()
    for left in (4, 3):  # each Backspace drops the last chosen row; wait for the page to show it
        page.keyboard.press("Backspace")
        end = time.monotonic() + 30
        while chosen.count() != left and time.monotonic() < end:
            page.wait_for_timeout(200)
    page.keyboard.press("Escape")
    a.settle()
    assert chosen.count() == 3, chosen.count()
    page.reload(wait_until="domcontentloaded")
    a.heading("Explore")
    a.text(f"predicted {RESPONSE} of 933,120 designs")
    a.text("4 of 4 designs simulated")
    a.text("model version 3")
    assert a.ws_id == ws_id and not a.has("Shared with you read-only")
    assert w.get("scan").ok and w.get("model").version == 3
    a.check("reload")
    a.shot("after_reload")

    # the crashing simulator on the first row alone (16 blocks per core): the failure is named and recorded
    choose_simulator(a, FLAKY_BACKEND)
    rows = page.get_by_role("combobox", name="Rows").first
    rows.click()
    for _ in range(4):  # the default five rows less four: the first
        page.keyboard.press("Backspace")
    page.keyboard.press("Escape")
    a.settle()
    assert page.locator("[data-testid='stMultiSelect']").first.get_by_text(tags).count() == 1
    before = w.get("results").version
    a.button("Simulate these").click()
    wait_for(a, "failed to simulate")
    a.check("failure")
    message = a.alert("failed to simulate")
    assert "1 of 1 design failed" in message and f"blk = {FLAKY_BLK} blocks/core" in message, message
    assert "exited with status 1" in message and "not be recommended again" in message, message
    a.shot("a_design_failed")
    shown = _latest(w).table
    assert shown["in interval"].tolist() == ["failed"] and shown.blk.tolist() == [FLAKY_BLK]
    assert w.get("results").version == before  # nothing simulated, nothing added

    # the scan made before the failure still shows that row: the page offers the next scan, which leaves it out
    scan = w.get("scan")
    assert scan.ok and FLAKY_BLK in set(scan.value.best.blk)
    a.button("Recompute the best designs without them").click()
    end = time.monotonic() + 180
    while w.get("scan").version == scan.version or not w.get("scan").ok:
        assert time.monotonic() < end, "the scan after the failure did not finish"
        page.wait_for_timeout(500)
    after = w.get("scan").value
    assert FLAKY_BLK not in set(after.best.blk) and after.left_out == 1, after.best
    wait_for(a, "left out: a design of theirs failed to simulate")
    a.settle()  # the run that shows the new scan has ended (the last run's button is gone)
    assert not a.has("Recompute the best designs without them")
    a.check("after the failure")
    a.shot("failure_left_out")
    assert not a.outside, a.outside
    w.close()


def _latest(w):
    from dashboard import work as ui_work

    latest = ui_work.latest_simulated_best(w)
    assert latest is not None
    return latest

