"""Sequential search (gpudse_core.search, the lookup backend, gpudse search, gpudse space infer)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gpudse_core.cli import main
from gpudse_core.search.acquisition import (diverse_batch, expected_improvement, hypervolume,
                                            hypervolume_improvement, pareto_mask)
from gpudse_core.search.pool import make_pool
from gpudse_core.search.study import SearchError, run_search
from gpudse_core.sim.lookup import LookupTable, TableLookupError, infer_space


def synthetic(fail_a: int | None = 7) -> pd.DataFrame:
    """8×8×6 designs; a bowl with its single minimum at a=32, b=20, c=x (value 1.15); every design
    with a = fail_a 'failed' (no time, status RuntimeFailed); 40 designs missing from the table."""
    rows = []
    for a in range(8):
        for b in range(8):
            for c in ("x", "y", "z", "u", "v", "w"):
                k = "xyzuvw".index(c)
                t = 1.0 + 0.3 * (a - 5) ** 2 + 0.2 * (b - 2) ** 2 + 0.15 * k + 0.05 * abs(a - b)
                rows.append({"a": 2 ** a, "b": b * 10, "c": c, "time_ms": t, "status": "ok"})
    df = pd.DataFrame(rows)
    if fail_a is not None:
        bad = df.a == 2 ** fail_a
        df.loc[bad, "status"] = "RuntimeFailedConfig"
        df.loc[bad, "time_ms"] = np.nan
    return df.drop(index=np.arange(3, 3 + 40 * 7, 7)).reset_index(drop=True)


def lookup_eval(t: LookupTable, calls: list | None = None):
    def evaluate(digits, designs):
        if calls is not None:
            calls.append(np.array(digits))
        return t.answer(digits)
    return evaluate


@pytest.mark.slow
def test_finds_the_known_optimum_within_budget_and_never_repeats():
    t = LookupTable.from_frame(synthetic(), "time_ms", status_column="status")
    assert t.space.size == 8 * 8 * 6 and len(t.digits) == 8 * 8 * 6 - 40
    calls: list = []
    # 60 of 344 designs (random search finds the one best design with probability 60/344 = 17 %)
    res = run_search(make_pool(t.space, t.digits), lookup_eval(t, calls), goal="min", budget=60, batch=3, seed=3,
                     n_trees=20)
    assert len(res.trials) == 60  # the budget, exactly (failed designs count)
    best = res.best()
    truth = synthetic()
    assert truth.time_ms.min() == pytest.approx(1.15) and (truth.time_ms < 1.2).sum() == 1
    assert best.value == pytest.approx(1.15) and best.design == {"a": 32, "b": 20, "c": "x"}
    keys = [tuple(r) for c in calls for r in c.tolist()]
    assert len(keys) == len(set(keys)) == 60  # nothing simulated twice, failed designs included
    assert res.trials[0].model_version == 0 and res.trials[-1].model_version > 0
    # every proposal carries what chose it: the forest's acquisition value, or (acquisition none) the stepwise
    # model; and the value its model predicted (the initial sample, chosen by none, predicts nothing)
    assert all((t.acquisition is not None) == (t.surrogate == "forest") for t in res.trials if t.model_version > 0)
    assert all((t.predicted is not None) == (t.model_version > 0) for t in res.trials[10:])


class KnowsTheFailingColumn:
    """A stand-in for the feasibility classifier that has learned exactly which level of one feature fails:
    the search's own rule is then tested apart from how fast a random forest learns it (which depends on
    scikit-learn's version, not on the search)."""
    column = 0

    def __init__(self, seed: int = 0, n_trees: int = 10):
        self.failing: set[float] = set()

    def fit(self, X: np.ndarray, ok: np.ndarray) -> "KnowsTheFailingColumn":
        self.failing = set(np.asarray(X)[~np.asarray(ok, dtype=bool), self.column].tolist())
        return self

    def probability(self, X: np.ndarray) -> np.ndarray:
        return np.where(np.isin(np.asarray(X)[:, self.column], list(self.failing)), 0.01, 1.0)


