"""Simulation campaigns: the SQLite store, the analytical and command backends, retries, timeouts,
garbage output, and resuming after SIGKILL with nothing lost and nothing completed run twice."""

from __future__ import annotations

import json
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
from gpudse_core.sim.gpgpusim import parse_log
from gpudse_core.sim.simulator import simulate
from gpudse_core.sim.store import CampaignStore, StoreError

from conftest import ROOT

FAKE = Path(__file__).parent / "fake_sim.py"


def points(n=40, seed=1):
    return sample(load_preset("stargazer"), n, seed=seed).points


def backend_file(tmp_path, mode="ok", timeout=30, sleep=0.0, marker="", metrics=("gpu_tot_sim_cycle",), started="",
                 flood_mb=0, extra_args=(), command=None):
    (tmp_path / "template.config").write_text("# fake GPGPU-Sim config\n-gpgpu_n_clusters 8\n"
                                              "-gpgpu_shader_cta 8 # blocks per core\n")
    cmd = command or [sys.executable, str(FAKE), "--mode", mode, "--sleep", str(sleep), "--config", "{config}"]
    if marker:
        cmd += ["--marker", marker]
    if started:
        cmd += ["--started", started]
    if flood_mb:
        cmd += ["--flood-mb", str(flood_mb)]
    cmd += list(extra_args)
    toml = tmp_path / "sim.toml"
    toml.write_text(
        f"command = {json.dumps(cmd)}\n"  # JSON strings are TOML strings
        f'workdir = "runs"\ntimeout = {timeout}\nmetrics = {json.dumps(list(metrics))}\n'
        'config_template = "template.config"\n[options]\nblk = "-gpgpu_shader_cta"\n')
    return toml


