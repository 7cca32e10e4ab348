"""Edits are never silently lost: the Design space form keeps the version it was built from, so when
another session saves a new space while the owner is typing, the owner's Apply is refused (compare and
swap on that version), the newer space is named, and the typed edit stays in the form until the owner
chooses to discard it."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from gpudse_core.space.presets import load_preset
from gpudse_core.workspace import create_workspace, open_workspace


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path


def test_an_apply_from_a_stale_form_is_refused_and_the_edit_kept(home):
    ws, key = create_workspace("two sessions")
    ws.set_space(load_preset("stargazer"), "preset stargazer")
    v1 = ws.get("space").version
    ws.close()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["ws"] = ws.id
    at.session_state["_gpudse_keys"] = {ws.id: key}
    at.run()
    at.switch_page("pages/1_Design_space.py").run()
    assert not at.exception, [e.value for e in at.exception]
    cons = at.text_area(key=f"cons_{ws.id}_{v1}")
    typed = cons.value + "\nsimd >= 16"
    cons.input(typed).run()  # the owner types a constraint (not applied yet)
    with open_workspace(ws.id, key) as other:  # meanwhile another session loads a preset
        other.set_space(load_preset("lee-brooks"), "preset lee-brooks (another session)")
        v2 = other.get("space").version
    [b for b in at.button if b.label == "Apply changes"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("changed by another session" in e.value for e in at.error), [e.value for e in at.error]
    assert any(f"current version is {v2}" in w.value and "lee" in w.value for w in at.warning)
    assert at.text_area(key=f"cons_{ws.id}_{v1}").value == typed  # the edit is still there
    with open_workspace(ws.id) as now:
        assert now.get("space").value.name == "lee-brooks"  # and nothing overwrote the other session's save
    [b for b in at.button if b.label.startswith("Discard my edits")][0].click().run()
    assert not at.exception and not at.warning
    assert "simd >= 16" not in at.text_area(key=f"cons_{ws.id}_{v2}").value
