"""Campaigns through a real Dask cluster: a `dask scheduler` and two `dask worker` processes on loopback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

pytest.importorskip("distributed")
from distributed import Client  # noqa: E402

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.sim.campaign import AnalyticalBackend, CommandBackend, points_spec, run_campaign  # noqa: E402
from gpudse_core.sim.store import CampaignStore  # noqa: E402

from conftest import ROOT  # noqa: E402
from test_campaign import assert_every_execution_recorded, backend_file  # noqa: E402
from test_campaign_faults import assert_no_orphans  # noqa: E402

pytestmark = pytest.mark.slow


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + str(Path(__file__).parent)}
    port = _port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = [subprocess.Popen(dask + ["--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], env=env,
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    workers = []
    for i in range(2):
        w = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                              "--nworkers", "1", "--no-dashboard", "--no-nanny", "--memory-limit", "0",
                              "--name", f"w{i}"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        workers.append(w)
        procs.append(w)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with Client(address, timeout=5) as c:
                if len(c.nthreads()) == 2:
                    break
        except OSError:
            pass
        time.sleep(0.5)
    else:
        pytest.fail("the Dask cluster did not come up with two workers within 60 s")
    yield address, workers
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def test_campaign_through_dask_scheduler_and_two_workers(cluster, tmp_path):
    address, _ = cluster
    pts = sample(load_preset("stargazer"), 2000, seed=3).points
    b = AnalyticalBackend("BFS", noise=0.01, seed=2, batch_size=100)
    with CampaignStore(tmp_path / "c.db") as st:
        st.open({**b.spec(), **points_spec(pts)}, pts)
        final = run_campaign(st, b, scheduler=address)
        assert final.done == 2000
        table = st.table()
    with CampaignStore(tmp_path / "local.db") as st:  # the same results as the local runner
        st.open({**b.spec(), **points_spec(pts)}, pts)
        run_campaign(st, b, workers=1)
        assert st.table()["cycles"].equals(table["cycles"])


def test_worker_killed_mid_campaign(cluster, tmp_path):
    """SIGKILL a Dask worker while its simulator runs: the simulator dies with it (no orphan after 5 s), Dask
    reruns the point elsewhere, and the store shows it — attempt 1 lost on that worker, attempt 2 done, each
    in its own run directory; every point done once, every execution recorded."""
    address, workers = cluster
    marker, started = tmp_path / "completed.txt", tmp_path / "started.txt"
    be = CommandBackend.from_file(backend_file(tmp_path, sleep=1.0, marker=str(marker), started=str(started)))
    pts = sample(load_preset("stargazer"), 12, seed=4).points
    victim = psutil.Process(workers[0].pid)

    def victim_simulators():  # those of the first worker that have started (written their line)
        logged = {int(line.split()[2]) for line in started.read_text().splitlines()} if started.exists() else set()
        return [p for p in victim.children(recursive=True) if p.pid in logged]

    with CampaignStore(tmp_path / "c.db") as st:
        st.open(be.spec(), pts)
        result = {}
        t = threading.Thread(target=lambda: result.setdefault("final", run_campaign(st, be, scheduler=address)))
        t.start()
        deadline = time.time() + 120
        while not victim_simulators() and time.time() < deadline:
            time.sleep(0.05)
        sims = victim_simulators()
        assert sims, "the first worker never ran a simulator"
        tree = victim.children(recursive=True)
        os.killpg(workers[0].pid, signal.SIGKILL)  # mid-run: its simulator sleeps 1 s
        assert_no_orphans(tree, None)  # its supervisor and simulator are gone within 5 s
        t.join(timeout=300)
        assert not t.is_alive()
        final = result["final"]
        assert final.done == 12 and final.failed == 0
        att = st.attempts()
    assert sorted(int(x) for x in marker.read_text().split()) == list(range(12))  # each finished once
    assert_every_execution_recorded(started, {(r.idx, r.attempt): r.outcome for r in att.itertuples()})
    killed = {int(line.split()[0]) for line in started.read_text().splitlines()
              if int(line.split()[2]) in {p.pid for p in sims}}
    assert killed
    for idx in killed:
        rows = att[att.idx == idx].sort_values("attempt")
        assert rows.outcome.tolist() == ["lost", "done"] and rows.attempt.tolist() == [1, 2]
        assert "w0" in rows.worker.iloc[0] and "w1" in rows.worker.iloc[1]
        dirs = rows.run_dir.tolist()
        assert dirs[0] != dirs[1] and all(Path(d).is_dir() for d in dirs)
    assert (att.groupby("idx").attempt.max() == att.groupby("idx").size()).all()