def cli(tmp_path, samples, store, out="r.csv", *extra, cfg=None, workers=2):
    """The gpudse simulate command line of these tests (run in a subprocess)."""
    return [sys.executable, "-m", "gpudse_core", "simulate", str(samples), "--backend", "command", "--config",
            str(cfg or tmp_path / "sim.toml"), "--workers", str(workers), "--store", str(store), "-o",
            str(tmp_path / out), *extra]


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
    [("workdir = 'x'\n", "'command' is missing"), ("command = ['sim']\nshell = true\n", "unknown field"),
     ("command = ['sim']\nmetrics = ['gpu_cycles']\n", "unknown metric"), ("command = [", "not valid TOML"),
     ("command = ['sim']\ntimeout = -1\n", "timeout"),
     ("command = 'sim --config {config}'\n", "must be a list of arguments"),
     ("command = ['sim']\nenv = 'CUDA=/usr/local/cuda'\n", "env: must be a table"),
     ("command = ['sim']\n[env]\nA = ['x']\n", "env.A: .* is not a string"),
     ("command = ['sim']\ntimeout = nan\n", "finite positive"),
     ("command = ['sim']\ntimeout = inf\n", "finite positive"),
     ("command = ['sim']\ntimeout = 1e300\n", "timeout_max_s"),
     ("command = ['sim']\ntimeout = true\n", "not a number"),
     ("command = ['sim']\ntimeout = 0\n", "finite positive"),
     ("command = []\n", "'command' is empty|non-empty list"),
     ("command = ['sim', {a = 1}]\n", "command\\[1\\]"),
     ("command = ['sim']\nmetrics = 'gpu_tot_sim_cycle'\n", "must be a list of metric names"),
     ("command = ['sim']\nlog_name = '../../etc/passwd'\n", "plain file name"),
     ("command = ['sim']\nconfig_template = 'missing.config'\n", "does not exist"),
     ("command = ['sim']\n[options]\nblk = '-a b'\n", "simulator option name"),
     ("command = ['sim']\n[extra_metrics]\nrays = '(a+)+\\1(\\d)'\n", "RE2 syntax"),
     ("command = ['sim']\n[extra_metrics]\nrays = '(?=x)(\\d+)'\n", "RE2 syntax"),
     ("command = ['sim']\n[extra_metrics]\nrays = 'rays'\n", "has 0 groups; give exactly one \\(group\\)"),
     ("command = ['sim']\n[extra_metrics]\nrays = '(a+)b(\\d+)'\n", "has 2 groups; give exactly one"),
     ("command = [1, 2]\n", "command\\[0\\]: 1 is not a string"),
     ("command = ['sim']\nworkdir = 5\n", "workdir: 5 is not a string"),
     ("command = ['sim']\n[options]\nblk = 5\n", "options.blk: 5 is not a string"),
     ("command = ['sim']\n[extra_metrics]\nconfig = '(\\d+)'\n", "not a new metric name"),
     ("command = ['sim']\n[extra_metrics]\nrays = '" + "(a)" * 400 + "'\n", "regex_length")],
)
def test_backend_file_errors(tmp_path, text, pattern):
    p = tmp_path / "sim.toml"
    p.write_text(text)
    with pytest.raises(BackendError, match=pattern):
        CommandBackend.from_file(p)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The results file of the 40-point campaign run without interruption (the reference)."""
    d = tmp_path_factory.mktemp("clean")
    backend_file(d)
    samples = d / "s.csv"
    points(40).to_csv(samples, index=False)
    out = subprocess.run(cli(d, samples, d / "c.db"), cwd=d, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return (d / "r.csv").read_bytes()


def _done(store: Path) -> dict[int, str]:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            return dict(db.execute("SELECT idx, result FROM point WHERE status = 'done'").fetchall())
    except sqlite3.Error:
        return {}


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["first run started", "8 done", "32 done"])
def test_resume_after_sigkill(tmp_path, moment, uninterrupted):
    """Kill the whole campaign process group at three moments; run again: every point done, none that was
    completed run twice, the results file bit-identical to an uninterrupted run's."""
    marker, started = tmp_path / "completed.txt", tmp_path / "started.txt"
    backend_file(tmp_path, sleep=0.15, marker=str(marker), started=str(started))
    samples = tmp_path / "s.csv"
    points(40).to_csv(samples, index=False)
    store = tmp_path / "c.db"
    cmd = cli(tmp_path, samples, store)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    need = {"first run started": 0, "8 done": 8, "32 done": 32}[moment]
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.05)
        if store.exists() and started.exists() and len(_done(store)) >= need:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    results_at_kill = _done(store)
    assert need <= len(results_at_kill) < 40
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "resumed" in out.stderr
    assert "took the campaign over from pid" in out.stderr and "has exited" in out.stderr  # the dead holder's lease
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT idx, status, result FROM point").fetchall()
        attempts = {(i, a): o for i, a, o in db.execute("SELECT idx, attempt, outcome FROM attempt")}
    assert len(rows) == 40 and all(s == "done" for _, s, _ in rows)
    final = {i: r for i, _, r in rows}
    assert all(final[i] == r for i, r in results_at_kill.items())  # nothing completed was lost or redone
    runs = [int(x) for x in marker.read_text().split()]
    assert all(runs.count(i) == 1 for i in results_at_kill)  # completed points never ran again
    assert (tmp_path / "r.csv").read_bytes() == uninterrupted
    assert_every_execution_recorded(started, attempts)
    assert sum(o == "done" for o in attempts.values()) == 40
    assert any(o == "interrupted" for o in attempts.values())  # the runs the kill cut short


def assert_every_execution_recorded(started: Path, attempts: dict) -> None:
    """Each simulator execution (a line in *started*) is an attempt in the store, in its own run directory."""
    dirs = []
    for line in started.read_text().splitlines():
        idx, run_dir, _pid = line.split()
        attempt = int(run_dir.rsplit("-try", 1)[1].split(".")[0])
        assert (int(idx), attempt) in attempts, f"point {idx} attempt {attempt} ran ({run_dir}) but is not recorded"
        dirs.append(run_dir)
    assert len(dirs) == len(set(dirs)), "two executions shared a run directory"


