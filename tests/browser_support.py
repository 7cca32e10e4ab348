"""What every real-browser test shares: one headless Chromium and one served dashboard for the whole
test session, and the tab helper that drives a page.

The dashboard is ``streamlit run app.py`` on a free port with a fresh GPUDSE_HOME, on a server that
describes two external simulators in its backends folder (GPUDSE_BACKENDS): ``fake-gpgpusim.toml``
runs tests/fake_sim.py (GPGPU-Sim-style output) and ``flaky-gpgpusim.toml`` the same program, which
crashes at 16 blocks per core — so the command backend is exercised in the browser like the built-in
one. Tests that need a server of another configuration start one with :func:`serve`.

Needs Debian's chromium (``/usr/bin/chromium``) and the Playwright Python package (never
``playwright install``). Where either is missing the browser tests skip with the reason, except in CI
(``CI=true``), where .ci/run installs chromium and a missing browser is a failure. Screenshots go to
``tests/artifacts/`` (git-ignored) for a person to look at.

The fixtures (``home``, ``server``, ``browser``, ``backends``) are session-scoped and registered in
tests/conftest.py; nothing here starts before a browser test asks for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE_SIM = ROOT / "tests" / "fake_sim.py"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "artifacts"  # git-ignored; CI keeps them as artifacts
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEW = {"width": 1280, "height": 800}
PAGES = {"Home": "", "Design space": "Design_space", "Sampling": "Sampling", "Simulations": "Simulations",
         "Stepwise fit": "Stepwise_fit", "Response curves": "Response_curves", "Accuracy": "Accuracy",
         "Explore": "Explore", "Ray tracing": "Ray_tracing", "Analytical models": "Analytical_models"}
HEADINGS = {"Home": "gpudse — GPU design space exploration", "Design space": "Design space",
            "Sampling": "Sample design points", "Simulations": "Simulations",
            "Stepwise fit": "Fit a model", "Response curves": "Response curves",
            "Accuracy": "Accuracy", "Explore": "Explore the design space",
            "Ray tracing": "Ray tracing: representative pixels (Zatel)", "Analytical models": "Analytical models"}
FAKE_BACKEND = "fake-gpgpusim.toml"
FLAKY_BACKEND = "flaky-gpgpusim.toml"  # crashes at FLAKY_BLK blocks per core
FLAKY_BLK = 16


def need(ok: bool, reason: str) -> None:
    """Skip with *reason* (fail in CI, which must run the browser tests)."""
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must run the browser test; .ci/run installs chromium)")
        pytest.skip(reason)


def need_browser() -> None:
    need(os.path.exists(CHROMIUM), f"no chromium at {CHROMIUM}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        need(False, "the playwright Python package is not installed")


def free_port(family: int = socket.AF_INET, host: str = "127.0.0.1") -> int:
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(home: Path, *, address: str = "127.0.0.1", env: dict | None = None, drop=("GPUDSE_SINGLE_USER",)):
    """``streamlit run app.py`` with GPUDSE_HOME=*home* on a free port of *address*, healthy within 90 s;
    yields the port. The browser is checked first: without one, no server is started."""
    need_browser()
    v6 = ":" in address
    port = free_port(socket.AF_INET6 if v6 else socket.AF_INET, address)
    full = {**os.environ, "GPUDSE_HOME": str(home), **(env or {})}
    for k in drop:
        full.pop(k, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address", address,
         "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    health = f"http://{'[::1]' if v6 else address}:{port}/_stcore/health"
    deadline = time.time() + 90
    try:
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(health, timeout=2).read().strip() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
            if proc.poll() is not None:
                pytest.fail("streamlit exited: " + (proc.stdout.read() if proc.stdout else ""))
        else:
            pytest.fail("streamlit did not become healthy within 90 s")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def write_backends(folder: Path) -> Path:
    """The server's external-simulator descriptions (see the module docstring), in *folder*."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "template.config").write_text("# fake GPGPU-Sim config\n-gpgpu_n_clusters 8\n"
                                            "-gpgpu_shader_cta 8 # blocks per core\n")
    for name, extra in ((FAKE_BACKEND, []), (FLAKY_BACKEND, ["--crash-cta", str(FLAKY_BLK)])):
        cmd = [sys.executable, str(FAKE_SIM), "--config", "{config}", *extra]
        (folder / name).write_text(
            f"command = {json.dumps(cmd)}\n"  # JSON strings are TOML strings
            'workdir = "runs"\ntimeout = 60\nmetrics = ["gpu_tot_sim_cycle", "gpu_tot_ipc"]\n'
            'config_template = "template.config"\n[options]\nblk = "-gpgpu_shader_cta"\n')
    return folder


