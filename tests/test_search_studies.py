"""The sequential search's stored studies and the surfaces around them: every setting checked before
the first simulation (a seed of 2**32 used to be found wrong by the forest after the initial sample
had run), pools sized by the work there is (not by --workers alone), and stored studies and
comparisons validated when read — a damaged or tampered one is a damaged stage, offered to be dropped,
never an exception on a page or a traceback halfway through a resume."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core import limits
from gpudse_core.cli import main
from gpudse_core.report import compare
from gpudse_core.search.pool import make_pool
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.runner import CampaignEvaluator, study_doc
from gpudse_core.search.stored import StudyDamaged, check_study
from gpudse_core.search.study import SEED_MAX, SearchError, Trial, check_settings, run_search
from gpudse_core.sim.campaign import AnalyticalBackend, pool_size
from gpudse_core.space.presets import load_space


def _synthetic(space):
    """A cheap simulator over a space: a known function of the digits (a bowl, lowest at digit 1 each)."""
    calls = []

    def evaluate(digits, designs):
        calls.append(len(designs))
        d = np.asarray(digits, dtype=float)
        return [(float(100 + ((row - 1) ** 2).sum()), "") for row in d]
    return evaluate, calls


@pytest.mark.parametrize("kw,said", [
    (dict(seed=2**32), "--seed 4294967296 is too large"),
    (dict(seed=-1), "--seed must be a whole number of at least 0"),
    (dict(seed=1.5), "--seed must be a whole number"),
    (dict(target=float("nan")), "--target must be a finite number"),
    (dict(target=float("inf")), "--target must be a finite number"),
    (dict(patience=0), "--patience must be a whole number of at least 1"),
    (dict(n_trees=0), "--trees must be a whole number of at least 1"),
    (dict(initial_method="sobol"), "initial sample 'sobol'"),
    (dict(surrogate="stepwise"), "surrogate 'stepwise'"),
])
def test_every_setting_is_refused_before_the_first_simulation(kw, said):
    space = load_space("stargazer")
    evaluate, calls = _synthetic(space)
    with pytest.raises(SearchError, match=None) as e:
        check_settings("min", 20, None, 2, **kw)
    assert said in str(e.value)
    with pytest.raises(SearchError):
        run_search(make_pool(space), evaluate, goal="min", budget=20, batch=2, **kw)
    assert calls == []  # nothing simulated


def test_the_cli_refuses_a_seed_of_2_32_before_any_simulation(tmp_path, capsys):
    out = tmp_path / "h.csv"
    argv = ["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--budget", "12", "--workers", "1",
            "-o", str(out)]
    assert main(argv + ["--seed", str(2**32)]) == 2
    err = capsys.readouterr().err
    assert "--seed 4294967296 is too large" in err and "Traceback" not in err
    assert not out.exists() and not out.with_suffix(".db").exists()  # no campaign was started
    assert main(argv + ["--target", "nan"]) == 2
    assert "--target must be a finite number" in capsys.readouterr().err


def test_the_largest_seed_runs_to_its_budget_reproducibly():
    """The models' seeds are derived from the search's (seed + model version) below 2**32, so the
    largest legal seed runs every round (it raised in the first model round before)."""
    space = load_space("stargazer")
    histories = []
    for _ in range(2):
        evaluate, _ = _synthetic(space)
        res = run_search(make_pool(space), evaluate, goal="min", budget=16, batch=3, seed=SEED_MAX, n_trees=10)
        assert len(res.trials) == 16 and max(t.model_version for t in res.trials) >= 2
        histories.append([(t.design, t.value) for t in res.trials])
    assert histories[0] == histories[1]


def test_pools_are_sized_by_the_work_there_is():
    assert pool_size(256, 4) == 4  # the largest legal --workers, a batch of four: four processes
    assert pool_size(2, 100) == 2
    assert pool_size(8, 10, batch_size=4) == 3  # ten points, four a task: three tasks
    assert pool_size(5, 0) == 1


def test_pools_are_bounded_by_the_memory_their_processes_take():
    """local_worker_bytes bounds the count's memory: 75 MB a worker, about 1 GiB more an MGPUSim run."""
    from gpudse_core.sim.campaign import process_bytes

    class Mgpusim:
        name = "mgpusim"

    assert process_bytes(AnalyticalBackend("BFS")) == 75 * limits.MiB
    assert process_bytes(Mgpusim()) == limits.GiB + 75 * limits.MiB
    assert pool_size(256, 1000, 1, process_bytes(AnalyticalBackend("BFS"))) == 218  # 16 GiB / 75 MiB
    assert pool_size(256, 1000, 1, process_bytes(Mgpusim())) == 14  # 16 GiB / 1.07 GiB
    with limits.override(local_worker_bytes=2 * limits.GiB):
        assert pool_size(256, 1000, 1, process_bytes(Mgpusim())) == 1  # never fewer than one
        assert pool_size(4, 1000, 1, process_bytes(AnalyticalBackend("BFS"))) == 4