def test_cli_simulate_failures_exit_nonzero(tmp_path, capsys):
    from gpudse_core.cli import main

    samples = tmp_path / "s.csv"
    points(2).to_csv(samples, index=False)
    cfg = backend_file(tmp_path, mode="crash")
    code = main(["simulate", str(samples), "--backend", "command", "--config", str(cfg), "--retries", "0",
                 "--workers", "1", "-o", str(tmp_path / "r.csv")])
    assert code == 1
    assert "2 of 2 point(s) have no result: 2 failed after 1 attempt(s)" in capsys.readouterr().err
    assert main(["simulate", str(samples), "--backend", "command", "-o", str(tmp_path / "r2.csv")]) == 2


def test_bad_worker_count(tmp_path):
    with CampaignStore(tmp_path / "c.db") as st:
        st.open({}, points(1))
        with pytest.raises(GpudseError, match="at least 1"):
            run_campaign(st, AnalyticalBackend(), workers=-1)


# ---- placeholders, run directories, attempts ----------------------------------------------------
ECHO = [sys.executable, "-c", "import sys; print('ARGS', sys.argv[1:]); print('gpu_tot_sim_cycle = 5'); "
        "print('kernel_name = k'); print('gpu_tot_sim_cycle = 5')"]


def test_substitution_is_a_single_pass_and_placeholders_cannot_be_hijacked(tmp_path):
    from gpudse_core.sim.command import substitute

    subs = {"config": "/r/gpgpusim.config", "run_dir": "/r", "name": "{run_dir}/../../etc", "point": "3"}
    assert substitute("--{name}", subs) == "--{run_dir}/../../etc"  # a value is never substituted again
    assert substitute("{config}:{point}{{x}}", subs) == "/r/gpgpusim.config:3{{x}}"
    be = CommandBackend.from_file(backend_file(tmp_path, command=[*ECHO, "{name}", "{run_dir}", "{attempt}"],
                                               metrics=("gpu_tot_sim_cycle",)))
    out = be.run_one(0, {"name": "{run_dir}", "blk": 8}, 1)
    assert out.ok, out.error
    log = (Path(out.attempts[-1].run_dir) / "run.log").read_text()
    assert f"ARGS ['{{run_dir}}', '{out.attempts[-1].run_dir}', '1']" in log


@pytest.mark.parametrize("column", ["config", "run_dir", "attempt", "status"])
def test_reserved_parameter_names_are_refused_before_anything_runs(tmp_path, column):
    from gpudse_core.cli import main

    samples = tmp_path / "s.csv"
    points(2).rename(columns={"simd": column}).to_csv(samples, index=False)
    cfg = backend_file(tmp_path)
    assert main(["simulate", str(samples), "--backend", "command", "--config", str(cfg), "--store",
                 str(tmp_path / "c.db"), "-o", str(tmp_path / "r.csv")]) == 2
    assert not (tmp_path / "c.db").exists() and not (tmp_path / "runs").exists()
    with pytest.raises(GpudseError, match=f"named {column}, which gpudse reserves"):
        with CampaignStore(tmp_path / "c2.db") as st:
            st.open({}, points(2).rename(columns={"simd": column}))


def test_unknown_placeholders_and_unmapped_options_are_refused(tmp_path):
    be = CommandBackend.from_file(backend_file(tmp_path, command=[*ECHO, "{blk}", "{typo}"]))
    with pytest.raises(BackendError, match=r"\{typo\}, which is neither a placeholder"):
        be.check_points(["blk", "simd"])
    be = CommandBackend.from_file(backend_file(tmp_path))  # options map blk
    with pytest.raises(BackendError, match="options set blk, which the design points do not have"):
        be.check_points(["simd"])
    be.check_points(["blk", "simd"])


