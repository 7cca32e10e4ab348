"""What a search costs, as a script reads it: each round's time (propose, simulate, in all) in
``gpudse search --json``, on stderr and in the stored study; and ``-o history.csv``'s ``history.db``,
whose rounds a rerun reads back instead of simulating them again. No figure here is a timing
threshold: the tests check the records' structure and sums, and what was (not) simulated."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from gpudse_core.cli import main
from gpudse_core.search.pool import make_pool
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.runner import CampaignEvaluator
from gpudse_core.search.stored import StudyDamaged, check_study
from gpudse_core.search.study import run_search
from gpudse_core.search.timing import RoundTime
from gpudse_core.sim.campaign import AnalyticalBackend
from gpudse_core.space.presets import load_space

SEARCH = ["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--initial", "6", "--batch", "3",
          "--workers", "1", "--json"]
ROUND_FIELDS = {"round", "simulations", "propose_s", "fit_s", "simulate_s", "total_s"}


def _attempts(db) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM attempt").fetchone()[0]


def _bowl(digits, designs):
    d = np.asarray(digits, dtype=float)
    return [(float(100 + ((row - 1) ** 2).sum()), "") for row in d]


def test_json_and_stderr_report_each_rounds_time_and_the_total(tmp_path, capsys):
    hist = tmp_path / "h.csv"
    assert main(SEARCH + ["--budget", "12", "-o", str(hist)]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    time = doc["time"]
    rounds = time["rounds"]
    # one record per round of the history, in order, counting its simulations
    assert [r["round"] for r in rounds] == sorted({h["round"] for h in doc["history"]})
    assert [r["simulations"] for r in rounds] == [6, 3, 3]
    for r in rounds:
        assert set(r) == ROUND_FIELDS
        assert 0 <= r["fit_s"] <= r["propose_s"]
        assert r["simulate_s"] >= 0 and r["total_s"] >= r["propose_s"] + r["simulate_s"]
    assert rounds[0]["fit_s"] == 0  # the initial sample fits no model
    for key in ("propose_s", "fit_s", "simulate_s", "total_s"):
        assert time[key] == pytest.approx(sum(r[key] for r in rounds))
    # stderr: each round's line says its propose and simulate time, and the search ends with the totals
    lines = cap.err.splitlines()
    assert sum(line.startswith("round ") and "propose " in line and "simulate " in line for line in lines) == 3
    assert any(line.startswith("time: 3 rounds, propose ") and ", in all " in line for line in lines)


def test_a_rerun_with_the_same_history_reads_its_simulations_back(tmp_path, capsys):
    """history.db beside -o history.csv holds every round as a campaign; the same command again proposes
    the same designs from the same results and finds them there: nothing is simulated twice. A larger
    budget goes on from them."""
    hist, db = tmp_path / "h.csv", tmp_path / "h.db"
    assert main(SEARCH + ["--budget", "12", "-o", str(hist)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert db.exists() and _attempts(db) == 12
    assert main(SEARCH + ["--budget", "12", "-o", str(hist)]) == 0
    cap = capsys.readouterr()
    again = json.loads(cap.out)
    assert again["history"] == first["history"] and again["best"] == first["best"]
    assert _attempts(db) == 12  # not one simulation more
    assert "read back 12 simulations an earlier run left in" in cap.err
    assert main(SEARCH + ["--budget", "15", "-o", str(hist)]) == 0
    longer = json.loads(capsys.readouterr().out)
    assert longer["history"][:12] == first["history"] and longer["evaluated"] == 15
    assert _attempts(db) == 15  # only the three new designs ran


def test_a_round_an_earlier_run_left_is_resumed_not_run_again(tmp_path):
    """An evaluator (a later run of the search) finds a round with the same simulator and designs under its
    prefix and reads it back; other designs, or another prefix (another search in the same file), run."""
    space = load_space("stargazer")
    pool = make_pool(space)
    digits = pool.initial(5, np.random.default_rng(0))
    designs = [space._row(r) for r in digits]
    backend = AnalyticalBackend("BFS")
    with CampaignEvaluator(backend, tmp_path / "s.db", "search", "cycles", workers=1) as ev:
        first = ev(digits, designs)
        assert ev.reused == 0
    with CampaignEvaluator(backend, tmp_path / "s.db", "search", "cycles", workers=1) as ev:
        assert ev(digits, designs) == first and ev.reused == 5
        other = pool.initial(3, np.random.default_rng(1))
        ev(other, [space._row(r) for r in other])
        assert ev.reused == 5
    with CampaignEvaluator(backend, tmp_path / "s.db", "another/search", "cycles", workers=1) as ev:
        assert ev(digits, designs) == first and ev.reused == 0
    assert _attempts(tmp_path / "s.db") == 5 + 3 + 5


def test_the_stored_study_keeps_each_rounds_time_and_a_resume_continues_it():
    space = load_space("stargazer")
    res = run_search(make_pool(space), _bowl, goal="min", budget=10, batch=2, initial=6, seed=0, n_trees=5)
    assert [r.round for r in res.rounds] == [0, 1, 2] and [r.simulations for r in res.rounds] == [6, 2, 2]
    assert res.propose_seconds == [r.propose_s for r in res.rounds]
    settings = {"goal": "min", "params": list(space.parameter_names), "budget": 14, "seed": 0}
    doc = SearchStudy.of(settings, res).to_stored()
    back = SearchStudy.from_stored(json.loads(json.dumps(doc)))
    assert back.times == tuple(res.rounds)
    more = run_search(make_pool(space), _bowl, goal="min", budget=14, batch=2, initial=6, seed=0, n_trees=5,
                      trials=back.trials, rounds=back.times)
    assert [r.round for r in more.rounds] == [0, 1, 2, 3, 4] and more.rounds[:3] == list(res.rounds)
    older = {k: v for k, v in doc.items() if k != "rounds"}  # a study stored before rounds were timed
    assert SearchStudy.from_stored(older).times == () and len(SearchStudy.from_stored(older).trials) == 10


@pytest.mark.parametrize("change,said", [
    (lambda r: r.update(propose_s=-1.0), "round record 2's propose_s"),
    (lambda r: r.update(total_s=True), "round record 2's total_s"),
    (lambda r: r.pop("simulate_s"), "round record 2 is not a mapping of"),
    (lambda r: r.update(round="1"), "round record 2 has a round"),
])
def test_a_damaged_round_record_is_a_damaged_study(change, said):
    rounds = [RoundTime(i, 2, 0.1, 0.05, 0.2, 0.4).to_dict() for i in range(3)]
    trial = {"number": 0, "round": 0, "model_version": 0, "design": {"a": 1}, "acquisition": None, "value": 1.0,
             "status": "ok"}
    doc = {"settings": {"goal": "min", "params": ["a"]}, "trials": [trial], "rounds": rounds}
    check_study(doc)
    change(rounds[1])
    with pytest.raises(StudyDamaged, match=said):
        check_study(doc)