def test_a_local_scan_cluster_is_bounded_by_memory_too():
    """Explore's LocalCluster keeps the campaign pool's memory bound (75 MB a process)."""
    from gpudse_core.explore.distributed import local_scan_workers

    assert local_scan_workers(4) == 4
    with limits.override(local_worker_bytes=3 * limits.WORKER_BYTES):
        assert local_scan_workers(64) == 3
    with limits.override(local_worker_bytes=limits.WORKER_BYTES // 2):
        assert local_scan_workers(8) == 1  # never fewer than one


def _round(ev, pool, space, rng, n):
    digits = pool.initial(n, rng)
    out = ev(digits, [space._row(r) for r in digits])
    assert len(out) == n and all(v is not None for v, _ in out)


def test_the_search_evaluator_starts_only_the_processes_a_round_can_use(tmp_path):
    """--workers 64 (legal) used to start 64 processes of ~75 MB whatever the batch."""
    space = load_space("stargazer")
    pool = make_pool(space)
    rng = np.random.default_rng(0)
    # the built-in simulator runs 500 points a task: a round of one task runs in this process, none started
    with CampaignEvaluator(AnalyticalBackend("BFS"), tmp_path / "a.db", "t", "cycles", workers=64) as ev:
        assert ev.executor is None  # nothing started before there is work
        _round(ev, pool, space, rng, 6)
        assert ev.size == 0 and ev.executor is None
    # one point a task (a command simulator): as many processes as the round has points, grown when needed
    with CampaignEvaluator(AnalyticalBackend("BFS", batch_size=1), tmp_path / "b.db", "t", "cycles",
                           workers=64) as ev:
        _round(ev, pool, space, rng, 3)
        assert ev.size == 3 and len(ev.executor._processes) <= 3
        _round(ev, pool, space, rng, 2)
        assert ev.size == 3  # a smaller round reuses the pool
        _round(ev, pool, space, rng, 5)
        assert ev.size == 5 and len(ev.executor._processes) <= 5


# ---- stored studies ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def study():
    space = load_space("stargazer")
    evaluate, _ = _synthetic(space)
    res = run_search(make_pool(space), evaluate, goal="min", budget=14, batch=2, seed=1, n_trees=10)
    settings = {"source": "space stargazer, kernel BFS", "goal": "min", "cost": "", "response": "cycles",
                "params": list(space.parameter_names), "budget": 14, "initial": None, "seed": 1,
                "acquisition": "ei", "surrogate": "auto"}
    return json.loads(json.dumps(study_doc(settings, res, [{"simulated": 12, "error": 0.1}])))


def _tamper(doc, how):
    d = json.loads(json.dumps(doc))
    t = d["trials"]
    {"value-text": lambda: t[3].update(value="fast"),
     "no-round": lambda: t[0].pop("round"),
     "status-unknown": lambda: t[1].update(status="maybe"),
     "ok-without-value": lambda: t[2].update(value=None),
     "design-foreign-param": lambda: t[4]["design"].update(evil=1),
     "design-value-list": lambda: t[4]["design"].update({next(iter(t[4]["design"])): [1, 2]}),
     "numbering": lambda: t[5].update(number=0),
     "unknown-field": lambda: t[0].update(__class__="x"),
     "negative-seconds": lambda: t[0].update(seconds=-1),
     "goal-unknown": lambda: d["settings"].update(goal="best"),
     "budget-text": lambda: d["settings"].update(budget="many"),
     "seed-too-large": lambda: d["settings"].update(seed=2**40),
     "params-not-names": lambda: d["settings"].update(params=[1, 2]),
     "trials-not-list": lambda: d.update(trials={"0": t[0]}),
     "model-error-text": lambda: d.update(model_error=["x"]),
     }[how]()
    return d


TAMPERED = ["value-text", "no-round", "status-unknown", "ok-without-value", "design-foreign-param",
            "design-value-list", "numbering", "unknown-field", "negative-seconds", "goal-unknown", "budget-text",
            "seed-too-large", "params-not-names", "trials-not-list", "model-error-text"]


def test_a_stored_study_as_gpudse_writes_it_reads_back(study):
    assert check_study(study) is study


@pytest.mark.parametrize("how", TAMPERED)
def test_a_tampered_study_is_damaged_naming_what(study, how):
    with pytest.raises(StudyDamaged, match="the stored search is damaged: .*drop it"):
        check_study(_tamper(study, how))


def test_a_study_of_more_trials_than_a_search_may_spend_is_damaged(study):
    with limits.override(search_budget=10), pytest.raises(StudyDamaged, match="more than a search may spend"):
        check_study(study)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _forge(ws, valid, doc):
    """Store *doc* as the workspace's study as a hand-edited workspace file would hold it (``put`` refuses a
    malformed study): a valid study stored, then its value replaced in the database."""
    import sqlite3

    from gpudse_core.workspace import codec

    ws.put_analysis("search", valid, inputs=[], origin="forged")
    fmt, blob = codec.encode(doc)
    con = sqlite3.connect(ws.path)
    con.execute("UPDATE ws_stage SET format = ?, value = ? WHERE stage = 'search' AND version = "
                "(SELECT version FROM ws_head WHERE stage = 'search')", (fmt, blob))
    con.commit()
    con.close()


def test_a_study_reads_as_its_class_and_round_trips_to_the_same_stored_record(study):
    s = SearchStudy.from_stored(study)
    assert isinstance(s, SearchStudy) and s.goal == "min" and s.response == "cycles" and len(s.trials) == 14
    assert all(isinstance(t, Trial) for t in s.trials) and s.model_error == ((12, 0.1),)
    assert list(s.trials[0].design) == s.params  # the design in the space's parameter order
    assert s.to_stored() == study  # the stored form unchanged: earlier workspaces open, and write the same
    best = min((t for t in study["trials"] if t["status"] == "ok"), key=lambda t: t["value"])
    assert s.best().number == best["number"] and s.rounds == study["trials"][-1]["round"] + 1
    assert s.describe() == "a min search of 14 simulations (0 failed), stopped: budget"


def test_a_study_stored_by_an_earlier_version_reads_as_its_class(study):
    old = json.loads(json.dumps(study))
    old.pop("model_error")  # written by the CLI, which keeps no model error
    old["settings"].pop("surrogate")  # stored before the surrogate setting existed
    s = SearchStudy.from_stored(old)
    assert s.model_error == () and "surrogate" not in s.settings and s.to_stored() == old


@pytest.mark.parametrize("how,said", [("value-text", "trial 4's value 'fast'"), ("no-round", "trial 1 has no round"),
                                      ("goal-unknown", "its goal 'best'"), ("trials-not-list", "its trials"),
                                      ("model-error-text", "its model error")])
def test_a_forged_study_reads_as_damaged_naming_the_field(study, how, said):
    from gpudse_core.workspace.results import Damaged, read

    got = read("search", 3, _tamper(study, how))
    assert isinstance(got, Damaged) and got.version == 3 and said in got.why
    assert got.message().startswith("The stored search (version 3) cannot be read: the stored search is damaged")


def test_a_malformed_study_is_refused_when_stored_naming_the_field(study, home):
    from gpudse_core.workspace import StageError, create_workspace

    ws, _ = create_workspace("refused")
    with pytest.raises(StageError, match="trial 4's value 'fast' is not a finite number"):
        ws.put_analysis("search", _tamper(study, "value-text"), inputs=[], origin="forged")
    assert ws.get("search").value is None  # nothing stored


def test_a_tampered_study_in_a_workspace_is_a_damaged_stage_the_owner_can_drop(study, home):
    from gpudse_core.workspace import Damaged, create_workspace, open_workspace

    ws, key = create_workspace("tampered")
    ws.put("space", load_space("stargazer"))
    _forge(ws, study, _tamper(study, "value-text"))
    for k in (None, key):  # a visitor and the owner
        h = open_workspace(ws.id, k)
        assert "search" in h.damaged()  # named before any page reads it
        assert "trial 4's value 'fast' is not a finite number" in h.damaged()["search"]
        got = h.get("search").value
        assert isinstance(got, Damaged) and "trial 4's value 'fast' is not a finite number" in got.why
        assert h.get("space").value.name == "stargazer"  # the rest is readable
        h.close()
    h = open_workspace(ws.id, key)
    h.drop_damaged("search")
    assert h.get("search").value is None and not h.damaged()


def test_the_report_lists_a_study_by_what_it_holds_and_leaves_a_forged_one_out(study, home):
    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.workspace import create_workspace, open_workspace

    ws, _ = create_workspace("report")
    ws.put("space", load_space("stargazer"))
    ws.put_analysis("search", study, inputs=[], origin="gpudse search")
    html = workspace_report(ws)
    # the report's search section (gpudse_core.report.record): its settings, simulations and why it stopped
    assert "<h2>Search v1: " in html and "cannot be read" not in html
    assert "<td class=l>simulated</td><td class=l>14 (0 failed)</td>" in html
    assert "<td class=l>stopped</td><td class=l>budget</td>" in html
    _forge(ws, study, _tamper(study, "goal-unknown"))
    html = workspace_report(open_workspace(ws.id, trusted=True))  # the edited file, opened
    left_out = html.split("Left out of this report")[1]
    assert "cannot be read" in left_out and "its goal &#x27;best&#x27; is not one of" in left_out
    assert "14 simulations" not in html


def test_resuming_a_tampered_study_is_a_clear_error_before_anything_runs(study, home, capsys):
    from gpudse_core.workspace import create_workspace, open_workspace

    space = load_space("stargazer")
    ws, _ = create_workspace("resume")
    ws.put("space", space)
    argv = ["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--budget", "20", "--batch", "2",
            "--seed", "1", "--workers", "1", "--workspace", ws.id]
    _forge(ws, study, _tamper(study, "design-value-list"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the stored search is damaged" in err and "Traceback" not in err
    # well-formed but of a value the space does not have: refused before a simulation, naming the trial
    forged = json.loads(json.dumps(study))
    forged["settings"].update(budget=20, batch=2)
    first = next(iter(forged["trials"][2]["design"]))
    forged["trials"][2]["design"][first] = 123456789
    ws.put_analysis("search", forged, inputs=[], origin="forged")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "trial 3's design is not a point of space" in err and "Traceback" not in err
    assert not open_workspace(ws.id).campaigns()  # nothing was simulated


# ---- stored comparisons ------------------------------------------------------------------------------
def _run(label):
    return {"label": label, "workspace": "w", "workspace_id": "abc", "version": 1, "kind": "stepwise",
            "origin": "fit", "results": "built-in", "kernel": None, "noise": None, "rows": 20,
            "response": "cycles",
            "headline": {"source": "leave-one-out", "value": 0.05, "interpolates": False, "note": "", "detail": ""},
            "r2": 0.9, "terms": 4, "errors": np.array([0.01, 0.05, 0.2]), "errors_source": "leave-one-out",
            "trend": pd.DataFrame({"train_size": [20, 30], "mean": [0.1, 0.08], "median": [0.09, 0.07],
                                   "max": [0.4, 0.3]}),
            "contributions": pd.DataFrame({"term": ["a", "b"], "gain": [0.5, 0.3]}), "param": "simd",
            "curve": pd.DataFrame({"value": ["1", "2"], "x": [0, 1], "predicted": [10.0, 8.0]})}


@pytest.mark.parametrize("how,said", [
    (lambda c: c["runs"].pop(), "runs"),
    (lambda c: c.update(runs="x"), "runs"),
    (lambda c: c["runs"][1].update(label=["x"]), "label"),
    (lambda c: c["runs"][0]["headline"].update(interpolates="no"), "interpolates"),
    (lambda c: c["runs"][0].update(errors=np.array(["a", "b"])), "errors"),
    (lambda c: c["runs"][1].update(trend={"x": 1}), "trend"),
    (lambda c: c["runs"][0].update(curve={"x": 1}), "curve"),
    (lambda c: c["runs"][0].update(r2="high"), "r2"),
    (lambda c: c.update(param=5), "param"),
])
def test_a_tampered_comparison_is_damaged_naming_what(how, said):
    from gpudse_core.report.comparison import Comparison, Run
    from gpudse_core.stored import StoredFormError

    cmp = compare.comparison([Run.from_stored(_run("a")), Run.from_stored(_run("b"))], "simd")
    doc = cmp.to_stored()
    assert Comparison.from_stored(doc) == cmp or Comparison.from_stored(doc).param == "simd"
    assert compare.figures(cmp) and compare.notes(cmp) is not None  # what the page draws from a valid one
    how(doc)
    with pytest.raises(StoredFormError) as e:
        Comparison.from_stored(doc)
    assert said in str(e.value)


# a forged comparison stored in a workspace: tests/test_results.py (the typed analyses' damaged reads)


# ---- one run of a study at a time --------------------------------------------------------------------
_HOLDER = """
import sys, time
from gpudse_core.search.lease import StudyLease
from gpudse_core.workspace import db
lease = StudyLease(db.path_of(sys.argv[1]))
lease.acquire()
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_run_of_a_study_is_refused_naming_the_first_and_a_dead_one_s_lease_is_taken_over(home, capsys):
    """Two real processes: one holds the study's lease (a search running), the other's resume is refused
    before it reads a trial, naming the holder's pid; once the holder is killed (SIGKILL: no clean
    release), its lease is provably dead and the next run takes it over and runs."""
    import os
    import signal
    import subprocess
    import sys

    from gpudse_core.search.lease import StudyBusy
    from gpudse_core.search.runner import start_search
    from gpudse_core.workspace import create_workspace, open_workspace

    ws, key = create_workspace("busy")
    ws.put("space", load_space("stargazer"))
    argv = ["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--budget", "12", "--batch", "2",
            "--workers", "1", "--workspace", ws.id]
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, ws.id], stdout=subprocess.PIPE, text=True,
                              env={**os.environ})
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"the search of this workspace is running already (pid {holder.pid} on host" in err
        assert "Traceback" not in err
        h = open_workspace(ws.id, key)
        with pytest.raises(StudyBusy, match=f"pid {holder.pid}"):  # the page's start is refused the same way
            start_search(h, "BFS", "min", budget=12, batch=2)
        assert not h.jobs() and h.get("search").value is None  # no job, nothing stored, nothing simulated
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    assert main(argv) == 0  # the dead holder's lease is taken over
    capsys.readouterr()
    assert len(open_workspace(ws.id).get("search").value.trials) == 12
    assert main(argv[:-4] + ["--budget", "14", "--workspace", ws.id]) == 0  # released at the end: resumable
    assert len(open_workspace(ws.id).get("search").value.trials) == 14
