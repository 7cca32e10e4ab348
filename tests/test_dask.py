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

import pytest

pytest.importorskip("distributed")
from distributed import Client  # noqa: E402

from gpudse_core import load_preset, sample  # noqa: E402
from gpudse_core.sim.campaign import AnalyticalBackend, CommandBackend, points_spec, run_campaign  # noqa: E402
from gpudse_core.sim.store import CampaignStore  # noqa: E402

from conftest import ROOT  # noqa: E402
from test_campaign import backend_file  # noqa: E402

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
    address, workers = cluster
    be = CommandBackend.from_file(backend_file(tmp_path, sleep=0.2))
    pts = sample(load_preset("stargazer"), 30, seed=4).points
    with CampaignStore(tmp_path / "c.db") as st:
        st.open(be.spec(), pts)
        result = {}
        t = threading.Thread(target=lambda: result.setdefault("final", run_campaign(st, be, scheduler=address)))
        t.start()
        time.sleep(2.0)
        os.killpg(workers[0].pid, signal.SIGKILL)  # its tasks are rescheduled on the other worker
        t.join(timeout=120)
        assert not t.is_alive()
        final = result["final"]
        assert final.done + final.failed == 30 and final.done >= 28
        assert st.progress().done == final.done
