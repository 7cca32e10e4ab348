"""One stored version per search study: a running search rewrites its study in place after each round
(``SearchStudy.grows_from``, ``Workspace.put``), inside one SQLite transaction, so a study is one
version however many rounds it stores, and a process killed mid-write leaves the previous record —
never a torn one, never a version per round ("search v38")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT

from gpudse_core.search import runner
from gpudse_core.search.pool import make_pool
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.runner import search_settings, start_search
from gpudse_core.search.study import run_search
from gpudse_core.space.presets import load_space


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    from gpudse_core.workspace import create_workspace

    ws, _ = create_workspace("search record")
    ws.put("space", load_space("stargazer"))
    return ws


def _bowl(digits, designs):
    """A cheap simulator: a known function of the digits, lowest at digit 1 of every parameter."""
    return [(float(100 + ((np.asarray(row, dtype=float) - 1) ** 2).sum()), "") for row in digits]


def _rounds(space, settings, budget=16):
    """The study after each round of a min search on the bowl (a list of SearchStudy)."""
    seen = []
    run_search(make_pool(space), _bowl, goal="min", budget=budget, initial=8, batch=4, seed=settings["seed"],
               on_round=lambda res: seen.append(SearchStudy.of(settings, res)))
    return seen


def test_a_study_grows_from_its_earlier_rounds_and_not_from_another_study():
    space = load_space("stargazer")
    settings = search_settings(space, "BFS", "min", 16, 3, initial=8, batch=4)
    seen = _rounds(space, settings)
    assert len(seen) >= 3 and [len(s.trials) for s in seen] == sorted(len(s.trials) for s in seen)
    assert seen[-1].grows_from(seen[0]) and seen[1].grows_from(seen[1])
    assert not seen[0].grows_from(seen[-1])  # fewer trials: a search started afresh, a new version
    larger = SearchStudy({**settings, "budget": 40}, seen[-1].trials)  # a resume with a larger budget
    assert larger.grows_from(seen[-1])
    other_seed = SearchStudy({**settings, "seed": 4}, seen[-1].trials)
    assert not other_seed.grows_from(seen[0])
    changed = list(seen[0].trials)
    changed[0] = type(changed[0])(**{**changed[0].to_dict(), "value": changed[0].value + 1})
    assert not seen[-1].grows_from(SearchStudy(settings, tuple(changed)))  # other trials: another study


def test_a_page_search_stores_one_version_rewritten_every_round(workspace, monkeypatch):
    from gpudse_core.workspace import open_workspace

    monkeypatch.setattr(runner, "SAVE_EVERY_S", 0.0)  # store after every round, as a slow simulator would
    job = start_search(workspace, "BFS", "min", budget=16, batch=2, initial=10)
    assert job.wait(300)
    w = open_workspace(workspace.id)
    history = w.history("search")
    assert [(h.version, h.partial) for h in history] == [(1, False)]  # 4 rounds stored, one version, finished
    assert len(w.get("search").value.trials) == 16
    # the same study resumed with a larger budget goes on in the same version
    assert start_search(workspace, "BFS", "min", budget=20, batch=2, initial=10).wait(300)
    w = open_workspace(workspace.id)
    assert [h.version for h in w.history("search")] == [1] and len(w.get("search").value.trials) == 20
    # another seed is another study: a second version, the first one kept as it was
    assert start_search(workspace, "BFS", "min", budget=12, batch=2, initial=10, seed=5).wait(300)
    w = open_workspace(workspace.id)
    assert [h.version for h in w.history("search")] == [1, 2]
    assert len(w.get("search", 1).value.trials) == 20 and len(w.get("search").value.trials) == 12


def test_a_command_line_search_stored_in_a_workspace_is_one_version(workspace, capsys):
    from gpudse_core.cli import main
    from gpudse_core.workspace import open_workspace

    assert main(["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--budget", "14", "--initial", "10",
                 "--batch", "2", "--workers", "1", "--workspace", workspace.id]) == 0
    assert capsys.readouterr().err.count("round ") >= 3  # three rounds or more, each stored
    w = open_workspace(workspace.id)
    assert [(h.version, h.partial) for h in w.history("search")] == [(1, False)]
    assert len(w.get("search").value.trials) == 14


def test_a_process_killed_while_rewriting_the_study_leaves_the_previous_one(workspace, tmp_path):
    from gpudse_core.workspace import open_workspace

    space = load_space("stargazer")
    settings = search_settings(space, "BFS", "min", 16, 3, initial=8, batch=4)
    seen = _rounds(space, settings)
    first, last = seen[0], seen[-1]
    workspace.put_analysis("search", first, inputs=[], origin="gpudse search, goal min", partial=True)
    before = workspace.get("search")
    grown = tmp_path / "grown.json"
    grown.write_text(json.dumps(last.to_stored()))
    marker = tmp_path / "paused"
    code = ("import json, pathlib\nfrom gpudse_core.workspace import open_workspace\n"
            f"w = open_workspace({workspace.id!r}, trusted=True)\n"
            f"w.put_analysis('search', json.loads(pathlib.Path({str(grown)!r}).read_text()), inputs=[], "
            "partial=True)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUDSE_TEST_PAUSE_AT": "rewrite",
           "GPUDSE_TEST_PAUSE_WRITE": str(marker), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"ended before the pause point: {proc.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, "never reached the pause point"
        time.sleep(0.05)
    # mid-write: a reader sees the previous record, whole
    during = open_workspace(workspace.id).get("search")
    assert during.version == before.version and len(during.value.trials) == len(first.trials)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    proc.stdout.close()
    proc.stderr.close()
    after = open_workspace(workspace.id, trusted=True)
    sv = after.get("search")
    assert [h.version for h in after.history("search")] == [before.version]
    assert sv.digest == before.digest and len(sv.value.trials) == len(first.trials)
    # and the next write goes through, in the same version
    assert after.put_analysis("search", last, inputs=[], partial=False).version == before.version
    assert len(open_workspace(workspace.id).get("search").value.trials) == len(last.trials)