# ---- the session's fixtures (registered in tests/conftest.py) --------------------------------------------
@pytest.fixture(scope="session")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("gpudse_home")


@pytest.fixture(scope="session")
def backends(tmp_path_factory):
    return write_backends(tmp_path_factory.mktemp("backends"))


@pytest.fixture(scope="session")
def server(home, backends):
    with serve(home, env={"GPUDSE_BACKENDS": str(backends)}) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def browser():
    need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


# ---- driving a page -----------------------------------------------------------------------------------------
class Tab:
    """One browser tab on the dashboard, with the checks every step makes."""

    def __init__(self, browser, server: str, name: str):
        self.server = server
        self.name = name
        self.ctx = browser.new_context(viewport=VIEW, accept_downloads=True)
        self.page = self.ctx.new_page()
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", self._request)
        self.shots = 0

    def _request(self, req) -> None:
        host = urlparse(req.url).hostname
        if req.url.startswith(("http:", "https:", "ws:", "wss:")) and host not in ("127.0.0.1", "localhost"):
            self.outside.append(req.url)

    @property
    def ws_id(self) -> str:
        return self.page.url.split("ws=")[1].split("&")[0]

    def first_visit(self) -> str:
        """Open the app without a workspace (a new copy of the example); its id, once the key is held."""
        self.page.goto(self.server, wait_until="domcontentloaded")
        self.text("Where you are", timeout=180_000)
        self.settle()
        self.key_cookie(self.ws_id)
        return self.ws_id

    def open(self, title: str, ws_id: str | None = None, timeout: float = 120_000, settle: bool = True) -> None:
        ws_id = ws_id or self.ws_id
        self.page.goto(f"{self.server}/{PAGES[title]}?ws={ws_id}", wait_until="domcontentloaded")
        self.heading(title, timeout, settle)

    def heading(self, title: str, timeout: float = 120_000, settle: bool = True) -> None:
        self.page.get_by_role("heading", name=HEADINGS[title]).first.wait_for(timeout=timeout)
        if settle:
            self.settle()

    def settle(self, timeout: float = 180_000) -> float:
        """Wait for the script run to end (Streamlit's running indicator goes away); the
        ``time.perf_counter()`` at which it was seen to have ended."""
        self.page.wait_for_timeout(300)
        end = time.monotonic() + timeout / 1000
        while time.monotonic() < end and (self.script_state() in ("initial", "running", "rerunRequested")
                                          or self.page.locator("[data-testid='stStatusWidget']").count()):
            self.page.wait_for_timeout(50)
        ended = time.perf_counter()
        self.page.wait_for_timeout(300)
        return ended

    def script_state(self) -> str | None:
        """Streamlit's own record of the script run (stApp's data-test-script-state): the running
        indicator alone appears only after a delay, so a check made before it shows would race."""
        app = self.page.locator("[data-testid='stApp']")
        return app.first.get_attribute("data-test-script-state") if app.count() else "initial"

    def text(self, text: str, timeout: float = 120_000):
        loc = self.page.get_by_text(text).first
        loc.wait_for(timeout=timeout)
        return loc

    def has(self, text: str) -> bool:
        return self.page.get_by_text(text).count() > 0

    def alerts(self) -> list[str]:
        return self.page.locator("[data-testid='stAlert']").all_inner_texts()

    def alert(self, text: str, timeout: float = 30_000) -> str:
        """Wait for a banner (an st.error/warning/info box) that says *text*; its whole text."""
        end = time.monotonic() + timeout / 1000
        while True:
            found = [t for t in self.alerts() if text in " ".join(t.split())]
            if found:
                return found[0]
            if time.monotonic() > end:
                raise AssertionError(f"no banner saying {text!r}; the page's banners: {self.alerts()}")
            self.page.wait_for_timeout(100)

    def check(self, where: str) -> None:
        assert self.page.locator("[data-testid='stException']").count() == 0, (where, self.alerts())
        assert not self.has("Traceback"), where
        assert not self.errors, (where, self.errors)

    def choose(self, label: str, value: str) -> None:
        """A selectbox (a combobox in Streamlit ≥ 1.5x): type the option and pick it from the list."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        box = self.page.get_by_role("combobox", name=label).first
        for _ in range(3):
            box.click()
            box.fill(value)
            try:
                self.page.get_by_role("option", name=value, exact=True).first.click(timeout=5_000)
                break
            except PlaywrightTimeout:  # the list opened late: close it and type again
                self.page.keyboard.press("Escape")
        self.settle()
        assert box.input_value() == value, (label, box.input_value())

    def load_preset(self, name: str, size: str) -> None:
        self.open("Design space")
        self.text("Load a preset or a file").click()
        self.settle()
        self.choose("Preset", name)
        self.button("Load preset").click()
        self.settle()
        if self.page.get_by_role("button", name="Replace", exact=True).count():  # replacing a space asks first
            self.button("Replace").click()
        self.text(size)
        self.settle()

    def add(self, label: str, value: str) -> None:
        """Add an option to a multiselect (a combobox too): type it and pick it from the list."""
        box = self.page.get_by_role("combobox", name=label).first
        box.click()
        box.fill(value)
        self.page.get_by_role("option", name=value, exact=True).first.click()
        self.page.keyboard.press("Escape")
        self.settle()

    def button(self, name: str, exact: bool = True):
        return self.page.get_by_role("button", name=name, exact=exact).first

    def shot(self, name: str) -> Path:
        """The page at 1280×800, and the whole page (the viewport stretched to the content) beside it;
        the first one's path."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.shots += 1
        path = SHOTS / f"{self.name}_{self.shots:02d}_{name}.png"
        self.page.screenshot(path=str(path))
        height = self.page.evaluate(
            "() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], section.main, "
            "[data-testid=\"stAppViewContainer\"]')].map(e => e.scrollHeight), 800)")
        self.page.set_viewport_size({"width": VIEW["width"], "height": min(int(height) + 40, 6000)})
        self.page.wait_for_timeout(700)
        self.page.screenshot(path=str(SHOTS / f"{self.name}_{self.shots:02d}_{name}_full.png"))
        self.page.set_viewport_size(VIEW)
        self.page.wait_for_timeout(300)
        return path

    def key_cookie(self, ws_id: str, timeout: float = 30.0) -> None:
        """Wait until the browser holds the edit key (set by a script after the first run)."""
        end = time.monotonic() + timeout
        while not any(c["name"] == f"gpudse_k_{ws_id}" for c in self.ctx.cookies()):
            assert time.monotonic() < end, "the edit key never reached the browser's cookies"
            self.page.wait_for_timeout(100)

    def close(self) -> None:
        self.ctx.close()


def workspace(home, ws_id):
    """A read-only handle (no key) on a workspace of the server's files."""
    from gpudse_core.workspace import open_workspace

    os.environ["GPUDSE_HOME"] = str(home)
    return open_workspace(ws_id)
