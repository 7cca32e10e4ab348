"""Stop on a running search (gpudse_core.search.runner.start_search): the simulations in flight of a
backend whose runs are separate processes (MGPUSim, a command) are killed and reported as not counted,
or left to finish when asked; a Stop during the models' fits ends the search between their parts.
No timing assertions: a simulation here sleeps far longer than the test waits for the job, so a Stop
that did not kill it would leave its point counted (or the job running), which the assertions catch."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from gpudse_core.search.pool import make_pool
from gpudse_core.search.runner import start_search
from gpudse_core.search.study import NOT_RUN, run_search
from gpudse_core.sim.campaign import AnalyticalBackend
from gpudse_core.space.presets import load_space


@dataclass
class SleepingBackend(AnalyticalBackend):
    """The built-in simulator, each run taking *pause* seconds first (a slow external simulator)."""

    pause: float = 60.0
    batch_size: int = 1
    name: str = "sleeping"

    def check_points(self, columns) -> None:  # what start_search asks of a backend other than the built-in one
        assert "simd" in list(columns)

    def run_batch(self, batch, ctx=None):
        time.sleep(self.pause)
        return super().run_batch(batch, ctx)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    from gpudse_core.workspace import create_workspace

    ws, _ = create_workspace("stop")
    ws.put("space", load_space("stargazer"))
    return ws


def _simulating(ws, job, deadline_s: float = 60.0) -> None:
    """Wait until a simulation of the first round is running (its campaign in the workspace's store)."""
    from gpudse_core.sim.store import StoreError, progress_of

    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            prog = progress_of(ws.path, f"{ws.id}/search-00000")
        except StoreError:  # the store's tables are not made yet
            prog = None
        if prog is not None and prog.running > 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"no simulation of the search ever ran: {job.info().message!r}")


def test_stop_kills_the_simulations_in_flight_and_does_not_count_them(workspace):
    job = start_search(workspace, "BFS", budget=12, batch=4, initial=4, backend=SleepingBackend("BFS", pause=120))
    _simulating(workspace, job)
    job.stop()
    assert job.wait(100), "Stop did not end the search before its sleeping simulations would have finished"
    info = job.info()
    assert info.state == "stopped"
    assert "4 simulations in flight or waiting were stopped and not counted" in info.message
    study = workspace.get("search")
    assert study.partial and len(study.value.trials) == 0  # none of the killed runs became a trial


def test_stop_can_let_the_simulations_in_flight_finish(workspace, monkeypatch):
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # two processes: 12 designs of 3 s take 18 s in all
    job = start_search(workspace, "BFS", budget=16, batch=4, initial=12, on_stop="finish",
                       backend=SleepingBackend("BFS", pause=3))
    _simulating(workspace, job)
    job.stop()
    assert job.wait(120)
    info = job.info()
    trials = workspace.get("search").value.trials
    assert info.state == "stopped" and 1 <= len(trials) < 12  # the runs in flight finished and count; no new ones
    assert all(t.status == "ok" for t in trials)
    waiting = 12 - len(trials)
    assert f"{waiting} simulation{'s' if waiting > 1 else ''} in flight or waiting" in info.message


def test_a_round_stopped_midway_records_only_the_designs_it_finished():
    """The loop's side: NOT_RUN outcomes are not trials; the finished ones of that round are."""
    space = load_space("stargazer")
    backend = AnalyticalBackend("BFS")
    rounds = []

    def evaluate(digits, designs):
        rounds.append(len(designs))
        outs = [(o.result["cycles"], "") for o in backend.run_batch([(i, d, 1) for i, d in enumerate(designs)])]
        return outs if len(rounds) < 3 else [outs[0]] + [NOT_RUN] * (len(outs) - 1)

    res = run_search(make_pool(space), evaluate, goal="min", budget=40, batch=4, initial=8, seed=1,
                     response="cycles", surrogate="forest")
    assert res.stopped == "stopped" and rounds[:2] == [8, 4]
    assert len(res.trials) == 8 + 4 + 1 and len(res.not_counted) == 3
    simulated = {tuple(t.design.values()) for t in res.trials}
    assert not simulated & {tuple(d.values()) for d in res.not_counted}


def test_a_stop_during_the_models_fits_ends_the_search_before_it_simulates_again():
    space = load_space("stargazer")
    backend = AnalyticalBackend("BFS")
    asked = []

    def evaluate(digits, designs):
        asked.append(len(designs))
        return [(o.result["cycles"], "") for o in backend.run_batch([(i, d, 1) for i, d in enumerate(designs)])]

    # the stop arrives while the second batch is being proposed (after the first round's check)
    calls = iter([False, False, False] + [True] * 1000)
    res = run_search(make_pool(space), evaluate, goal="min", budget=40, batch=4, initial=8, seed=1,
                     response="cycles", should_stop=lambda: next(calls))
    assert res.stopped == "stopped" and asked == [8] and len(res.trials) == 8
