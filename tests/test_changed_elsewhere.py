"""Two tabs on one workspace: a page learns that another tab, session or the CLI changed the workspace
(its revision counter moved by changes that are not its own or its jobs'), names the change, and an
action pressed on the older view writes nothing — pressed again on the page as it is now, it goes ahead."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from gpudse_core.space.presets import load_preset
from gpudse_core.workspace import Conflict, create_workspace, open_workspace


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path


def test_changes_since_names_other_handles_changes_only(home):
    ws, key = create_workspace("two tabs")
    start = ws.revision
    ws.set_space(load_preset("stargazer"), "preset stargazer")
    assert ws.changes_since(start) == []  # this handle's own change
    job = ws.start_job("note", lambda ctx: {"n": 1}, stage="note", inputs=[], origin="a job of this tab")
    job.thread.join(60)
    assert ws.get("note").value == {"n": 1} and ws.changes_since(start) == []  # its job's change is its own too
    with open_workspace(ws.id, key) as other:
        other.set_space(load_preset("lee-brooks"), "preset lee-brooks (another tab)")
        theirs = ws.changes_since(start)
        assert [(c.stage, c.version, c.origin) for c in theirs] == [("space", 2, "preset lee-brooks (another tab)")]
        assert ws.changes_since(ws.revision) == []
        other.reuse("space", 1)  # a change that stores no version of its own is still counted
        assert len(ws.changes_since(start)) == 2 and ws.changes_since(start)[-1].version is None
        # and the other handle sees this one's changes as someone else's
        assert [c.origin for c in other.changes_since(start)] == ["preset stargazer", "a job of this tab"]


def test_a_guarded_write_is_refused_after_another_change_and_writes_nothing(home):
    ws, key = create_workspace("two tabs")
    ws.set_space(load_preset("stargazer"), "preset stargazer")
    drawn = ws.revision
    with open_workspace(ws.id, key) as other:
        other.set_space(load_preset("lee-brooks"), "another tab")
    ws.guard = drawn
    with pytest.raises(Conflict, match="changed by another session or tab"):
        ws.set_space(load_preset("zatel"), "from the older view")
    with pytest.raises(Conflict):
        ws.start_job("note", lambda ctx: 1, stage="note", inputs=[])  # a job is not started either
    assert ws.get("space").value.name == "lee-brooks" and ws.jobs() == []
    ws.guard = ws.revision  # the page drawn again: the write goes ahead
    assert ws.set_space(load_preset("zatel"), "from the current view").version == 3
    # another session's analysis (a search storing its rounds) stops only a write of that analysis: a page
    # stays usable while a CLI search runs, and never overwrites the search itself
    ws.guard = ws.revision
    with open_workspace(ws.id, key) as other:
        other.put_analysis("search_notes", {"round": 1}, inputs=[], origin="gpudse search --workspace")
    assert ws.put_analysis("my_notes", {"n": 1}, inputs=[]).version == 1
    with pytest.raises(Conflict):
        ws.put_analysis("search_notes", {"round": 0}, inputs=[])
    assert ws.get("search_notes").value == {"round": 1}


def _home_page(ws_id: str, key: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["ws"] = ws_id
    at.session_state["_gpudse_keys"] = {ws_id: key}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def notices(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "another tab or session" in w.value]


def test_the_page_names_another_tabs_change_and_refuses_a_rename_pressed_on_the_older_view(home):
    ws, key = create_workspace("Kernel review")
    ws.set_space(load_preset("stargazer"), "preset stargazer")
    ws.close()
    at = _home_page(ws.id, key)
    assert notices(at) == []
    at.run()
    assert notices(at) == []  # a rerun alone is no change
    with open_workspace(ws.id, key) as other:  # another tab loads a preset
        other.set_space(load_preset("lee-brooks"), "preset lee-brooks (another tab)")
    at.run()
    assert not at.exception
    shown = notices(at)
    assert len(shown) == 1 and "the design space (v2, preset lee-brooks (another tab)" in shown[0], shown
    at.run()
    assert notices(at) == []  # named once: the page now shows the workspace as it is
    with open_workspace(ws.id, key) as other:
        other.set_space(load_preset("zatel"), "preset zatel (another tab)")
    at.text_input(key=f"ws_name_{ws.id}").input("Renamed on the older view").run()  # typed before the change showed
    assert not at.exception
    assert any("changed by another session or tab" in e.value for e in at.error), [e.value for e in at.error]
    with open_workspace(ws.id) as now:
        assert now.name == "Kernel review"  # nothing written
    at.run()  # the same name again, on the page as it is now: it goes ahead
    assert not at.exception and not at.error
    with open_workspace(ws.id) as now:
        assert now.name == "Renamed on the older view"


def test_this_sessions_own_changes_and_jobs_raise_no_notice(home):
    ws, key = create_workspace("One tab")
    ws.set_space(load_preset("stargazer"), "preset stargazer")
    ws.close()
    at = _home_page(ws.id, key)
    mine = at.session_state["_gpudse_ws"]  # the session's own handle, as a page's button uses it
    mine.set_space(load_preset("lee-brooks"), "this tab")
    job = mine.start_job("note", lambda ctx: {"n": 1}, stage="note", inputs=[], origin="this tab's job")
    deadline = time.monotonic() + 60  # a deadline only, no timing assertion
    while mine.jobs(active=True):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    job.thread.join(10)
    at.run()
    assert not at.exception and notices(at) == []


def test_the_notice_names_changes_with_their_origins_as_plain_text():
    from dashboard.changes import SHOWN, describe
    from gpudse_core.report.plaintext import markdown
    from gpudse_core.workspace.workspace import Change

    bait = "![x](http://attacker/img.png) **loud**"
    now = 1_000_000.0
    text = describe([Change("model", 5, 9, now - 12, bait), Change("", None, 10, None, "")], now=now)
    assert text == f"the model (v5, {markdown(bait)}, 12 s ago); a kept version made current again"
    assert "![x](" not in text and "**loud**" not in text
    many = [Change("results", v, v, now, "upload") for v in range(1, SHOWN + 3)]
    assert describe(many, now=now).endswith("; and 2 more changes")
