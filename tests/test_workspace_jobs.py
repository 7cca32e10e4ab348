"""Long work in a workspace: jobs with progress, Stop that keeps partial results, re-attaching
after a reload, jobs in another process (stopped from here, interrupted when killed), validation and
scan jobs, and campaigns run by ``gpudse simulate --workspace`` that the workspace sees and adopts.

No timing assertions: work units are gated by the test, and waits poll with a generous deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest
from conftest import ROOT
from test_campaign import backend_file
from test_workspace import make_pipeline

from gpudse_core import limits, load_preset, sample
from gpudse_core.explore.results import ScanResult
from gpudse_core.workspace import ReadOnly, Stopped, create_workspace, open_workspace, start_scan, start_validation
from gpudse_core.workspace import jobs as jobs_mod

# an exception escaping a job's thread is a bug, not a warning
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def until(cond, timeout=60.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def gated(ws, n, ran, **kw):
    """A started job of *n* gated units of which *ran* have run."""
    work = Gated(n)
    job = ws.start_job(kw.pop("kind", "demo"), work, stage=kw.pop("stage", "demo"), inputs=[])
    work.release(ran)
    until(lambda: len(work.done) == ran, what=f"{ran} units")
    return work, job


class Gated:
    """Work of *n* units, each waiting for the test to release it; keeps what it did when stopped."""

    def __init__(self, n):
        self.n = n
        self.permits = threading.Semaphore(0)
        self.done = []

    def __call__(self, ctx):
        for i in range(self.n):
            ctx.check(partial={"units": list(self.done)})  # between units
            self.permits.acquire()
            if ctx.stopped():
                raise Stopped(partial={"units": list(self.done)})
            self.done.append(i)
            ctx.progress(i + 1, self.n, f"unit {i + 1}")
        return {"units": list(self.done)}

    def release(self, k=1):
        for _ in range(k):
            self.permits.release()


def test_job_is_visible_at_once_reports_progress_and_stores_its_result(home):
    ws, key = create_workspace()
    work = Gated(4)
    job = ws.start_job("demo", work, stage="demo", inputs=[])
    info = ws.job(job.id)  # before any unit ran: already recorded as running
    assert (info.state, info.message, info.done) == ("running", "starting", 0)
    work.release(2)
    other = open_workspace(ws.id, key)  # what another page or browser sees, through the database
    until(lambda: other.job(job.id).done == 2, what="progress written by the monitor")
    assert other.job(job.id).message == "unit 2" and other.job(job.id).fraction == 0.5
    work.release(2)
    assert job.wait(60)
    info = other.job(job.id)
    assert (info.state, info.done, info.partial, info.result_version) == ("finished", 4, False, 1)
    sv = other.get("demo")
    assert sv.value == {"units": [0, 1, 2, 3]} and sv.ok and not sv.partial


def test_stop_keeps_what_was_done_labelled_partial(home):
    ws, _ = create_workspace()
    work, job = gated(ws, 1000, 5)
    ws.stop_job(job.id)
    work.release(10)  # permits are there, but the work must not start another unit
    assert job.wait(60)
    info = ws.job(job.id)
    assert info.state == "stopped" and info.partial and info.stop_requested
    sv = ws.get("demo")
    assert sv.value == {"units": [0, 1, 2, 3, 4]} and sv.partial and sv.note.startswith("stopped after 5 of 1,000")
    assert ws.status("demo").partial and ws.status("demo").ok


def test_a_reloaded_page_reattaches_and_stops_the_job(home):
    ws, key = create_workspace()
    work, job = gated(ws, 50, 3, kind="validation", stage="v")
    reload = open_workspace(ws.id, key)  # F5: a new handle, same id
    running = reload.jobs(active=True)
    assert [j.id for j in running] == [job.id] and running[0].kind == "validation"
    with pytest.raises(ReadOnly):
        open_workspace(ws.id).stop_job(job.id)  # a viewer with the link cannot stop the owner's work
    reload.stop_job(job.id)
    work.release(50)
    assert job.wait(60) and reload.job(job.id).state == "stopped"
    assert reload.get("v").value == {"units": [0, 1, 2]}


def test_failures_read_only_and_the_running_limit(home):
    ws, key = create_workspace()

    def boom(ctx):
        raise ValueError("not a user error")

    job = ws.start_job("bad", boom, stage="bad", inputs=[])
    assert job.wait(60)
    info = ws.job(job.id)
    assert info.state == "failed" and "internal error: ValueError" in info.error
    assert ws.get("bad").value is None
    with pytest.raises(ReadOnly):
        open_workspace(ws.id).start_job("x", boom)
    gates = [Gated(1) for _ in range(2)]
    with limits.override(workspace_jobs=2):
        jobs = [ws.start_job("slow", g) for g in gates]
        with pytest.raises(limits.LimitError, match="workspace_jobs"):
            ws.start_job("third", Gated(1))
    for g, j in zip(gates, jobs):
        g.release()
        assert j.wait(60)


def test_deleting_a_workspace_stops_its_job_and_never_recreates_the_file(home):
    ws, key = create_workspace()
    work, job = gated(ws, 100, 2)
    open_workspace(ws.id, key).delete()
    until(lambda: job.ctx.stopped(), what="the monitor to notice")
    work.release(100)
    assert job.wait(60) and not ws.path.exists() and list(ws.path.parent.iterdir()) == []


def test_a_result_whose_inputs_changed_meanwhile_comes_out_stale(home):
    space = load_preset("stargazer")
    ws, _ = create_workspace()
    ws.set_space(space, "stargazer")
    work = Gated(2)
    best = pd.DataFrame({"blk": [64], "predicted": [1.0]})  # the scan stage holds a ScanResult

    def scan(ctx):
        work(ctx)
        return ScanResult(best=best)

    job = ws.start_job("scan", scan, stage="scan", inputs=["space"])
    work.release()
    ws.set_space(load_preset("zatel"), "switched while it ran")
    work.release()
    assert job.wait(60)
    assert ws.status("scan").reason == "the design space changed after the best designs were found"


CHILD = """
import sys, time
from gpudse_core.workspace import open_workspace
from gpudse_core.workspace.jobs import begin_job, end_job
ws = open_workspace(sys.argv[1], sys.argv[2])
ctx = begin_job(ws, "campaign")
print(ctx.id, flush=True)
i = 0
while not ctx.stopped():
    i += 1
    ctx.progress(i, None, f"unit {i}")
    time.sleep(0.01)
