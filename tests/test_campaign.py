"""Simulation campaigns: the SQLite store, the analytical and command backends, retries, timeouts,
garbage output, and resuming after SIGKILL with nothing lost and nothing completed run twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.sim.campaign import AnalyticalBackend, BackendError, CommandBackend, points_spec, run_campaign
from gpudse_core.errors import GpudseError
from gpudse_core.sim.simulator import simulate
from gpudse_core.sim.store import CampaignStore, StoreError

from conftest import ROOT

FAKE = Path(__file__).parent / "fake_sim.py"


def points(n=40, seed=1):
    return sample(load_preset("stargazer"), n, seed=seed).points


def backend_file(tmp_path, mode="ok", timeout=30, sleep=0.0, marker="", metrics=("gpu_tot_sim_cycle",)):
    (tmp_path / "template.config").write_text("# fake GPGPU-Sim config\n-gpgpu_n_clusters 8\n"
                                              "-gpgpu_shader_cta 8 # blocks per core\n")
    cmd = [sys.executable, str(FAKE), "--mode", mode, "--sleep", str(sleep), "--config", "{config}"]
    if marker:
        cmd += ["--marker", marker]
    toml = tmp_path / "sim.toml"
    toml.write_text(
        f"command = {cmd!r}\n".replace("'", '"') +
        f'workdir = "runs"\ntimeout = {timeout}\nmetrics = {list(metrics)!r}\n'.replace("'", '"') +
        'config_template = "template.config"\n[options]\nblk = "-gpgpu_shader_cta"\n')
    return toml


def test_store_create_resume_and_mismatch(tmp_path):
    pts = points(10)
    with CampaignStore(tmp_path / "c.db") as st:
        assert st.open({"a": 1}, pts) == "created"
        claimed = st.claim(4)
        assert [c[0] for c in claimed] == [0, 1, 2, 3] and all(c[2] == 1 for c in claimed)
        st.complete([(0, {"cycles": 5.0})])
    with CampaignStore(tmp_path / "c.db") as st:  # a new process: 'running' points go back to the queue
        assert st.open({"a": 1}, pts) == "resumed"
        p = st.progress()
        assert (p.done, p.running, p.pending) == (1, 0, 9)
        with pytest.raises(StoreError, match="different setup"):
            st.open({"a": 2}, pts)
    (tmp_path / "junk.db").write_text("not sqlite at all " * 100)
    with pytest.raises(StoreError, match="not a gpudse campaign store"):
        CampaignStore(tmp_path / "junk.db").open({}, pts)


def test_retries_then_failed(tmp_path):
    with CampaignStore(tmp_path / "c.db", max_attempts=2) as st:
        st.open({}, points(1))
        for expected in ("pending", "failed"):
            (idx, _, _), = st.claim(1)
            st.fail([(idx, "boom", "log tail")])
            status = st.db.execute("SELECT status FROM point").fetchone()[0]
            assert status == expected
        assert st.failures().error.tolist() == ["boom"]


def test_analytical_campaign_matches_direct_simulation_and_batching(tmp_path):
    pts = points(300)
    results = []
    for batch in (7, 500):
        with CampaignStore(tmp_path / f"b{batch}.db") as st:
            b = AnalyticalBackend("LPS", noise=0.03, seed=9, batch_size=batch)
            st.open({**b.spec(), **points_spec(pts)}, pts)
            assert run_campaign(st, b, workers=2).done == 300
            results.append(st.table())
    pd.testing.assert_frame_equal(results[0], results[1])  # noise depends on the point, not the batch
    clean = CampaignStore(tmp_path / "clean.db")
    b = AnalyticalBackend("LPS")
    clean.open(b.spec(), pts)
    run_campaign(clean, b, workers=1)
    direct = simulate(pts, "LPS")
    pd.testing.assert_series_equal(clean.table()["cycles"], direct["cycles"], check_names=False)


def test_command_backend_runs_each_point_in_its_own_directory(tmp_path):
    be = CommandBackend.from_file(backend_file(tmp_path))
    pts = points(6)
    with CampaignStore(tmp_path / "c.db") as st:
        st.open(be.spec(), pts)
        assert run_campaign(st, be, workers=2).done == 6
        table = st.table()
    for i, row in table.iterrows():
        run = tmp_path / "runs" / f"point-{i:06d}-try1"
        cfg = (run / "gpgpusim.config").read_text()
        assert f"-gpgpu_shader_cta {row.blk} # blocks per core" in cfg and "-gpgpu_n_clusters 8" in cfg
        assert row.gpu_tot_sim_cycle == 100000 // (row.blk * 8) + 17
        assert "fake simulator starting" in (run / "run.log").read_text()


@pytest.mark.parametrize(
    "mode, timeout, reason",
    [("crash", 30, "exited with status 1"), ("hang", 1, "timed out after 1 s"),
     ("garbage", 30, "no gpu_tot_sim_cycle in the output")],
)
def test_failures_are_recorded_with_reason_and_log(tmp_path, mode, timeout, reason):
    be = CommandBackend.from_file(backend_file(tmp_path, mode=mode, timeout=timeout))
    with CampaignStore(tmp_path / "c.db", max_attempts=2) as st:
        st.open(be.spec(), points(2))
        t = time.perf_counter()
        final = run_campaign(st, be, workers=2)
        assert final.failed == 2 and final.done == 0
        fails = st.failures()
        assert (fails.attempts == 2).all() and fails.error.str.contains(reason).all()
        assert fails.log_tail.str.contains("fake simulator starting").all()
    if mode == "hang":
        assert time.perf_counter() - t < 30  # the hung simulators were killed, not waited for


def test_flaky_runs_succeed_on_retry(tmp_path):
    be = CommandBackend.from_file(backend_file(tmp_path, mode="flaky"))
    with CampaignStore(tmp_path / "c.db", max_attempts=3) as st:
        st.open(be.spec(), points(3))
        assert run_campaign(st, be, workers=1).done == 3
        assert (st.table().attempts == 2).all()


@pytest.mark.parametrize(
    "text, pattern",
    [("workdir = 'x'\n", "'command' is missing"), ("command = 'sim'\nshell = true\n", "unknown field"),
     ("command = 'sim'\nmetrics = ['gpu_cycles']\n", "unknown metric"), ("command = [", "cannot be read"),
     ("command = 'sim'\ntimeout = -1\n", "timeout")],
)
def test_backend_file_errors(tmp_path, text, pattern):
    p = tmp_path / "sim.toml"
    p.write_text(text)
    with pytest.raises(BackendError, match=pattern):
        CommandBackend.from_file(p)


def test_resume_after_sigkill(tmp_path):
    """Kill the whole campaign process group mid-run; run again: all points done, none completed twice."""
    marker = tmp_path / "completed.txt"
    cfg = backend_file(tmp_path, sleep=0.15, marker=str(marker))
    samples = tmp_path / "s.csv"
    points(40).to_csv(samples, index=False)
    store = tmp_path / "c.db"
    cmd = [sys.executable, "-m", "gpudse_core", "simulate", str(samples), "--backend", "command", "--config",
           str(cfg), "--workers", "2", "--store", str(store), "-o", str(tmp_path / "r.csv")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    done_before: set[int] = set()
    while time.time() < deadline:
        time.sleep(0.2)
        if store.exists():
            try:
                with sqlite3.connect(store) as db:
                    done_before = {r[0] for r in db.execute("SELECT idx FROM point WHERE status = 'done'")}
            except sqlite3.OperationalError:
                continue
            if len(done_before) >= 8:
                break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(store) as db:
        done_at_kill = {r[0] for r in db.execute("SELECT idx FROM point WHERE status = 'done'")}
        results_at_kill = dict(db.execute("SELECT idx, result FROM point WHERE status = 'done'").fetchall())
    assert 8 <= len(done_at_kill) < 40
    time.sleep(0.5)  # simulators orphaned by the kill may still finish; their results were never committed
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "resumed" in out.stderr
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT idx, status, result FROM point").fetchall()
    assert len(rows) == 40 and all(s == "done" for _, s, _ in rows)
    final = {i: r for i, _, r in rows}
    assert all(final[i] == results_at_kill[i] for i in done_at_kill)  # nothing completed was lost or redone
    runs = [int(x) for x in marker.read_text().split()]
    assert all(runs.count(i) == 1 for i in done_at_kill)  # completed points never ran again
    assert len(pd.read_csv(tmp_path / "r.csv")) == 40


def test_cli_simulate_failures_exit_nonzero(tmp_path, capsys):
    from gpudse_core.cli import main

    samples = tmp_path / "s.csv"
    points(2).to_csv(samples, index=False)
    cfg = backend_file(tmp_path, mode="crash")
    code = main(["simulate", str(samples), "--backend", "command", "--config", str(cfg), "--retries", "0",
                 "--workers", "1", "-o", str(tmp_path / "r.csv")])
    assert code == 1
    assert "2 point(s) failed" in capsys.readouterr().err
    assert main(["simulate", str(samples), "--backend", "command", "-o", str(tmp_path / "r2.csv")]) == 2


def test_bad_worker_count(tmp_path):
    with CampaignStore(tmp_path / "c.db") as st:
        st.open({}, points(1))
        with pytest.raises(GpudseError, match="at least 1"):
            run_campaign(st, AnalyticalBackend(), workers=-1)
