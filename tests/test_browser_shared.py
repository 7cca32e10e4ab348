"""A dashboard on a shared server, in a real browser (headless Debian chromium through Playwright,
never ``playwright install``): 50 cookie-less visits from one client do not stop a second client
from opening the app, and a read-only workspace with image Markdown and link tags in every text
field makes the visitor's browser fetch nothing from the "attacker" (a local HTTP server).

The server listens on ``::`` so that two clients have different addresses without trusting any
header: one comes over this machine's ULA address (``fd00::…``, a /64 of its own), the other over
``::1`` (``loopback``). This module's server is its own (its configuration and files differ); the
browser is the session's (tests/browser_support.py). Screenshots go to tests/artifacts/ (``shared_*``)."""

from __future__ import annotations

import http.server
import os
import threading
import time

import pytest
from browser_support import SHOTS, VIEW, need, serve

VISITS = 50
BUDGET = 3


def _global_ipv6() -> str | None:
    try:
        with open("/proc/net/if_inet6") as fh:
            for line in fh:
                hexaddr, _, _, scope, _, dev = line.split()
                if scope == "00" and dev != "lo":  # global scope, not loopback
                    return ":".join(hexaddr[i:i + 4] for i in range(0, 32, 4))
    except OSError:
        pass
    return None


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """This server's own files: the test counts the workspaces a visitor's visits made."""
    return tmp_path_factory.mktemp("gpudse_shared_home")


@pytest.fixture(scope="module")
def server(home, tmp_path_factory):
    """A server of its own (a visitor budget in its config, listening on ``::``); the browser is the session's."""
    v6 = _global_ipv6()
    need(v6 is not None, "no global IPv6 address: two clients with different addresses need one")
    cfg = tmp_path_factory.mktemp("cfg") / "gpudse.toml"
    cfg.write_text(f"[limits]\nvisitor_workspaces_per_hour = {BUDGET}\n")
    with serve(home, address="::", env={"GPUDSE_CONFIG": str(cfg)},
               drop=("GPUDSE_SINGLE_USER", "GPUDSE_CLIENT_HEADER")) as port:
        yield {"remote": f"http://[{v6}]:{port}", "local": f"http://[::1]:{port}"}


def _visit(browser, url: str, want: str, shot: str | None = None, timeout: float = 240_000) -> list[str]:
    """A cookie-less first visit (a fresh browser context); returns the page's exception texts."""
    ctx = browser.new_context(viewport=VIEW)
    try:
        page = ctx.new_page()
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_text(want).first.wait_for(timeout=timeout)
        if shot:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"{shot}.png"))
        return page.locator('[data-testid="stException"]').all_inner_texts()
    finally:
        ctx.close()


@pytest.mark.slow
def test_fifty_cookieless_visits_do_not_lock_out_a_second_client(server, browser, home):
    refused = "cannot make a new workspace for you"
    t0 = time.perf_counter()
    outcomes = []
    for i in range(VISITS):
        want = "Where you are" if i < BUDGET else refused
        assert _visit(browser, server["remote"], want, shot="shared_refused" if i == BUDGET else None) == [], i
        outcomes.append(want)
    spent = time.perf_counter() - t0
    files = list((home / "workspaces").glob("*.db"))
    assert len(files) == BUDGET + 1, [f.name for f in files]  # the three copies and the template
    # the second client opens the app and gets its own copy of the example
    assert _visit(browser, server["local"], "Where you are", shot="shared_second_client") == []
    assert len(list((home / "workspaces").glob("*.db"))) == BUDGET + 2
    print(f"{VISITS} visits from one client: {spent:.1f} s, load {os.getloadavg()[0]:.1f}")


class _Attacker(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server API
        _Attacker.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def attacker():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    _Attacker.hits = []
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def _poisoned_workspace(home, bait: str):
    """A workspace whose name, space name and description, parameter labels and units, response
    column and model all carry *bait* (image Markdown, a link tag, an autolink)."""
    import numpy as np
    import pandas as pd

    from gpudse_core.model.stepwise import StepwiseRegression
    from gpudse_core.space.presets import load_space_bytes
    from gpudse_core.space.sampling import sample
    from gpudse_core.workspace import create_workspace

    os.environ["GPUDSE_HOME"] = str(home)
    q = bait.replace("'", "''")
    space = load_space_bytes((
        f"name: '{q}/space'\ndescription: '{q}/description'\nparameters:\n"
        f"  - {{name: simd, label: '{q}/label-simd', unit: '{q}/unit', values: [8, 16, 32, 64]}}\n"
        f"  - {{name: blk, label: '{q}/label-blk', values: [1, 2, 4, 8]}}\n").encode(), "poisoned.yaml")
    ws, key = create_workspace(f"{bait}/workspace")
    ws.set_space(space, f"uploaded {bait}/origin.yaml")
    samples = sample(space, n=16, seed=1)
    ws.set_samples(samples, "all points")
    response = f"{bait}/response"
    table = samples.table()[["simd", "blk"]].copy()
    table[response] = 1000.0 / table.simd + 40.0 * np.log2(table.blk) + np.arange(len(table)) % 3
    ws.set_results(table, response, f"uploaded {bait}/results.csv", app_column=None)
    est = StepwiseRegression(response=response, params=["simd", "blk"])
    est.fit(pd.DataFrame(table))
    ws.set_model(est.model_, "stepwise")
    ws.close()
    return ws.id


@pytest.mark.slow
def test_a_shared_workspace_with_image_markdown_everywhere_makes_no_request(server, browser, home, attacker):
    bait = f"![x]({attacker}/img.png) <a href='{attacker}/a'>link</a> <img src='{attacker}/tag.png'> {attacker}/auto"
    ws_id = _poisoned_workspace(home, bait)
    ctx = browser.new_context(viewport=VIEW)  # no key: the read-only view a link gives
    pages = ["", "Design_space", "Sampling", "Simulations", "Stepwise_fit", "Response_curves"]
    try:
        page = ctx.new_page()
        for i, path in enumerate(pages):
            page.goto(f"{server['local']}/{path}?ws={ws_id}", wait_until="domcontentloaded")
            page.get_by_text("read-only").first.wait_for(timeout=180_000)
            page.wait_for_timeout(2500)  # charts and images load
            assert page.locator('[data-testid="stException"]').count() == 0, path
            html = page.content()
            for attr in ("src", "href"):
                at = html.find(f'{attr}="{attacker}')
                assert at < 0, (path, html[max(0, at - 3000):at + 100])
            page.screenshot(path=str(SHOTS / f"shared_poisoned_{path or 'home'}.png"), full_page=True)
            if i == 0:
                assert page.get_by_text("/workspace").count() > 0  # the name is shown, as typed
    finally:
        ctx.close()
    assert _Attacker.hits == [], f"the visitor's browser fetched {_Attacker.hits}"
