"""The campaign store's file handling and lease: stamped files, 0-byte, foreign, first-schema and
newer files, the lease per campaign (live, dead, stale and lost holders), attempts, read-only access."""

from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from gpudse_core import limits
from gpudse_core.sim.store import (APPLICATION_ID, SCHEMA_VERSION, Attempt, CampaignBusyError, CampaignStore,
                                   Outcome, StoreError, connect, progress_of)

from test_campaign import points

SCHEMA_V1 = """
CREATE TABLE campaign (name TEXT PRIMARY KEY, spec TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE point (campaign TEXT NOT NULL REFERENCES campaign(name), idx INTEGER NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT, log_tail TEXT, started REAL, finished REAL,
    PRIMARY KEY (campaign, idx));
CREATE INDEX point_status ON point (campaign, status);
"""


def _sha(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _pragmas(path) -> tuple[int, int]:
    with sqlite3.connect(path) as db:
        return (db.execute("PRAGMA application_id").fetchone()[0], db.execute("PRAGMA user_version").fetchone()[0])


def test_a_new_store_is_stamped_and_made_atomically(tmp_path):
    with CampaignStore(tmp_path / "c.db") as st:
        assert st.open({"a": 1}, points(3)) == "created"
    assert _pragmas(tmp_path / "c.db") == (APPLICATION_ID, SCHEMA_VERSION)
    assert sorted(p.name for p in tmp_path.iterdir() if "creating" in p.name) == []  # no temporary left behind
    with pytest.raises(StoreError, match="folder .* does not exist"):
        CampaignStore(tmp_path / "missing" / "c.db")


def test_a_zero_byte_file_is_never_reused(tmp_path):
    p = tmp_path / "c.db"
    p.write_bytes(b"")
    with pytest.raises(StoreError, match=r"empty \(0 bytes\).*delete it or pass another --store"):
        CampaignStore(p)
    with pytest.raises(StoreError, match="empty"):
        CampaignStore(p, readonly=True)
    assert p.stat().st_size == 0


@pytest.mark.parametrize("kind", ["text", "other program", "other application id", "empty sqlite", "folder"])
def test_foreign_files_are_refused_and_untouched(tmp_path, kind):
    p = tmp_path / "c.db"
    if kind == "text":
        p.write_text("results of my last campaign\n" * 50)
    elif kind == "folder":
        p.mkdir()
    else:
        with sqlite3.connect(p) as db:
            if kind == "other program":
                db.execute("CREATE TABLE users (name TEXT)")
                db.execute("INSERT INTO users VALUES ('ada')")
            elif kind == "other application id":
                db.execute("PRAGMA application_id = 1234")
                db.execute("CREATE TABLE campaign (name TEXT)")
            else:
                db.execute("PRAGMA user_version = 0")
                db.execute("VACUUM")
    before = None if kind == "folder" else _sha(p)
    match = {"text": "not an SQLite database", "other program": "tables users", "folder": "is a folder",
             "other application id": "application id 0x000004d2", "empty sqlite": "no tables"}[kind]
    with pytest.raises(StoreError, match=match):
        CampaignStore(p).open({}, points(2))
    if before is not None:
        assert _sha(p) == before and not (tmp_path / "c.db-wal").exists()


def test_a_stamped_file_with_other_gpudse_tables_is_a_store(tmp_path):
    """The dashboard's workspace shares the file: our stamp plus its tables; both kept."""
    p = tmp_path / "ws.db"
    db = connect(p)  # how the workspace opens (and creates) the shared file
    db.execute("CREATE TABLE workspace_stage (id TEXT PRIMARY KEY, body BLOB)")
    db.execute("INSERT INTO workspace_stage VALUES ('w1', x'00ff')")
    db.close()
    name = "3f2a9c0d1e6b4a5f8c7d/campaign-1"  # workspace campaigns carry a '/'
    with CampaignStore(p, name=name) as st:
        st.open({"a": 1}, points(4))
        st.complete([(i, {"cycles": 1.0}) for i, _, _ in st.claim(4)])
    assert progress_of(p, name).done == 4
    with sqlite3.connect(p) as db:
        assert db.execute("SELECT body FROM workspace_stage").fetchone()[0] == b"\x00\xff"
    # a workspace that stamped the file before any campaign existed
    q = tmp_path / "ws2.db"
    with sqlite3.connect(q) as db:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute("CREATE TABLE workspace_stage (id TEXT)")
    with CampaignStore(q) as st:
        assert st.open({}, points(2)) == "created"
    assert _pragmas(q) == (APPLICATION_ID, SCHEMA_VERSION)


@pytest.mark.parametrize("with_campaigns", [False, True])
def test_an_unstamped_dashboard_workspace_is_recognised_and_stamped(tmp_path, with_campaigns):
    """Workspace files written before workspaces were stamped (ws_meta with a gpudse.workspace schema),
    possibly holding first-schema campaign tables, are gpudse files: used and stamped, their tables kept."""
    p = tmp_path / "ws.db"
    with sqlite3.connect(p) as db:
        db.execute("CREATE TABLE ws_meta (id TEXT PRIMARY KEY, name TEXT, schema TEXT NOT NULL)")
        db.execute("INSERT INTO ws_meta VALUES ('abc', 'my work', 'gpudse.workspace/1')")
        db.execute("CREATE TABLE ws_campaign (name TEXT PRIMARY KEY, store_name TEXT)")
        if with_campaigns:
            db.executescript(SCHEMA_V1)
            db.execute("INSERT INTO campaign VALUES ('abc/old', '{}', 0)")
            db.execute("INSERT INTO point (campaign, idx, params, status, attempts, result) VALUES "
                       "('abc/old', 0, '{\"blk\": 1}', 'done', 1, '{\"cycles\": 3.0}')")
    with CampaignStore(p, name="abc/new") as st:
        assert st.open({}, points(2)) == "created"
    assert _pragmas(p) == (APPLICATION_ID, SCHEMA_VERSION)
    with sqlite3.connect(p) as db:
        assert db.execute("SELECT name FROM ws_meta").fetchone()[0] == "my work"
    if with_campaigns:
        with CampaignStore(p, name="abc/old", readonly=True) as st:
            assert st.table().cycles.tolist() == [3.0]
    q = tmp_path / "other.db"
    with sqlite3.connect(q) as db:
        db.execute("CREATE TABLE ws_meta (schema TEXT)")
        db.execute("INSERT INTO ws_meta VALUES ('somebody.else/1')")
    with pytest.raises(StoreError, match="not a gpudse campaign store"):
        CampaignStore(q)


def test_a_first_schema_store_is_upgraded_in_place(tmp_path):
    p = tmp_path / "old.db"
    pts = points(3)
    with sqlite3.connect(p) as db:
        db.executescript(SCHEMA_V1)
        db.execute("INSERT INTO campaign VALUES ('default', '{\"a\": 1}', 0)")
        for i, rec in enumerate(pts.to_dict(orient="records")):
            db.execute("INSERT INTO point (campaign, idx, params, status, attempts, result) VALUES (?, ?, ?, ?, ?, ?)",
                       ("default", i, __import__("json").dumps(rec), "done" if i == 0 else "running", 1,
                        '{"cycles": 7.0}' if i == 0 else None))
    with CampaignStore(p, readonly=True) as st:  # readable as it is
        assert st.progress().done == 1 and st.attempts().empty
    with CampaignStore(p) as st:
        assert st.open({"a": 1}, pts) == "resumed"
        assert st.progress().pending == 2 and st.table().cycles.tolist() == [7.0]
        assert len(st.uid) == 32
    assert _pragmas(p) == (APPLICATION_ID, SCHEMA_VERSION)


def test_a_store_of_a_newer_gpudse_is_refused(tmp_path):
    p = tmp_path / "c.db"
    CampaignStore(p).close()
    with sqlite3.connect(p) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer gpudse"):
        CampaignStore(p)


# ---- the lease ---------------------------------------------------------------------------------------
def _lease(p, **fields):
    row = {"campaign": "default", "owner": "someone", "host": socket.gethostname(), "pid": 1, "pid_start": "",
           "boot_id": open("/proc/sys/kernel/random/boot_id").read().strip() if os.path.exists(
               "/proc/sys/kernel/random/boot_id") else "", "since": time.time() - 60, "heartbeat": time.time()}
    row.update(fields)
    with sqlite3.connect(p) as db:
        db.execute("INSERT OR REPLACE INTO lease VALUES (:campaign, :owner, :host, :pid, :pid_start, :boot_id, :since, "
                   ":heartbeat)", row)


def _running_store(p, n=6, claim=3):
    with CampaignStore(p) as st:
        st.open({"a": 1}, points(n))
        st.claim(claim)
        st._opened = False  # leave as a process that died would: lease held, points running
        st.db.close()
        st.db = None


def test_a_live_holder_is_named_and_its_rows_kept(tmp_path):
    p = tmp_path / "c.db"
    first = CampaignStore(p)
    first.open({"a": 1}, points(6))
    first.claim(2)
    with pytest.raises(CampaignBusyError, match=rf"being run by pid {os.getpid()} on host .* since \d{{4}}-"):
        CampaignStore(p).open({"a": 1}, points(6))
    assert first.progress().running == 2  # untouched
    with CampaignStore(p, name="other") as other:  # another campaign in the same file is free
        assert other.open({"a": 1}, points(6)) == "created"
    first.close()
    with CampaignStore(p) as again:  # released: the next process resumes
        assert again.open({"a": 1}, points(6)) == "resumed" and again.progress().pending == 6
        att = again.attempts()
        assert (att.outcome == "interrupted").sum() == 2


def test_a_holder_in_another_live_process_is_respected(tmp_path):
    p = tmp_path / "c.db"
    _running_store(p)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stat = open(f"/proc/{sleeper.pid}/stat", "rb").read()
        start = stat[stat.rfind(b")") + 2:].split()[19].decode()
        _lease(p, pid=sleeper.pid, pid_start=start)
        with pytest.raises(CampaignBusyError, match=f"pid {sleeper.pid}"):
            CampaignStore(p).open({"a": 1}, points(6))
        _lease(p, pid=sleeper.pid, pid_start=str(int(start) + 1))  # that pid now belongs to another process
        with CampaignStore(p) as st:
            assert st.open({"a": 1}, points(6)) == "resumed"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_dead_holder_is_taken_over(tmp_path):
    p = tmp_path / "c.db"
    _running_store(p)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _lease(p, pid=gone.pid)
    with CampaignStore(p) as st:
        assert st.open({"a": 1}, points(6)) == "resumed"
        assert st.progress().running == 0 and st.progress().pending == 6
        assert st.holder().pid == os.getpid()


def test_a_holder_on_another_host_is_stale_only_without_heartbeat(tmp_path):
    p = tmp_path / "c.db"
    _running_store(p)
    _lease(p, host="node-17", pid=4242, boot_id="other", heartbeat=time.time() - 30)
    with pytest.raises(CampaignBusyError, match="pid 4242 on host node-17"):
        CampaignStore(p).open({"a": 1}, points(6))
    with limits.override(campaign_lease_s=20.0):
        with CampaignStore(p) as st:
            assert st.open({"a": 1}, points(6)) == "resumed"


def test_a_process_that_lost_its_lease_stops_without_writing(tmp_path):
    p = tmp_path / "c.db"
    st = CampaignStore(p)
    st.open({"a": 1}, points(6))
    (idx, _, _), = st.claim(1)
    _lease(p, host="node-3", pid=99, owner="the-new-holder")  # another process judged us dead
    with pytest.raises(StoreError, match="no longer holds campaign 'default'.*pid 99 on host node-3"):
        st.complete([(idx, {"cycles": 1.0})])
    with pytest.raises(StoreError, match="no longer holds"):
        st.claim(1)
    st.close()
    with CampaignStore(p, readonly=True) as ro:
        assert ro.progress().done == 0 and ro.holder().host == "node-3"  # the new holder's lease stays


def test_readonly_never_locks_creates_or_writes(tmp_path):
    p = tmp_path / "c.db"
    assert progress_of(p) is None and not p.exists()
    with pytest.raises(StoreError, match="no such campaign store"):
        CampaignStore(p, readonly=True)
    writer = CampaignStore(p)
    writer.open({"a": 1}, points(5))
    writer.claim(2)
    with CampaignStore(p, readonly=True) as ro:
        assert ro.progress().running == 2 and ro.holder().pid == os.getpid()
        with pytest.raises(StoreError, match="read-only"):
            ro.open({"a": 1}, points(5))
        with pytest.raises(StoreError, match="read-only"):
            ro.claim(1)
    assert progress_of(p, "nope") is None
    writer.close()


def test_attempts_are_recorded_with_lost_executions(tmp_path):
    with CampaignStore(tmp_path / "c.db", max_attempts=3) as st:
        st.open({}, points(2))
        (i0, _, a0), (i1, _, a1) = st.claim(2)
        assert (a0, a1) == (1, 1)
        st.record([
            Outcome(i0, True, {"cycles": 5.0}, attempts=[
                Attempt(1, "lost", "dask w0", "/runs/point-000000-try1", 10.0, 11.0, "its worker was lost"),
                Attempt(2, "done", "dask w1", "/runs/point-000000-try2", 12.0, 13.0)]),
            Outcome(i1, False, {}, "its worker was lost (KilledWorker)", attempts=[Attempt(1, "lost")]),
        ])
        att = st.attempts()
        assert att[att.idx == i0][["attempt", "outcome", "worker"]].values.tolist() == \
            [[1, "lost", "dask w0"], [2, "done", "dask w1"]]
        t = st.table(include_failed=True)
        assert t.attempts.tolist() == [2, 1] and t.status.tolist() == ["done", "pending"]
        (again, _, a), = st.claim(5)
        assert (again, a) == (i1, 2)
        st.unclaim([again])  # handed back before it started: that attempt is forgotten
        assert st.claim(5)[0][2] == 2


def test_reserved_column_names_are_refused(tmp_path):
    pts = points(2).rename(columns={"blk": "config"})
    with CampaignStore(tmp_path / "c.db") as st:
        with pytest.raises(StoreError, match="named config, which gpudse reserves"):
            st.open({}, pts)


def test_a_zombie_holder_is_dead(tmp_path):
    """A holder killed but not yet reaped by its parent (a zombie) has exited: its lease is taken over."""
    p = tmp_path / "c.db"
    _running_store(p)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    while open(f"/proc/{zombie.pid}/stat").read().split(") ")[1][0] != "Z":
        time.sleep(0.05)
    _lease(p, pid=zombie.pid)
    with CampaignStore(p) as st:
        assert st.open({"a": 1}, points(6)) == "resumed" and "has exited" in st.took_over
    zombie.wait()
