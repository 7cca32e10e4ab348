"""Campaign faults: the CLI killed alone leaves no orphan, two writers on one campaign, 0-byte and
damaged stores, a store error in the middle of a run, a simulator that prints too much, a worker (and a
simulator's grandchild) killed with it — with nothing lost, nothing run twice unrecorded, and a non-zero exit
wherever a result is missing."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpudse_core.sim.campaign import AnalyticalBackend, CommandBackend, run_campaign
from gpudse_core.sim.command import supervise
from gpudse_core.sim.store import CampaignStore, StoreError, progress_of

from conftest import ROOT
from test_campaign import assert_every_execution_recorded, backend_file, cli, points

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _ours(tmp_path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions this test's folder (supervisors, simulators, the CLI)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.pid != os.getpid() and any(str(tmp_path) in a for a in (p.info["cmdline"] or [])) and _alive(p):
                out.append(p)
        except psutil.Error:
            pass
    return out


def assert_no_orphans(procs: list[psutil.Process], tmp_path: Path | None, within: float = 5.0) -> None:
    """No process of the run (the snapshot *procs*, or any naming *tmp_path*) is alive after *within* s."""
    deadline = time.time() + within
    while True:
        left = [p for p in procs if _alive(p)] + (_ours(tmp_path) if tmp_path else [])
        if not left or time.time() > deadline:
            break
        time.sleep(0.1)
    assert not left, f"still running {within:g} s after the kill: " + "; ".join(
        f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in left)


def _wait_for(cond, timeout=120.0, what="the condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_sigkill_of_the_cli_alone_leaves_no_orphan(tmp_path):
    """SIGKILL only the CLI's pid (not its group): pool workers, supervisors, simulators and the simulators'
    grandchildren are all gone within 5 s; the next run resumes and completes."""
    started, sleep = tmp_path / "started.txt", tmp_path / "sleep.txt"
    sleep.write_text("5")
    backend_file(tmp_path, mode="spawn", sleep=f"@{sleep}", started=str(started))
    samples = tmp_path / "s.csv"
    points(6).to_csv(samples, index=False)
    proc = subprocess.Popen(cli(tmp_path, samples, tmp_path / "c.db"), cwd=tmp_path, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: _lines(started) >= 2, what="two simulators to start")
    time.sleep(0.3)  # let them spawn their grandchildren
    tree = psutil.Process(proc.pid).children(recursive=True)
    assert len(tree) >= 2 + 2 * 3  # two pool workers, each with a supervisor, a simulator and its grandchild
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert_no_orphans(tree, tmp_path)
    sleep.write_text("0")  # quicker now (the campaign's spec, its command, is the same)
    out = subprocess.run(cli(tmp_path, samples, tmp_path / "c.db"), cwd=tmp_path, env=ENV, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    with CampaignStore(tmp_path / "c.db", readonly=True) as st:
        assert st.progress().done == 6
        assert_every_execution_recorded(started, {(r.idx, r.attempt): r.outcome for r in st.attempts().itertuples()})
        assert (st.attempts().outcome == "interrupted").sum() >= 2


@pytest.mark.slow
def test_two_writers_on_one_campaign(tmp_path):
    """A second process on a running campaign is refused, naming the holder, and changes nothing; the first
    finishes every point exactly once and exits 0. Another campaign in the same file runs meanwhile, and a
    reader sees the first's progress without a lock."""
    marker, started = tmp_path / "completed.txt", tmp_path / "started.txt"
    backend_file(tmp_path, sleep=0.25, marker=str(marker), started=str(started))
    other = tmp_path / "other"
    other.mkdir()
    backend_file(other, sleep=0.0)
    samples = tmp_path / "s.csv"
    points(24).to_csv(samples, index=False)
    store = tmp_path / "c.db"
    first = subprocess.Popen(cli(tmp_path, samples, store), cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: _lines(started) >= 2, what="the first writer's runs")
    second = subprocess.run(cli(tmp_path, samples, store, "r2.csv"), cwd=tmp_path, env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert second.returncode == 2
    assert f"is being run by pid {first.pid} on host" in second.stderr and "since" in second.stderr
    assert not (tmp_path / "r2.csv").exists()
    seen = progress_of(store, "default")
    assert seen is not None and seen.total == 24 and seen.running >= 1  # read while the first holds the lease
    third = subprocess.run(cli(tmp_path, samples, store, "r3.csv", "--campaign", "other", cfg=other / "sim.toml"),
                           cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr  # a lease per campaign, not per file
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    runs = [int(x) for x in marker.read_text().split()]
    assert sorted(runs) == list(range(24))  # every point ran exactly once
    with CampaignStore(store, readonly=True) as st:
        att = st.attempts()
        assert len(att) == 24 and (att.outcome == "done").all() and (att.attempt == 1).all()
        assert st.holder() is None  # released at the end
    with CampaignStore(store, name="other", readonly=True) as st:
        assert st.progress().done == 24


def test_zero_byte_store_is_refused_by_the_cli(tmp_path):
    backend_file(tmp_path)
    samples = tmp_path / "s.csv"
    points(3).to_csv(samples, index=False)
    store = tmp_path / "c.db"
    store.write_bytes(b"")
    out = subprocess.run(cli(tmp_path, samples, store), cwd=tmp_path, env=ENV, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert "empty (0 bytes)" in out.stderr and "delete it or pass another --store" in out.stderr
    assert "Traceback" not in out.stderr
    assert store.stat().st_size == 0 and not (tmp_path / "c.db-wal").exists()


def damage(path: Path, page: int | None = None, seed: int = 0) -> int:
    """Write random bytes over one page in the middle of an SQLite file; returns the page number."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(100)
    page_size = int.from_bytes(head[16:18], "big") or 65536
    pages = size // page_size
    page = pages // 2 if page is None else page
    with open(path, "r+b") as fh:
        fh.seek(page * page_size)
        fh.write(random.Random(seed).randbytes(page_size))
    return page


def _store_with_results(path: Path, n: int = 3000, done: int = 1000) -> None:
    pts = points(n, seed=5)
    with CampaignStore(path) as st:
        st.open({"backend": "test"}, pts)
        claimed = st.claim(done)
        st.complete([(i, {"cycles": float(i)}) for i, _, _ in claimed])
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def test_damaged_store_is_refused_at_open_and_left_untouched(tmp_path):
    store = tmp_path / "c.db"
    _store_with_results(store)
    damage(store)
    before = _sha(store)
    with pytest.raises(StoreError, match=r"damaged.*\.recover") as err:
        CampaignStore(store)
    assert f"sqlite3 {store} .recover" in str(err.value)
    backend_file(tmp_path)
    samples = tmp_path / "s.csv"
    points(3).to_csv(samples, index=False)
    out = subprocess.run(cli(tmp_path, samples, store), cwd=tmp_path, env=ENV, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and "damaged" in out.stderr and "Traceback" not in out.stderr
    assert _sha(store) == before


@pytest.mark.parametrize("how", ["authorizer", "page"])
def test_store_error_mid_run_stops_cleanly(tmp_path, how):
    """An sqlite3 error in the middle of a run (a denied statement, or a page damaged under the running
    store) becomes our StoreError naming the file; the run stops, its workers are gone, and every batch
    committed before is still there."""
    store = tmp_path / "c.db"
    pts = points(4000, seed=2)
    committed = []
    # processes this test did not start (the browser tests' shared server and Chromium) are not its business
    earlier = {p.pid for p in psutil.Process().children(recursive=True)}
    st = CampaignStore(store)
    st.open({"backend": "analytical"}, pts)

    def sabotage(prog, rate):
        committed.append(prog.done)
        if len(committed) == 3:
            if how == "authorizer":
                st.db.set_authorizer(lambda *a: sqlite3.SQLITE_DENY)
            else:  # garbage over the point table's pages, under the open store (no cached copy)
                st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                st.db.execute("PRAGMA cache_size = 0")
                for page in range(3, 40):
                    damage(store, page, seed=page)

    with pytest.raises(StoreError) as err:
        run_campaign(st, AnalyticalBackend(batch_size=100), workers=2, progress=sabotage)
    assert str(store) in str(err.value) and ("damaged" in str(err.value) or "failed" in str(err.value))
    # the pool's workers stopped
    assert not [p for p in psutil.Process().children(recursive=True) if p.pid not in earlier]
    st.db.set_authorizer(None)
    st.close()
    if how == "authorizer":  # the file is intact: everything committed before the error is there
        with CampaignStore(store, readonly=True) as again:
            assert again.progress().done >= committed[2] > 0
    else:
        with pytest.raises(StoreError, match="damaged"):
            CampaignStore(store)


@pytest.mark.slow
def test_cli_exits_nonzero_and_counts_missing_results(tmp_path):
    mode = tmp_path / "mode.txt"
    mode.write_text("crash")
    backend_file(tmp_path, mode=f"@{mode}")
    samples = tmp_path / "s.csv"
    points(3).to_csv(samples, index=False)
    out = subprocess.run(cli(tmp_path, samples, tmp_path / "c.db", "r.csv", "--retries", "0"), cwd=tmp_path,
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "3 of 3 point(s) have no result: 3 failed after 1 attempt(s)" in out.stderr
    assert "--retry-failed" in out.stderr
    mode.write_text("ok")  # the simulator is fixed; --retry-failed gives the failed points new attempts
    out = subprocess.run(cli(tmp_path, samples, tmp_path / "c.db", "r.csv", "--retry-failed"), cwd=tmp_path,
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "re-queued 3 failed point(s)" in out.stderr


def test_a_flood_of_output_costs_bounded_disk_and_keeps_the_statistics(tmp_path, monkeypatch):
    """A simulator printing 200 MiB: the log keeps the head and the tail (the statistics), the middle is
    marked as dropped, and the run succeeds."""
    cfgfile = tmp_path / "limits.toml"
    cfgfile.write_text("[limits]\nsim_output_bytes = 4194304\n")
    monkeypatch.setenv("GPUDSE_CONFIG", str(cfgfile))
    be = CommandBackend.from_file(backend_file(tmp_path, mode="flood", flood_mb=200))
    with CampaignStore(tmp_path / "c.db") as st:
        st.open(be.spec(), points(1))
        assert run_campaign(st, be, workers=1).done == 1
        run_dir = Path(st.attempts().run_dir.iloc[0])
        assert st.table().gpu_tot_sim_cycle.iloc[0] > 0
    log = run_dir / "run.log"
    assert log.stat().st_size <= 4 * 1024 * 1024 + 200
    text = log.read_text()
    head, marker, tail = text.partition("[gpudse: output dropped here:")
    assert head.startswith("GPGPU-Sim: fake simulator starting") and marker
    dropped = int(tail.split()[0])
    assert 195 * 2**20 < dropped < 200 * 2**20 and "gpu_tot_sim_cycle = " in tail
    assert not (run_dir / "run.log.tail").exists()


def test_supervised_simulator_dies_with_its_worker(tmp_path):
    """A worker process running a simulator (which has a grandchild) is SIGKILLed: both die."""
    script = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
              f"from gpudse_core.sim.command import supervise; "
              f"supervise([sys.executable, '-c', 'import subprocess, sys, time; "
              f"subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(300)\"]); time.sleep(300)'], "
              f"Path({str(tmp_path)!r}), Path({str(tmp_path / 'run.log')!r}), 600.0, {{}})")
    worker = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path)
    _wait_for(lambda: len(psutil.Process(worker.pid).children(recursive=True)) >= 3, what="the simulator tree")
    tree = psutil.Process(worker.pid).children(recursive=True)
    worker.kill()
    worker.wait()
    assert_no_orphans(tree, tmp_path)


def test_timeout_kills_the_whole_group(tmp_path):
    status = supervise([sys.executable, "-c", "import subprocess, sys, time; print('hi', flush=True); "
                        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', sys.argv[1]]); "
                        "time.sleep(300)", str(tmp_path)], tmp_path, tmp_path / "run.log", 1.0, {})
    assert status["timed_out"] and status["code"] is not None and status["code"] < 0
    assert (tmp_path / "run.log").read_text() == "hi\n"
    assert_no_orphans([], tmp_path, within=0.5)  # the grandchild (its command line names tmp_path) is gone too


def test_simulator_that_cannot_start(tmp_path):
    status = supervise([str(tmp_path / "no-such-simulator")], tmp_path, tmp_path / "run.log", 5.0, {})
    assert "cannot start" in status["error"]


def test_opening_a_file_this_process_has_open_keeps_its_locks(tmp_path):
    """Checking a live store's header must not drop this process's POSIX locks: if it did, another
    process that opens and closes the file takes itself for the last user, checkpoints and deletes the
    WAL under our open connection ("disk I/O error" on every page of the dashboard, found in a browser
    walk: a campaign shown live while `gpudse workspace show` ran)."""
    from gpudse_core.sim.store import connect

    path = tmp_path / "live.db"
    db = connect(path)
    db.execute("CREATE TABLE t (x)")
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES (1)")
    db.execute("COMMIT")
    wal = Path(f"{path}-wal")
    assert wal.exists()
    connect(path, readonly=True).close()  # what listing campaigns does while the dashboard holds the file
    connect(path).close()
    other = subprocess.run([sys.executable, "-c", f"from gpudse_core.sim.store import connect; "
                                                  f"connect({str(path)!r}).close()"],
                           cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert wal.exists(), "the other process deleted the WAL of a file this process still has open"
    db.execute("INSERT INTO t VALUES (2)")
    assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    db.close()
