"""Every storage fault ends in the project's error and stays where it is: a damaged stage row
leaves the other stages (and the other workspaces) readable and can be dropped; a damaged value
gives a clear error in `workspace export`; a full disk says "disk full" and keeps the previous
state; leftovers of interrupted forks and template builds are removed on the next start."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from gpudse_core.errors import GpudseError
from gpudse_core.space.presets import load_preset
from gpudse_core.space.sampling import sample
from gpudse_core.workspace import StageDamaged, create_workspace, list_workspaces, open_workspace
from gpudse_core.workspace import db as dbm


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path


def two_stages():
    ws, key = create_workspace("faulty")
    space = load_preset("stargazer")
    ws.set_space(space, "preset")
    ws.set_samples(sample(space, n=8, seed=1), "8 points")
    ws.close()
    return ws, key


def damage(ws, sql: str) -> None:
    con = sqlite3.connect(ws.path)
    con.execute(sql)
    con.commit()
    con.close()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpudse_core", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("sql", ["UPDATE ws_stage SET inputs = 'not json' WHERE stage = 'samples'",
                                 "UPDATE ws_stage SET inputs = '{\"space\": 5}' WHERE stage = 'samples'",
                                 "UPDATE ws_head SET version = 'x' WHERE stage = 'samples'"])
def test_a_damaged_row_isolates_to_its_stage_and_can_be_dropped(home, sql):
    ws, key = two_stages()
    other, _ = create_workspace("healthy")
    other.close()
    damage(ws, sql)
    w = open_workspace(ws.id, key)
    assert w.overview()["space"].state == "current" and w.get("space").value.name == "stargazer"
    assert list(w.damaged()) == ["samples"] and "damaged" in w.damaged()["samples"]
    assert w.overview()["samples"].state == "missing"
    assert {i.id for i in list_workspaces(trusted=True)} == {ws.id, other.id}
    r = cli("workspace", "list")
    assert r.returncode == 0 and ws.id in r.stdout and other.id in r.stdout, r.stderr
    w.drop_damaged("samples")
    assert w.damaged() == {} and w.overview()["samples"].state == "missing"
    w.set_samples(sample(w.get("space").value, n=4, seed=2), "again")
    assert w.overview()["samples"].state == "current"
    w.close()


def test_a_damaged_value_is_a_clear_error_in_export_and_named_on_the_page(home):
    ws, key = two_stages()
    damage(ws, "UPDATE ws_stage SET value = X'00112233' WHERE stage = 'samples'")
    r = cli("workspace", "export", ws.id, "--stage", "samples", "-o", str(home / "s.csv"))
    assert r.returncode == 2 and "gpudse: error:" in r.stderr and "cannot be read" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["ws"] = ws.id
    at.session_state["_gpudse_keys"] = {ws.id: key}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("cannot be read" in e.value for e in at.error)
    drop = [b for b in at.button if b.label.startswith("Drop the damaged")]
    assert drop, [b.label for b in at.button]
    drop[0].click().run()
    assert not at.exception and open_workspace(ws.id).overview()["samples"].state == "missing"


FORGED = {  # stored values that decode, but not to what the stage holds (a hand-edited or forged file)
    "a-dict": '{"a": 1}',
    "sample-set-scalar-fields": '{"__obj__": "gpudse_core.space.sampling.SampleSet", "fields": {"space_name": "x", '
                                '"method": "u", "seed": 1, "request": {}, "points": 7, "indices": 3}}',
    "sample-set-ragged": '{"__obj__": "gpudse_core.space.sampling.SampleSet", "fields": {"space_name": "x", '
                         '"method": "u", "seed": 1, "request": {}, "points": {"blk": [1, 2]}, "indices": '
                         '{"__tuple__": [0, 1, 2]}}}',
    "garbage-zip": None,
}


def forge(ws, name: str) -> None:
    con = sqlite3.connect(ws.path)
    if FORGED[name] is None:
        con.execute("UPDATE ws_stage SET value = X'504b0304ffff', format = 'zip' WHERE stage = 'samples'")
    else:
        con.execute("UPDATE ws_stage SET value = ?, format = 'json' WHERE stage = 'samples'", (FORGED[name].encode(),))
    con.commit()
    con.close()


@pytest.mark.parametrize("name", sorted(FORGED))
def test_a_forged_value_is_damaged_by_name_in_export_and_the_rest_exported(home, name):
    """``workspace export`` failed with an AttributeError on a stored value that decodes to something
    else than the stage holds: now every read checks it, the project zip names the damaged stage and
    holds the others, and exporting that stage alone is refused with our error."""
    import zipfile

    ws, key = two_stages()
    forge(ws, name)
    w = open_workspace(ws.id, key)
    with pytest.raises(GpudseError) as e:
        w.get("samples")
    assert type(e.value).__name__ == "CodecError" and "samples v1" in str(e.value)
    assert "samples" in w.damaged() and w.get("space").ok
    w.close()
    r = cli("workspace", "export", ws.id, "-o", str(home / "p.zip"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "left out samples: damaged: " in r.stderr, r.stderr
    names = zipfile.ZipFile(home / "p.zip").namelist()
    assert "space.yaml" in names and "samples.json" not in names
    r = cli("workspace", "export", ws.id, "--stage", "samples", "-o", str(home / "s.csv"))
    assert r.returncode == 2 and "gpudse: error:" in r.stderr and "samples v1" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (home / "s.csv").exists()


def test_samples_of_a_space_beyond_int64_are_not_taken_for_damage(home):
    """The check of stored samples accepts design indices beyond 2^63 (an object column of Python ints)."""
    from gpudse_core.space.design import DesignSpace, Parameter

    space = DesignSpace(tuple(Parameter(f"p{i}", tuple(range(1000))) for i in range(8)), name="huge")
    ws, key = create_workspace("huge")
    ws.set_space(space, "8 × 1,000 values")
    ws.set_samples(sample(space, n=5, seed=1), "5 points")
    ws.close()
    with open_workspace(ws.id, key) as w:
        sv = w.get("samples")
        assert sv.value.indices.dtype == object and max(sv.value.indices) > 2 ** 63 and w.damaged() == {}


@pytest.mark.parametrize("name", ["a-dict", "garbage-zip"])
def test_the_sampling_page_shows_a_damaged_value_with_its_drop_button(home, name):
    ws, key = two_stages()
    forge(ws, name)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["ws"] = ws.id
    at.session_state["_gpudse_keys"] = {ws.id: key}
    at.run()
    at.switch_page("pages/2_Sampling.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("samples v1" in e.value for e in at.error), [e.value for e in at.error]
    drop = [b for b in at.button if b.label.startswith("Drop the damaged")]
    assert len(drop) == 1, [b.label for b in at.button]
    drop[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert open_workspace(ws.id).overview()["samples"].state == "missing"
    assert any("No samples yet" in i.value for i in at.info), [i.value for i in at.info]


def test_a_full_disk_says_so_and_keeps_the_previous_state(home):
    ws, key = two_stages()
    w = open_workspace(ws.id, key)
    before = w.get("samples")
    pages = w._db.execute("PRAGMA page_count").fetchone()[0]
    w._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "database or disk is full"
    with pytest.raises(dbm.DiskFull, match="disk full.*previous state"):
        w.set_samples(sample(w.get("space").value, n=5000, seed=3), "too big for the disk")
    w.close()
    with open_workspace(ws.id) as again:
        now = again.get("samples")
        assert now.version == before.version and len(now.value) == 8


def test_damaged_is_a_workspace_error():
    assert issubclass(StageDamaged, dbm.WorkspaceError)


def test_leftovers_of_interrupted_forks_and_template_builds_are_removed_on_the_next_start(home):
    from gpudse_core.workspace import upkeep

    keep, _ = create_workspace("the template in use")
    orphan, _ = create_workspace("a template whose build was killed")
    mine, _ = create_workspace("someone's work")
    for w in (keep, orphan, mine):
        w.close()
    upkeep.mark_template(keep.id)
    upkeep.template_built(keep.id)  # the template in use finished its build; the orphan never did
    upkeep.mark_template(orphan.id)
    wsdir = home / "workspaces"
    old_tmp = wsdir / ("Y" * 32 + ".tmp")
    old_tmp.write_bytes(b"half a fork")
    fresh_tmp = wsdir / ("Z" * 32 + ".tmp")  # another process forking right now
    fresh_tmp.write_bytes(b"in progress")
    later = time.time() + upkeep.AGE_S + 5
    os.utime(fresh_tmp, (later, later))
    removed = upkeep.clean(keep_template=keep.id, now=time.time() + upkeep.AGE_S + 1)
    assert sorted(removed) == sorted([old_tmp.name, orphan.id])
    assert fresh_tmp.exists() and not old_tmp.exists()
    assert {i.id for i in list_workspaces(trusted=True)} == {keep.id, mine.id}


def test_a_fork_that_fails_leaves_no_tmp_file(home, monkeypatch):
    ws, key = two_stages()
    w = open_workspace(ws.id, key)

    real_connect = dbm.connect

    def connect(path, *a, **k):
        con = real_connect(path, *a, **k)
        if str(path).endswith(".tmp"):
            con.execute("PRAGMA max_page_count = 1")
        return con

    monkeypatch.setattr(dbm, "connect", connect)
    with pytest.raises(dbm.DiskFull, match="disk full"):
        w.fork("copy")
    assert not list((home / "workspaces").glob("*.tmp*"))
    assert len(list((home / "workspaces").glob("*.db"))) == 1
    w.close()


def test_a_full_disk_at_exit_is_one_line_not_a_traceback_from_the_exit_handler(home, monkeypatch, capsys):
    """`gpudse simulate --workspace` records an interrupted campaign from an exit handler; when that
    write fails (disk full), the handler says so in one line instead of printing a traceback."""
    from gpudse_core.workspace import campaigns

    ws, key = two_stages()
    cli_campaign = campaigns.CliCampaign(open_workspace(ws.id, key), "from the command line")

    def full(*a, **k):
        raise dbm.DiskFull("disk full: the previous state is kept")

    monkeypatch.setattr(campaigns, "end_job", full)
    cli_campaign._abandon()  # what atexit runs
    err = capsys.readouterr().err
    assert "gpudse: note: could not record" in err and "disk full" in err and "Traceback" not in err
    assert not cli_campaign._open