@pytest.mark.slow
def test_failed_designs_cost_budget_are_recorded_and_avoided(monkeypatch):
    df = synthetic(fail_a=5)  # the region around the bowl's bottom fails
    t = LookupTable.from_frame(df, "time_ms", status_column="status")
    # (the forest alone: with the default, auto, the stepwise model may still propose a = 32 — the bowl's
    # bottom by its smooth fit — while the classifier, from two failures, cannot yet tell a from b or c)
    res = run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="min", budget=40, batch=2, seed=0, n_trees=20,
                     surrogate="forest")
    failed = [x for x in res.trials if x.status == "failed"]
    assert failed and all(x.value is None and "RuntimeFailedConfig" in x.error for x in failed)
    designs = [tuple(x.design.values()) for x in res.trials]
    assert len(designs) == len(set(designs))  # a failed design is never proposed again
    # the search's rule: a design the classifier expects to fail comes after every other, so with a classifier
    # that knows a = 32 fails, no a = 32 design follows the round that taught it, while others are left
    import gpudse_core.search.surrogate as surrogate

    monkeypatch.setattr(surrogate, "Feasibility", KnowsTheFailingColumn)
    KnowsTheFailingColumn.column = list(t.space.parameter_names).index("a")
    taught = run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="min", budget=40, batch=2, seed=0,
                        n_trees=20, surrogate="forest").trials
    first = min(x.round for x in taught if x.status == "failed")
    assert [x.design["a"] for x in taught if x.round > first and x.design["a"] == 32] == []
    assert sum(x.round > first for x in taught) >= 20  # the rule was exercised, not the budget spent before it
    monkeypatch.undo()
    # the default search, over four seeds, simulates fewer failing designs than random search would
    share = (df.a == 32).sum() / len(df)  # 48 of the table's 344 rows
    fails = [sum(x.status == "failed" for x in run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="min",
                                                          budget=40, batch=2, seed=s).trials) for s in range(4)]
    assert np.mean(fails) < 40 * share, fails


def test_maximise_and_exhausting_a_small_space():
    df = synthetic(fail_a=None).head(30)
    t = LookupTable.from_frame(df, "time_ms", status_column="status")
    res = run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="max", budget=100, initial=5, batch=4)
    assert res.stopped == "exhausted" and len(res.trials) == 30
    assert res.best().value == pytest.approx(df.time_ms.max())


def test_expected_improvement_matches_its_closed_form():
    mu, sd = np.array([1.0, 2.0, 0.5]), np.array([0.5, 0.1, 1e-15])
    ei = expected_improvement(mu, sd, 1.5)
    from scipy.stats import norm

    u = (1.5 - mu[:2]) / sd[:2]
    want = (1.5 - mu[:2]) * norm.cdf(u) + sd[:2] * norm.pdf(u)
    assert ei[:2] == pytest.approx(want) and ei[2] == pytest.approx(1.0)


def test_hypervolume_improvement_equals_the_change_in_hypervolume():
    rng = np.random.default_rng(1)
    fy, fc = rng.random(12), rng.random(12)
    ref = (1.2, 1.3)
    cand_y, cand_c = rng.random(40), rng.random(40)
    hvi = hypervolume_improvement(cand_y, np.zeros(40), cand_c, fy, fc, ref, kappa=0.0)
    base = hypervolume(fy, fc, ref)
    for i in range(40):
        after = hypervolume(np.append(fy, cand_y[i]), np.append(fc, cand_c[i]), ref)
        assert hvi[i] == pytest.approx(after - base, abs=1e-12)
    assert pareto_mask(np.array([1.0, 2.0, 0.5]), np.array([1.0, 0.5, 2.0])).all()


