"""Per-client budgets of a shared dashboard (gpudse_core.workspace.visitors): one client's first
visits cannot use up the server's workspaces, idle untouched copies are expired, and a budget
reached is a page with a message, never an exception (the browser test drives 50 real visits)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from gpudse_core import limits
from gpudse_core.limits import LimitError
from gpudse_core.workspace import create_workspace, open_workspace, visitors

A, B = "ip:203.0.113.7", "ip:198.51.100.2"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    monkeypatch.delenv(visitors.CLIENT_HEADER_ENV, raising=False)
    return tmp_path


def test_a_client_gets_its_hours_budget_and_no_more_others_are_unaffected(home):
    with limits.override(visitor_workspaces_per_hour=3):
        for i in range(3):
            visitors.admit(A, now=1000.0 + i)
            visitors.record(A, f"ws{i}", 0, now=1000.0 + i)
        with pytest.raises(LimitError, match=r"visitor_workspaces_per_hour.*GPUDSE_CONFIG"):
            visitors.admit(A, now=1010.0)
        visitors.admit(B, now=1010.0)  # another client
        visitors.admit(A, now=1000.0 + 3601)  # the first one left the sliding hour
        visitors.admit(None, now=1010.0)  # no request behind it (a test harness): not counted


def test_clients_are_addresses_ipv6_networks_or_an_authenticating_proxys_user(monkeypatch):
    monkeypatch.delenv(visitors.CLIENT_HEADER_ENV, raising=False)
    assert visitors.client_key("203.0.113.7") == "ip:203.0.113.7"
    assert visitors.client_key("::ffff:203.0.113.7") == "ip:203.0.113.7"
    # one host owns a /64: rotating the low bits does not buy a new budget
    assert visitors.client_key("2001:db8:1:2::1") == visitors.client_key("2001:db8:1:2:ffff::9") != \
        visitors.client_key("2001:db8:1:3::1")
    assert visitors.client_key(None) is None  # no request: a test harness
    assert visitors.client_key(None, {"Host": "x"}) == "ip:loopback"  # Streamlit hides loopback addresses
    hdr = {"X-Forwarded-User": "alice"}
    assert visitors.client_key("10.0.0.1", hdr) == "ip:10.0.0.1"  # a header is trusted only when configured
    monkeypatch.setenv(visitors.CLIENT_HEADER_ENV, "x-forwarded-user")
    assert visitors.client_key("10.0.0.1", hdr) == "user:alice"
    assert visitors.client_key("10.0.0.1", {}) == "ip:10.0.0.1"
    monkeypatch.setenv(visitors.CLIENT_HEADER_ENV, "X-Forwarded-For")
    assert visitors.client_key(None, {"x-forwarded-for": "1.2.3.4, 2001:db8::7"}) == "ip:2001:db8::/64"


def test_idle_untouched_first_visit_copies_expire_changed_ones_stay(home):
    untouched, _ = create_workspace("first visit, never changed")
    changed, _ = create_workspace("first visit, then renamed")
    forked, _ = create_workspace("a copy the visitor asked for")
    seen_lately, _ = create_workspace("opened yesterday")
    for w in (untouched, changed, seen_lately):
        visitors.record(A, w.id, w.info().updated, now=0.0)
    visitors.record(A, forked.id, forked.info().updated, now=0.0, expires=False)
    changed.rename("mine now")
    for w in (untouched, changed, forked, seen_lately):
        w.close()
    idle = limits.current().visitor_idle_hours * 3600
    visitors.seen(seen_lately.id, now=idle)
    assert visitors.expire(now=idle - 1) == []  # not idle long enough
    assert visitors.expire(now=idle + 10) == [untouched.id]
    with pytest.raises(Exception, match="no workspace"):
        open_workspace(untouched.id)
    for w in (changed, forked, seen_lately):
        open_workspace(w.id).close()
    assert visitors.expire(now=idle + 10) == []  # dealt with: never looked at again
    assert visitors.expire(now=2 * idle + 10) == [seen_lately.id]


def _page(monkeypatch, client: str | None) -> AppTest:
    import dashboard.state

    monkeypatch.setattr(dashboard.state, "client", lambda: client)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    return at


def test_a_client_over_its_budget_gets_a_page_saying_so_not_an_exception(home, monkeypatch):
    for i in range(2):
        visitors.record(A, f"earlier{i}", 0)
    with limits.override(visitor_workspaces_per_hour=2):
        at = _page(monkeypatch, A)
    assert not at.exception, [e.value for e in at.exception]
    assert any("cannot make a new workspace" in e.value for e in at.error)
    text = " ".join(t.value for t in at.text)
    assert "visitor_workspaces_per_hour" in text and "GPUDSE_CONFIG" in text
    assert not list((home / "workspaces").glob("*.db")) if (home / "workspaces").exists() else True


def test_the_server_wide_limit_reached_is_a_page_too(home, monkeypatch):
    create_workspace("someone's")[0].close()
    with limits.override(workspaces=1):
        at = _page(monkeypatch, B)
    assert not at.exception, [e.value for e in at.exception]
    assert any("cannot make a new workspace" in e.value for e in at.error)
    assert "(workspaces)" in " ".join(t.value for t in at.text)
