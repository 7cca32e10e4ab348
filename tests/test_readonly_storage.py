"""Read-only means no write, at the storage layer: a handle opened without the key is an SQLite
connection that refuses writes (query_only), so a check missed above cannot write; files that are
not workspaces (empty, not SQLite, another program's SQLite) are reported as such and never
written; one such file never hides the others from `workspace list`; SQLite errors during a change
are the project's errors (read-only, disk full, damaged)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import os

import pytest

from conftest import ROOT
from gpudse_core.sim.campaign import AnalyticalBackend
from gpudse_core.space.presets import load_preset
from gpudse_core.space.sampling import sample
from gpudse_core.workspace import ReadOnly, WorkspaceError, create_workspace, list_workspaces, open_workspace, \
    start_campaign
from gpudse_core.workspace import db as dbm
from gpudse_core.workspace.campaigns import record_campaign


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path


def digest(path) -> str:
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        p = f"{path}{suffix}"
        if os.path.exists(p):
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def owned(home):
    ws, key = create_workspace("owner's")
    space = load_preset("stargazer")
    ws.set_space(space, "preset")
    ws.set_samples(sample(space, n=8, seed=1), "8 points")
    ws.close()
    return ws.id, key


def test_a_read_only_handle_cannot_write_even_past_every_check(home):
    ws_id, key = owned(home)
    ro = open_workspace(ws_id)
    before = digest(ro.path)
    with pytest.raises(ReadOnly):
        start_campaign(ro, AnalyticalBackend("bfs"))
    with pytest.raises(ReadOnly, match="nothing was written"):
        record_campaign(ro, "sneaky")  # no check of its own: the connection refuses
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro._db.execute("UPDATE ws_meta SET name = 'x'")
    ro.close()
    assert digest(ro.path) == before
    with open_workspace(ws_id, key) as own:  # the owner is not kept out of anything
        assert own.campaigns() == [] and own.name == "owner's"
        job = start_campaign(own, AnalyticalBackend("bfs"))
        job.wait(120)
        assert [c.progress.done for c in own.campaigns()] == [8]


def test_a_handle_given_its_key_later_can_write(home):
    ws_id, key = owned(home)
    ws = open_workspace(ws_id, key)
    ws.rename("renamed")
    ws.writable = False
    with pytest.raises(ReadOnly):
        record_campaign(ws, "x")
    ws.close()


@pytest.mark.parametrize("content,what", [(b"", "empty file"), (b"hello, not a database\n" * 10, "not a gpudse"),
                                          ("sqlite", "another program")])
def test_files_that_are_not_workspaces_are_reported_and_never_written(home, content, what):
    ws_id, _ = owned(home)
    good = open_workspace(ws_id)
    good.close()
    bad_id = "B" * 32
    bad = home / "workspaces" / f"{bad_id}.db"
    if content == "sqlite":
        con = sqlite3.connect(bad)
        con.execute("CREATE TABLE notes (t TEXT)")
        con.commit()
        con.close()
    else:
        bad.write_bytes(content)
    before = bad.read_bytes()
    with pytest.raises(WorkspaceError, match=what):
        open_workspace(bad_id)
    assert bad.read_bytes() == before and not os.path.exists(f"{bad}-wal")
    skipped = []
    infos = list_workspaces(trusted=True, skipped=skipped)
    assert [i.id for i in infos] == [ws_id]  # the good one is still listed
    assert [s[0] for s in skipped] == [bad_id] and what in skipped[0][1]
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "workspace", "list"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert r.returncode == 0 and ws_id in r.stdout and "Traceback" not in r.stderr
    assert f"skipped {bad_id}.db" in r.stderr and what in r.stderr
    assert bad.read_bytes() == before


def test_sqlite_errors_during_a_change_are_ours():
    err = dbm.storage_error(sqlite3.OperationalError("database or disk is full"), "/x/w.db")
    assert isinstance(err, dbm.DiskFull) and "disk full" in str(err) and "previous state" in str(err)
    assert isinstance(dbm.storage_error(sqlite3.OperationalError("attempt to write a readonly database")), ReadOnly)
    assert "damaged" in str(dbm.storage_error(sqlite3.DatabaseError("database disk image is malformed")))