def test_diverse_batch_spreads_over_distinct_designs():
    unit = np.array([[0.0, 0.0], [0.0, 0.01], [1.0, 1.0], [0.5, 0.5]])
    score = np.array([1.0, 0.99, 0.5, 0.4])
    pick = diverse_batch(score, unit, 2, radius=1.0)
    assert list(pick) == [0, 2]  # the near-duplicate of the best waits
    assert list(diverse_batch(score, unit, 2, radius=1e-6)) == [0, 1]


def test_pareto_goal_returns_a_nondominated_front():
    t = LookupTable.from_frame(synthetic(fail_a=None), "time_ms", status_column="status")
    a = np.array(t.space.parameter("a").values, dtype=float)

    def cost(d):
        return a[d[:, 0]]

    res = run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="pareto", budget=40, batch=2, cost=cost)
    front = res.front()
    ok = res.ok
    for f in front:
        assert not any(o.value <= f.value and o.cost <= f.cost and (o.value < f.value or o.cost < f.cost) for o in ok)
    assert front[0].cost == 1.0  # the cheapest design is explored


@pytest.mark.slow
def test_huge_space_streams_candidates_and_never_repeats():
    from gpudse_core.space.design import space_from_dict

    space = space_from_dict({"name": "huge", "parameters": [{"name": f"p{i}", "values": list(range(10))}
                                                            for i in range(9)]})
    assert space.size == 10 ** 9
    seen = set()

    def evaluate(digits, designs):
        out = []
        for d in designs:
            key = tuple(d.values())
            assert key not in seen
            seen.add(key)
            out.append((1.0 + sum((v - 3) ** 2 for v in d.values()), ""))
        return out

    res = run_search(make_pool(space), evaluate, goal="min", budget=40, batch=5, seed=1)
    assert len(res.trials) == 40 and max(res.propose_seconds) < 5.0
    assert res.best().value < sorted(t.value for t in res.trials[:10])[0]  # the search improved on its start


def test_settings_are_checked():
    t = LookupTable.from_frame(synthetic(), "time_ms", status_column="status")
    pool = make_pool(t.space, t.digits)
    with pytest.raises(SearchError, match="leaves nothing for the search after --initial 10"):
        run_search(pool, lookup_eval(t), budget=10, initial=10)
    with pytest.raises(SearchError, match="goal 'best'"):
        run_search(pool, lookup_eval(t), goal="best", budget=20)
    with pytest.raises(SearchError, match="needs a cost"):
        run_search(pool, lookup_eval(t), goal="pareto", budget=20)


# ---- the lookup backend and space inference ----------------------------------------------------------------
def test_lookup_table_refuses_bad_tables():
    df = synthetic()
    with pytest.raises(TableLookupError, match="no response column 'nope'"):
        LookupTable.from_frame(df, "nope")
    with pytest.raises(TableLookupError, match="no status column 'state'"):
        LookupTable.from_frame(df, "time_ms", status_column="state")
    bad = df.assign(status="CompilationFailedConfig")
    with pytest.raises(TableLookupError, match="no row has status = 'ok'"):
        LookupTable.from_frame(bad, "time_ms", status_column="status")
    dup = pd.concat([df, df.head(1)])
    with pytest.raises(TableLookupError, match="rows 2 and .* are the same design"):
        LookupTable.from_frame(dup, "time_ms")
    with pytest.raises(TableLookupError, match="no parameter column 'zz'"):
        LookupTable.from_frame(df, "time_ms", params=["a", "zz"])
    holes = df.copy()
    holes.loc[4, "b"] = np.nan
    with pytest.raises(TableLookupError, match="row 6 has no value for parameter 'b'"):
        infer_space(holes, ["a", "b"])


