"""Copies killed half-way, with real SIGKILLs of a subprocess paused at a chosen point
(``GPUDSE_TEST_PAUSE_AT``): a fork's temporary file is recognisable (whose, which process), counts
against its client's hourly budget and the server's workspace count while it exists, and goes at the
next open or listing once its process is dead; a template build killed half-way is never listed and
goes at the next listing (gpudse_core.workspace.pending)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT

from gpudse_core import limits
from gpudse_core.space.presets import load_preset
from gpudse_core.space.sampling import sample
from gpudse_core.workspace import create_workspace, list_workspaces, open_workspace, pending, visitors

CLIENT, OTHER = "ip:203.0.113.9", "ip:198.51.100.1"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    pending._swept.clear()
    return tmp_path


def paused(code: str, where: str, marker) -> subprocess.Popen:
    """``python -c code`` stopped at pause point *where* (it has created *marker*)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUDSE_TEST_PAUSE_AT": where,
           "GPUDSE_TEST_PAUSE_WRITE": str(marker), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"ended before the pause point: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"never reached the pause point {where}")
        time.sleep(0.05)
    return proc


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    proc.stdout.close()
    proc.stderr.close()


def kill_a_fork_mid_copy(ws_id: str, home, n: int) -> int:
    proc = paused(f"from gpudse_core.workspace import open_workspace\n"
                  f"open_workspace({ws_id!r}, trusted=True).fork('mine', client={CLIENT!r})", "fork-copy",
                  home / f"paused{n}")
    pid = proc.pid
    kill(proc)
    return pid


def source_workspace() -> str:
    ws, _ = create_workspace("source")
    with ws:
        space = load_preset("stargazer")
        ws.set_space(space, "preset")
        ws.set_samples(sample(space, n=2000, seed=1), "2,000 points")  # a copy of many pages: killed mid-way
    return ws.id


def test_a_fork_killed_mid_copy_counts_against_its_client_until_the_next_listing(home):
    src = source_workspace()
    pid = kill_a_fork_mid_copy(src, home, 1)
    (left,) = (home / "workspaces").glob("*.tmp")
    assert f".fork.{pending.HOST}.{pid}.{pending.client_tag(CLIENT)}.tmp" in left.name  # whose, which process
    assert (home / "workspaces" / f"{left.name}-journal").exists()  # its copy transaction was open: mid-copy
    with limits.override(visitor_workspaces_per_hour=1):
        with pytest.raises(limits.LimitError, match="visitor_workspaces_per_hour"):
            visitors.admit(CLIENT)  # the half copy is this client's workspace of the hour
        visitors.admit(OTHER)  # and nobody else's
    with limits.override(workspaces=2), pytest.raises(limits.LimitError, match="workspaces"):
        create_workspace("a third")  # the source, the half copy: the server's count includes it
    assert [i.id for i in list_workspaces(trusted=True)] == [src]
    assert not list((home / "workspaces").glob("*.tmp*")), "the listing did not remove the dead copy"
    with limits.override(visitor_workspaces_per_hour=1):
        visitors.admit(CLIENT)


def test_a_fork_killed_mid_copy_goes_at_the_next_open(home):
    src = source_workspace()
    kill_a_fork_mid_copy(src, home, 2)
    assert len(list((home / "workspaces").glob("*.fork.*.tmp"))) == 1
    with open_workspace(src) as ws:
        assert len(ws.get("samples").value) == 2000
    assert not list((home / "workspaces").glob("*.fork.*"))


@pytest.mark.slow
def test_a_template_build_killed_half_way_is_never_listed_and_goes_at_the_next_listing(home):
    mine, _ = create_workspace("someone's work")
    mine.close()
    proc = paused("from dashboard import state\nstate.example_template()", "template-build", home / "paused")
    try:
        (marker,) = (home / "templates").iterdir()
        assert marker.read_text().startswith("building")
        assert (home / "workspaces" / f"{marker.name}.db").is_file()  # half a template, its builder still running
        assert [i.id for i in list_workspaces(trusted=True)] == [mine.id]  # never listed while it is built
        assert (home / "workspaces" / f"{marker.name}.db").is_file()  # nor deleted under a live builder
    finally:
        kill(proc)
    assert [i.id for i in list_workspaces(trusted=True)] == [mine.id]
    assert not (home / "workspaces" / f"{marker.name}.db").exists() and not marker.exists()
    assert sorted(p.name for p in (home / "workspaces").glob("*.db")) == [f"{mine.id}.db"]