end_job(ws, ctx, "stopped")
print("stopped", flush=True)
"""


def test_jobs_in_another_process_stop_from_here_or_read_interrupted_when_killed(home, monkeypatch):
    ws, key = create_workspace()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-c", CHILD, ws.id, key], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         text=True)
    job_id = p.stdout.readline().strip()
    until(lambda: ws.job(job_id).done > 0, what="the child's progress")
    assert ws.job(job_id).pid == p.pid
    ws.stop_job(job_id)  # not in this process: the child's monitor reads the flag
    assert p.stdout.readline().strip() == "stopped" and p.wait(60) == 0
    assert ws.job(job_id).state == "stopped"

    p = subprocess.Popen([sys.executable, "-c", CHILD, ws.id, key], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         text=True)
    job_id = p.stdout.readline().strip()
    until(lambda: ws.job(job_id).done > 0)
    p.send_signal(signal.SIGKILL)
    p.wait(60)
    monkeypatch.setattr(jobs_mod, "LOST_AFTER_S", 1.0)
    until(lambda: ws.job(job_id).state == "interrupted", what="the heartbeat to go stale")
    assert ws.jobs(active=True) == []


@pytest.fixture(scope="module")
def pipeline():
    return make_pipeline()


def _fill(p):
    ws, key = create_workspace()
    ws.set_space(p["space"], "stargazer")
    ws.set_samples(p["samples"], "uniform")
    ws.set_results(p["results"], "cycles", "sim", inputs=("space", "samples"))
    ws.set_model(p["model"], "fit")
    return ws, key


def test_validation_job_stores_a_current_analysis(home, pipeline):
    ws, _ = _fill(pipeline)
    job = start_validation(ws, train_sizes=[40, 80], test_size=60, repeats=2, models=["stepwise", "fixed"])
    assert job.wait(300)
    info = ws.job(job.id)
    assert info.state == "finished" and info.done == info.total == 8  # 2 sizes x 2 repeats x 2 models
    sv = ws.get("validation")
    assert sv.ok and set(sv.inputs) == {"results", "model"} and sv.value.train_sizes == [40, 80]
    assert sv.value.transform == "log" and set(sv.value.summary().model) == {"stepwise", "fixed"}
    ws.set_model(pipeline["model"], "the same model again")
    assert ws.status("validation").ok  # identical content: still current
    ws.set_results(pipeline["results"].head(120), "cycles", "fewer rows")
    assert ws.status("validation").state == "stale"
    with pytest.raises(Exception, match="Refit on the new results"):
        start_validation(ws, train_sizes=[40], test_size=40)


def test_a_stopped_scan_keeps_the_designs_predicted_so_far(home, pipeline):
    ws, _ = _fill(pipeline)
    gate = threading.Event()
    calls = []

    def cost(frame):  # called once per chunk of the space: hold the first chunk until Stop was pressed
        calls.append(len(frame))
        gate.wait(60)
        return frame["blk"].to_numpy(dtype=float)

    job = start_scan(ws, cost=cost, k=5)
    until(lambda: calls, what="the first chunk")
    ws.stop_job(job.id)
    gate.set()
    assert job.wait(300)
    sv = ws.get("scan")
    assert ws.job(job.id).state == "stopped" and sv.partial
    assert sv.value.evaluated == calls[0] < pipeline["space"].size and len(calls) == 1
    assert len(sv.value.best) == 5 and set(sv.inputs) == {"model", "space"}


@pytest.mark.slow
def test_cli_simulate_with_workspace_records_a_campaign_the_workspace_sees_and_adopts(home, tmp_path, pipeline):
    space, samples = pipeline["space"], pipeline["samples"]
    ws, _ = create_workspace()
    ws.set_space(space, "stargazer")
    ws.set_samples(samples, "uniform")
    csv = tmp_path / "samples.csv"
    samples.save(csv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "simulate", str(csv), "--workspace", ws.id,
                        "--campaign", "bfs-run", "--kernel", "BFS", "--workers", "1", "-o", str(tmp_path / "r.csv")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (c,) = ws.campaigns()
    assert (c.name, c.progress.done, c.progress.total, c.running) == ("bfs-run", 200, 200, False)
    assert c.job.state == "finished" and c.spec["kernel"] == "BFS"
    sv = ws.adopt_campaign("bfs-run")
    assert sv.ok and not sv.partial and sv.value.response == "cycles" and len(sv.value.table) == 200
    assert set(sv.inputs) == {"space", "samples"}  # the campaign ran exactly the workspace's samples
    assert sv.origin == "campaign bfs-run (analytical)"
    ws.set_samples(sample(space, 50, seed=9), "resampled")
    assert ws.status("results").reason == "the samples changed after these results were recorded"
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "simulate", str(csv), "--workspace", ws.id,
                        "--store", "x.db", "-o", str(tmp_path / "r2.csv")], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "not both" in r.stderr


@pytest.mark.slow
def test_the_dashboard_stops_a_cli_campaign_and_adopts_the_partial_results(home, tmp_path, pipeline):
    space, samples = pipeline["space"], pipeline["samples"]
    ws, _ = create_workspace()
    ws.set_space(space, "stargazer")
    pts = samples.table().head(40)
    csv = tmp_path / "p.csv"
    pts.to_csv(csv, index=False)
    toml = backend_file(tmp_path, sleep=0.2)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "gpudse_core", "simulate", str(csv), "--backend", "command",
                          "--config", str(toml), "--workspace", ws.id, "--campaign", "slow", "--workers", "1",
                          "-o", str(tmp_path / "r.csv")], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    c = until(lambda: next((c for c in ws.campaigns() if c.progress.done >= 2 and c.running), None),
              what="the campaign's first points")
    ws.stop_job(c.job.id)
    _, err = p.communicate(timeout=300)
    # a run that did not write every row exits non-zero, also after a Stop, and says so
    assert p.returncode == 1 and "stopped on request" in err, err
    (c,) = ws.campaigns()
    assert c.job.state == "stopped" and 0 < c.progress.done < 40 and c.progress.remaining > 0
    sv = ws.adopt_campaign("slow", response="gpu_tot_sim_cycle")
    assert sv.partial and sv.note.startswith(f"{c.progress.done:,} of 40 points done")
    assert set(sv.inputs) == {"space"}  # not the workspace's samples (it has none): like an upload
    shown = json.loads(subprocess.run([sys.executable, "-m", "gpudse_core", "workspace", "show", ws.id, "--json"],
                                      cwd=ROOT, env=env, capture_output=True, text=True, timeout=120).stdout)
    assert shown["stages"]["results"]["partial"] and shown["campaigns"][0]["name"] == "slow"


def test_a_dashboard_campaign_adopts_its_results_when_it_ends(home, pipeline):
    """start_campaign(adopt=True): the results stage is the campaign's as soon as it ends, computed
    from the samples it ran, and the model fitted on the old results turns stale at once; a campaign
    stopped at once adopts what it finished (partial), or nothing when it finished no point."""
    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace import start_campaign

    ws, _ = _fill(pipeline)
    assert ws.status("model").ok
    job = start_campaign(ws, AnalyticalBackend("BFS", seed=3), name="bfs", workers=1, adopt=True)
    assert job.wait(300)
    assert ws.job(job.id).state == "finished"
    sv = ws.get("results")
    assert sv.ok and not sv.partial and sv.origin == "campaign bfs (analytical)"
    assert set(sv.inputs) == {"space", "samples"} and len(sv.value.table) == len(pipeline["samples"])
    assert ws.status("model").reason == "the results changed after this model was fitted"
    ws.set_samples(sample(pipeline["space"], 30, seed=4), "thirty")
    job = start_campaign(ws, AnalyticalBackend("BFS", seed=3), name="none", workers=1, adopt=True)
    job.stop()
    assert job.wait(300)
    c = next(c for c in ws.campaigns() if c.name == "none")
    now = ws.get("results")
    if c.progress.done == 0:  # stopped before its first batch: nothing to adopt
        assert now.version == sv.version
    else:  # what it finished, labelled partial while points remain
        assert now.origin == "campaign none (analytical)" and now.partial == (c.progress.remaining > 0)
        assert len(now.value.table) == c.progress.done