def test_lookup_backend_answers_through_a_campaign(tmp_path):
    from gpudse_core.sim.campaign import local_pool, run_campaign
    from gpudse_core.sim.store import CampaignStore

    t = LookupTable.from_frame(synthetic(), "time_ms", status_column="status")
    points = pd.DataFrame([{"a": 32, "b": 20, "c": "x"}, {"a": 128, "b": 0, "c": "y"}, {"a": 1, "b": 0, "c": "u"}])
    missing = synthetic().loc[lambda d: (d.a == 1) & (d.b == 0) & (d.c == "u")]
    assert missing.empty  # one of the 40 designs left out of the table
    with CampaignStore(tmp_path / "s.db", max_attempts=1) as store:
        store.open({"backend": "lookup"}, points)
        pool = local_pool(1)
        try:
            run_campaign(store, t.backend(), executor=pool)
        finally:
            pool.shutdown()
        tab = store.table(include_failed=True)
    assert tab.status.tolist() == ["done", "failed", "failed"]
    assert tab.time_ms.iloc[0] == pytest.approx(1.15)
    assert "RuntimeFailedConfig" in tab.error.iloc[1] and "not in the measured table" in tab.error.iloc[2]


def test_space_infer_cli(tmp_path, capsys):
    src = tmp_path / "m.csv"
    synthetic().to_csv(src, index=False)
    out = tmp_path / "space.yaml"
    assert main(["space", "infer", str(src), "--params", "a,b,c", "-o", str(out)]) == 0
    from gpudse_core.space.presets import load_space

    space = load_space(str(out))
    assert space.parameter("a").values == tuple(2 ** i for i in range(8))
    assert space.parameter("c").kind == "categorical" and space.size == 384
    assert main(["space", "infer", str(src), "--params", "a,q", "-o", str(out)]) == 2
    assert "no parameter column 'q'" in capsys.readouterr().err


# ---- the command line --------------------------------------------------------------------------------------
@pytest.fixture
def table(tmp_path):
    p = tmp_path / "measured.csv"
    synthetic().to_csv(p, index=False)
    return p