def test_each_attempt_has_its_own_directory_and_record(tmp_path):
    """Retries get new directories; a directory left by another campaign in the same workdir is never
    reused; every attempt is in the store with its worker and directory."""
    be = CommandBackend.from_file(backend_file(tmp_path, mode="flaky"))
    stale = tmp_path / "runs" / "point-000000-try1"
    stale.mkdir(parents=True)
    (stale / "run.log").write_text("an older campaign's log\n")
    with CampaignStore(tmp_path / "c.db", max_attempts=3) as st:
        st.open(be.spec(), points(2))
        assert run_campaign(st, be, workers=1).done == 2
        att = st.attempts()
    assert att.groupby("idx").attempt.apply(list).tolist() == [[1, 2], [1, 2]]
    assert att.outcome.tolist() == ["failed", "done", "failed", "done"]
    assert all(att.worker.str.contains(":")) and att.run_dir.is_unique
    assert att.run_dir.iloc[0].endswith("point-000000-try1.2")  # the stale directory was skipped
    assert (stale / "run.log").read_text() == "an older campaign's log\n"
    assert (att.started <= att.finished).all() and (att.claimed <= att.started + 1).all()


def test_a_lost_execution_found_by_its_rerun_is_recorded(tmp_path):
    from gpudse_core.sim.command import allocate_run_dir

    d1, a1, lost = allocate_run_dir(tmp_path, 5, 1, "camp-A", "dask w0", 100.0)
    assert (a1, lost) == (1, []) and d1.name == "point-000005-try1"
    # the scheduler reran the same task (attempt 1) elsewhere after w0 died
    d2, a2, lost = allocate_run_dir(tmp_path, 5, 1, "camp-A", "dask w1", 200.0)
    assert a2 == 2 and d2.name == "point-000005-try2"
    assert [(x.attempt, x.outcome, x.worker, x.run_dir, x.started) for x in lost] == \
        [(1, "lost", "dask w0", str(d1), 100.0)]
    d3, a3, lost = allocate_run_dir(tmp_path, 5, 1, "camp-B", "w", 300.0)  # another campaign: skipped
    assert (d3.name, a3, lost) == ("point-000005-try1.2", 1, [])


def test_stop_hands_back_points_not_started(tmp_path):
    with CampaignStore(tmp_path / "c.db") as st:
        st.open({}, points(200))
        calls = []
        final = run_campaign(st, AnalyticalBackend(batch_size=10), workers=1,
                             progress=lambda p, r: calls.append(p.done), should_stop=lambda: bool(calls))
        assert 0 < final.done < 200 and final.running == 0 and final.pending == 200 - final.done
        att = st.attempts()
        assert (att.outcome == "done").sum() == final.done and (att.outcome != "running").all()


def test_the_example_description_reads_and_fits_the_stargazer_space(tmp_path):
    be = CommandBackend.from_file(ROOT / "docs" / "examples" / "gpgpusim.toml")
    be.check_points(points(1).columns)
    assert be.command[-1] == "{config}" and be.timeout == 14400 and be.env == {"CUDA_INSTALL_PATH": "/usr/local/cuda"}
    assert parse_log("x", text="total_rays = 12\n", extra=be.extra).extra == {"rays": 12.0}


@pytest.mark.slow
def test_ctrl_c_writes_what_is_done(tmp_path):
    """Ctrl-C (SIGINT to the process group) mid-campaign: exit 130, the output file holds every finished
    point, and the same command resumes to the full table."""
    backend_file(tmp_path, sleep=0.2)
    samples = tmp_path / "s.csv"
    points(24).to_csv(samples, index=False)
    store = tmp_path / "c.db"
    cmd = cli(tmp_path, samples, store)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(_done(store)) < 4:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    written = pd.read_csv(tmp_path / "r.csv")
    assert 4 <= len(written) < 24
    assert len(written) == len(_done(store))  # every finished run, nothing more
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert len(pd.read_csv(tmp_path / "r.csv")) == 24
