"""Shared fixtures. Tests that read ../shared skip with a reason when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# the real-browser tests' session fixtures: one served dashboard and one Chromium for all of them
from browser_support import backends, browser, home, server  # noqa: F401

# No per-example deadlines: they are timing assertions, flaky on shared 2-core CI machines.
settings.register_profile("gpudse", deadline=None, print_blob=True)
settings.load_profile("gpudse")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared (papers and real data) is not present beside this checkout")
    return SHARED


def pytest_collection_modifyitems(config, items):
    """A test that drives Chromium or serves the dashboard (the ``browser`` or ``server`` fixture) is a
    ``browser`` test, and ``slow``: the fast loop (CONTRIBUTING.md) leaves both out."""
    for item in items:
        if {"browser", "server"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)