def test_cli_json_shape_and_history(table, tmp_path, capsys):
    hist = tmp_path / "history.csv"
    code = main(["search", "--table", str(table), "--response", "time_ms", "--params", "a,b,c", "--goal", "min",
                 "--budget", "30", "--batch", "3", "--workers", "1", "--seed", "2", "-o", str(hist), "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"goal", "evaluated", "failed", "best", "history"}
    assert doc["goal"] == "min" and doc["evaluated"] == 30 == len(doc["history"])
    assert set(doc["best"]) == {"a", "b", "c", "time_ms"}
    ok = [h["value"] for h in doc["history"] if h["value"] is not None]
    assert doc["best"]["time_ms"] == min(ok)
    assert doc["failed"] == sum(h["value"] is None for h in doc["history"])
    assert {h["round"] for h in doc["history"]} == set(range(max(h["round"] for h in doc["history"]) + 1))
    h = pd.read_csv(hist)
    # the JSON history is the CSV's, row for row: a failed simulation says so and why (this run has some)
    assert doc["failed"] >= 1
    assert [x["trial"] for x in doc["history"]] == h.trial.tolist()
    assert [x["status"] for x in doc["history"]] == h.status.tolist()
    assert [x["model_version"] for x in doc["history"]] == h.model_version.tolist()
    assert all(bool(x.get("error")) == (x["status"] == "failed") for x in doc["history"])
    assert [x.get("error") for x in doc["history"] if x["status"] == "failed"] == h.error[h.status == "failed"].tolist()
    assert list(h.columns[:3]) == ["trial", "round", "model_version"]
    assert len(h) == 30 and set(h.status) <= {"ok", "failed"}
    assert not h.duplicated(["a", "b", "c"]).any()
    # which model chose each design: none for the initial sample, the forest (the default) after it, or a
    # uniform draw (once the best has stalled: study.STALL)
    assert h.surrogate.isna().sum() == (h.model_version == 0).sum() == 10
    assert "forest" in set(h.surrogate[h.model_version > 0]) <= {"forest", "random"}


@pytest.mark.parametrize("extra, message", [
    (["--response", "nope"], "no response column 'nope'"),
    (["--status-column", "nope"], "no status column 'nope'"),
    (["--budget", "5", "--initial", "5"], "leaves nothing for the search"),
    (["--goal", "pareto"], "--goal pareto needs --cost"),
    (["--cost", "a * 2"], "--cost is for --goal pareto"),
    (["--objective", "time_ms * nope"], "unknown name 'nope'"),
    (["--objective", "a * 2"], "does not use the response 'time_ms'"),
    (["--objective", "__import__('os').system('x') * time_ms"], "not allowed"),
    (["--goal", "accuracy", "--objective", "time_ms * a"], "--objective is for --goal min or max"),
    (["--goal", "accuracy", "--acquisition", "lcb"], "--acquisition: for --goal min or max"),
    (["--goal", "accuracy", "--surrogate", "forest", "--acquisition", "ei"],
     "--acquisition, --surrogate: for --goal min or max"),
])
def test_cli_bad_inputs_have_one_clear_message(table, capsys, extra, message):
    args = ["search", "--table", str(table), "--goal", "min", "--budget", "20", "--workers", "1"]
    for i in range(0, len(extra), 2):
        if extra[i] in args:
            args[args.index(extra[i]) + 1] = extra[i + 1]
        else:
            args += extra[i:i + 2]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpudse: error: ") and message in err and "Traceback" not in err


def test_cli_pareto_with_a_cost_expression(table, capsys):
    assert main(["search", "--table", str(table), "--goal", "pareto", "--cost", "a * (b + 10)", "--budget", "25",
                 "--workers", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["front"] and all({"a", "b", "c", "time_ms", "cost"} <= set(f) for f in doc["front"])
    assert all(f["cost"] == f["a"] * (f["b"] + 10) for f in doc["front"])


def test_cli_builtin_simulator_search(tmp_path, capsys):
    assert main(["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--budget", "14", "--initial", "6",
                 "--batch", "4", "--workers", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["evaluated"] == 14 and doc["failed"] == 0 and "cycles" in doc["best"]


def test_workspace_stores_every_round_and_resumes(table, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    from gpudse_core.workspace import create_workspace, open_workspace

    ws, _ = create_workspace("search")
    base = ["search", "--table", str(table), "--goal", "min", "--workers", "1", "--batch", "4",
            "--workspace", ws.id, "--json"]
    assert main(base + ["--budget", "16"]) == 0
    first = json.loads(capsys.readouterr().out)
    stored = open_workspace(ws.id).get("search").value.to_stored()
    assert len(stored["trials"]) == 16 and stored["settings"]["goal"] == "min"
    assert main(base + ["--budget", "24"]) == 0
    captured = capsys.readouterr()
    second = json.loads(captured.out)
    assert "resuming the search" in captured.err
    assert second["history"][:16] == first["history"] and second["evaluated"] == 24
    designs = [tuple(h["design"].values()) for h in second["history"]]
    assert len(set(designs)) == 24
    assert main(base + ["--budget", "20"]) == 0  # fewer than done: nothing runs, and it says so
    assert "--budget 20 is spent already, so nothing more is simulated" in capsys.readouterr().err
    assert len(open_workspace(ws.id).get("search").value.trials) == 24
    assert main(base[:-1] + ["--budget", "30", "--seed", "9"]) == 2
    assert "holds a search with other settings (seed: stored 0, given 9)" in capsys.readouterr().err


def _forget_surrogate(ws_id: str) -> None:
    """Make the stored study look like one stored before the surrogate was a setting."""
    from gpudse_core.workspace import open_workspace

    w = open_workspace(ws_id, trusted=True)
    doc = w.get("search").value.to_stored()
    doc["settings"].pop("surrogate")
    w.put_analysis("search", doc, inputs=[], origin="an older gpudse search", partial=False)


def test_a_study_stored_before_auto_resumes_as_it_ran(table, tmp_path, monkeypatch, capsys):
    """Studies stored before --surrogate existed ran the forest: a min study resumes with --surrogate
    forest and is refused without it, naming the stored and the given value; an accuracy study, which
    never fits the stepwise model, resumes by the same command."""
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    from gpudse_core.workspace import create_workspace

    for goal in ("min", "accuracy"):
        ws, _ = create_workspace(f"old {goal}")
        base = ["search", "--table", str(table), "--goal", goal, "--workers", "1", "--batch", "4", "--workspace", ws.id]
        assert main(base + ["--budget", "12"]) == 0
        _forget_surrogate(ws.id)
        capsys.readouterr()
        if goal == "min":
            assert main(base + ["--budget", "16"]) == 2
            err = capsys.readouterr().err
            assert "surrogate: stored 'forest', given 'auto'" in err and "--surrogate forest" in err
            assert main(base + ["--budget", "16", "--surrogate", "forest"]) == 0
        else:
            assert main(base + ["--budget", "16"]) == 0
        assert "resuming the search" in capsys.readouterr().err


def test_cli_refuses_a_space_the_builtin_simulator_does_not_model(capsys):
    assert main(["search", "lee-brooks", "--kernel", "BFS", "--goal", "min", "--budget", "20", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "the built-in simulator needs Stargazer's parameters" in err and "Traceback" not in err


@pytest.mark.slow
def test_cli_command_backend_runs_each_round_as_a_campaign(tmp_path, capsys, monkeypatch):
    """An external simulator (tests/fake_sim.py, as in the campaign tests): each round is a campaign in the
    store next to the history, and a simulator that crashes is a failed design, not a crash of the search."""
    from test_campaign import backend_file

    monkeypatch.chdir(tmp_path)
    cfg = backend_file(tmp_path)
    hist = tmp_path / "h.csv"
    assert main(["search", "stargazer", "--backend", "command", "--config", str(cfg), "--response",
                 "gpu_tot_sim_cycle", "--goal", "min", "--budget", "8", "--initial", "4", "--batch", "2",
                 "--workers", "2", "-o", str(hist), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["evaluated"] == 8 and doc["failed"] == 0 and "gpu_tot_sim_cycle" in doc["best"]
    import sqlite3

    with sqlite3.connect(tmp_path / "h.db") as db:
        names = [r[0] for r in db.execute("SELECT name FROM campaign ORDER BY name")]
    assert names == ["search-00000", "search-00001", "search-00002"]
    crash = backend_file(tmp_path / "c" if (tmp_path / "c").mkdir() is None else tmp_path, mode="crash")
    assert main(["search", "stargazer", "--backend", "command", "--config", str(crash), "--response",
                 "gpu_tot_sim_cycle", "--goal", "min", "--budget", "4", "--initial", "2", "--batch", "2",
                 "--workers", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["evaluated"] == 4 and doc["failed"] == 4 and doc["best"] is None


def test_accuracy_goal_is_the_uniform_sample_where_the_spread_does_not_locate_errors():
    """Pure noise: the forest's spread cannot rank its errors, so the search simulates exactly the
    uniform sample of its budget (the same draw, in the same order) and nothing twice."""
    df = synthetic(fail_a=None)
    df["time_ms"] = np.random.default_rng(0).lognormal(0.0, 0.5, len(df))
    t = LookupTable.from_frame(df, "time_ms", status_column="status")
    res = run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="accuracy", budget=200, batch=10, seed=4)
    uniform = make_pool(t.space, t.digits).initial(200, np.random.default_rng(4))
    got = np.array([t.space.digits_of_point(x.design) for x in res.trials])
    assert np.array_equal(got, uniform)
    assert all(x.acquisition is None for x in res.trials)
    assert res.to_json(["a", "b", "c"])["best"] is None


def test_accuracy_goal_follows_the_spread_with_half_of_each_batch_where_it_locates_errors():
    """The built-in simulator (matMul over Stargazer's space, deterministic): once ACCURACY_START (150)
    designs are simulated the out-of-bag spread ranks the errors, and from then on 3 of each batch of
    10 go to the largest spreads, the rest to the uniform sample."""
    from gpudse_core.search.study import ACCURACY_START
    from gpudse_core.sim.simulator import simulate
    from gpudse_core.space.presets import load_preset

    space = load_preset("stargazer")

    def evaluate(digits, designs):
        return [(float(v), "") for v in simulate(space.frame(np.asarray(digits)), "matMul")["cycles"]]

    budget = ACCURACY_START + 80
    res = run_search(make_pool(space), evaluate, goal="accuracy", budget=budget, batch=10, seed=4)
    designs = [tuple(x.design.values()) for x in res.trials]
    assert len(designs) == len(set(designs)) == budget
    assert all(x.acquisition is None for x in res.trials[:ACCURACY_START])
    followed = [r for r in range(ACCURACY_START // 10, budget // 10)
                if any(x.acquisition is not None for x in res.trials[10 * r:10 * r + 10])]
    assert followed  # the bowl's spread is skilled
    for r in followed:
        batch = res.trials[10 * r:10 * r + 10]
        assert sum(x.acquisition is not None for x in batch) == 3 and all(x.model_version > 0 for x in batch)
        assert all(x.acquisition >= 0 for x in batch[:3])


@pytest.mark.slow
def test_objective_optimises_the_expression_not_the_response(table, tmp_path, capsys):
    """time_ms × a (time per unit of a 'cost' a): its one best design (a=1, b=20, c=x: 8.6) is not the
    fastest design (a=32), so a search that ignored the objective would end elsewhere."""
    df = synthetic()
    ok = df[df.status == "ok"]
    obj = ok.time_ms * ok.a
    best = ok.loc[obj.idxmin()]
    assert (best.a, best.b, best.c) == (1, 20, "x") and (obj < obj.min() * 1.01).sum() == 1
    assert ok.loc[ok.time_ms.idxmin()].a == 32
    hist = tmp_path / "history.csv"
    assert main(["search", "--table", str(table), "--goal", "min", "--objective", "time_ms * a", "--budget", "80",
                 "--batch", "2", "--workers", "1", "--seed", "1", "-o", str(hist), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {k: doc["best"][k] for k in "abc"} == {"a": 1, "b": 20, "c": "x"}
    assert doc["best"]["time_ms"] == pytest.approx(best.time_ms)
    assert doc["best"]["objective"] == pytest.approx(obj.min())
    h = pd.read_csv(hist)
    done = h[h.status == "ok"]
    assert np.allclose(done.objective, done.time_ms * done.a)  # the response and the objective, side by side
    assert sum(x["value"] is None for x in doc["history"]) == (h.status == "failed").sum()


@pytest.mark.slow
def test_objective_is_refused_for_other_goals_and_undefined_values_fail():
    t = LookupTable.from_frame(synthetic(fail_a=None), "time_ms", status_column="status")
    with pytest.raises(SearchError, match="goal min or max"):
        run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="accuracy", budget=20,
                   objective=lambda d, y: y)
    # an objective undefined at some designs (here: every design with b = 0) makes them failed trials
    b = np.array([0, 10, 20, 30, 40, 50, 60, 70], dtype=float)
    res = run_search(make_pool(t.space, t.digits), lookup_eval(t), goal="min", budget=40, seed=0,
                     objective=lambda d, y: np.where(b[np.asarray(d)[:, 1]] == 0, np.nan, y))
    bad = [x for x in res.trials if x.design["b"] == 0]
    assert bad and all(x.status == "failed" and "objective is undefined" in x.error for x in bad)
    assert all(x.measured == x.value for x in res.trials if x.status == "ok")


def _tiny(fn):
    """4 parameters × 6 values (1,296 designs, enumerated) and an evaluator of *fn* over the values."""
    from gpudse_core.space.design import space_from_dict

    space = space_from_dict({"name": "tiny", "parameters": [{"name": n, "values": list(range(1, 7))} for n in "abcd"]})
    every = space.decode_range(0, space.size)
    values = np.array([fn(*(r + 1)) for r in every])

    def evaluate(digits, designs):
        return [(float(fn(*(np.asarray(r) + 1))), "") for r in digits]

    return space, every, values, evaluate


@pytest.mark.slow
def test_stepwise_model_drives_where_it_predicts_better_and_proposes_the_true_best():
    """An objective that is exactly additive on the log scale (a separable bowl): the stepwise model's
    held-out error is significantly below the forest's out-of-bag error, and its first proposal is the
    true best design, which the forest had not found."""
    space, every, values, evaluate = _tiny(lambda a, b, c, d: math.exp(0.1 * (a - 4) ** 2 + 0.08 * (b - 2) ** 2
                                                                        + 0.06 * (c - 5) ** 2 + 0.05 * (d - 3) ** 2))
    best = every[np.argmin(values)] + 1
    assert (values == values.min()).sum() == 1 and best.tolist() == [4, 2, 5, 3]
    res = run_search(make_pool(space), evaluate, goal="min", budget=60, batch=2, seed=0, surrogate="auto")
    wins = [c for c in res.choices if c[2] < c[1] and c[3] < 0.05]
    assert wins, res.choices
    chosen = [t for t in res.trials if t.surrogate == "stepwise"]
    assert chosen and all(t.model_version > 0 and t.acquisition is None and t.predicted is not None for t in chosen)
    assert all(t.predicted is None for t in res.trials if t.model_version == 0)
    # its proposals' intervals come from its own held-out errors (search.intervals), around its prediction
    assert all(t.level == 0.95 and 0 < t.lower < t.predicted < t.upper for t in chosen)
    first = chosen[0]
    assert first.design == {"a": 4, "b": 2, "c": 5, "d": 3}
    assert all(t.value > first.value for t in res.trials[:first.number])  # not found before
    # once the best is simulated, the stepwise model predicts no improvement and proposes nothing more
    assert not [t for t in chosen if t.number > first.number]
    assert all(t.surrogate == "" for t in res.trials if t.model_version == 0)
    # each stepwise batch: one of two proposals, the other the forest's
    for r in {t.round for t in chosen}:
        assert sorted(t.surrogate for t in res.trials if t.round == r) == ["forest", "stepwise"]


@pytest.mark.slow
def test_forest_keeps_the_search_where_it_predicts_better():
    """A three-way threshold (no additive model represents it): the comparison runs, the stepwise
    model never wins it, and every proposal is the forest's, exactly as with surrogate='forest'."""
    space, _, _, evaluate = _tiny(lambda a, b, c, d: 1 + 4 * float(a >= 4 and b >= 4 and c >= 4) + 0.01 * d)
    res = run_search(make_pool(space), evaluate, goal="min", budget=60, batch=2, seed=0, surrogate="auto")
    assert len(res.choices) >= 5 and not any(c[2] < c[1] and c[3] < 0.05 for c in res.choices)
    # every proposal the forest's (or, once the best has stalled, the stall's exploration: test_search_stall.py)
    assert {t.surrogate for t in res.trials} - {"local", "far"} == {"", "forest"}
    alone = run_search(make_pool(space), evaluate, goal="min", budget=60, batch=2, seed=0, surrogate="forest")
    assert [t.design for t in alone.trials] == [t.design for t in res.trials] and not alone.choices
    default = run_search(make_pool(space), evaluate, goal="min", budget=60, batch=2, seed=0)  # auto
    assert [t.design for t in default.trials] == [t.design for t in res.trials] and default.choices
    with pytest.raises(SearchError, match="surrogate"):
        run_search(make_pool(space), evaluate, goal="min", budget=60, surrogate="stepwise")
