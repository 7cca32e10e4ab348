"""The Search page's core (gpudse_core.search.runner.start_search and its helpers, no Streamlit): the
objective and the cost checked before anything runs, messages naming the page's fields; the model's
estimated error; which stored study a search resumes."""

from __future__ import annotations

import pytest

from gpudse_core.errors import GpudseError
from gpudse_core.search.pool import make_pool
from gpudse_core.search.runner import model_error, same_study, search_settings, start_search, study_differences
from gpudse_core.search.study import run_search
from gpudse_core.space.presets import load_space


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    from gpudse_core.workspace import create_workspace

    ws, _ = create_workspace("search")
    ws.put("space", load_space("stargazer"))
    return ws


@pytest.mark.parametrize("kw,said", [
    (dict(goal="pareto"), "Cost: the goal pareto needs a cost"),
    (dict(goal="min", cost="simd * smp"), "Cost: a cost is for the goal pareto"),
    (dict(goal="accuracy", objective="cycles * simd"), "Objective: an objective is for the goal min or max"),
    (dict(goal="min", objective="cycles * ("), "Objective: 'cycles * (' is not a valid expression"),
    (dict(goal="min", objective="simd * 2"), "Objective 'simd * 2' does not use the response 'cycles'"),
    (dict(goal="max", objective="cycles * area"), "unknown name 'area'"),
    (dict(goal="pareto", cost="simd * __import__('os')"), "Cost"),
    (dict(goal="min", initial_method="sobol"), "initial sample 'sobol'"),
])
def test_start_search_refuses_bad_settings_before_any_job(workspace, kw, said):
    with pytest.raises(GpudseError, match=None) as e:
        start_search(workspace, "BFS", budget=20, batch=4, **kw)
    assert said in str(e.value) and str(e.value).split()[0].rstrip(":") in ("Cost", "Objective", "initial")
    assert not workspace.jobs() and workspace.get("search").value is None


def _evaluate(space):
    from gpudse_core.sim.campaign import AnalyticalBackend

    backend = AnalyticalBackend("BFS")

    def evaluate(digits, designs):
        return [(o.result.get("cycles"), "") for o in backend.run_batch([(i, d, 1) for i, d in enumerate(designs)])]
    return evaluate


@pytest.mark.slow
def test_model_error_is_the_out_of_bag_error_and_falls_as_the_search_learns():
    space = load_space("stargazer")
    res = run_search(make_pool(space), _evaluate(space), goal="min", budget=120, batch=10, seed=2, response="cycles")
    pool = make_pool(space)
    assert model_error(pool, res.trials[:9]) is None  # too few to estimate
    early, late = model_error(pool, res.trials[:20]), model_error(pool, res.trials)
    assert 0 < late < early < 1  # relative errors; more (and nearer) designs, a better model
    # a constant response is predicted exactly out of bag
    flat = [type(t)(**{**t.to_dict(), "value": 5.0}) for t in res.trials[:30]]
    assert model_error(pool, flat) == pytest.approx(0.0, abs=1e-12)


def test_which_stored_study_a_search_resumes():
    space = load_space("stargazer")
    a = search_settings(space, "BFS", "min", 100, 0, initial=10, objective="cycles * simd", batch=4)
    assert same_study(a, {**a, "budget": 200, "batch": 8})  # a larger budget, another batch: resumed
    assert study_differences(a, search_settings(space, "BFS", "min", 100, 1, initial=10, objective="cycles * simd",
                                                batch=4)) == ["seed"]
    assert study_differences(a, search_settings(space, "BFS", "min", 100, 0, initial=10, batch=4)) == ["objective"]
    cli = {k: v for k, v in a.items() if k not in ("initial", "initial_method", "batch")}  # gpudse search's defaults
    assert same_study({**cli, "initial": None}, a)
    assert study_differences({**cli, "initial": None}, {**a, "initial_method": "lhs"}) == ["initial_method"]


def test_a_search_started_on_the_page_is_resumed_by_the_command(workspace, capsys, tmp_path):
    from gpudse_core.cli import main
    from gpudse_core.workspace import open_workspace

    job = start_search(workspace, "BFS", "min", budget=14, batch=2, initial=10)
    assert job.wait(300)
    first = open_workspace(workspace.id).get("search").value.to_stored()["trials"]
    assert len(first) == 14 and all("round" in t for t in first)
    hist = tmp_path / "history.csv"
    assert main(["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--budget", "18", "--initial", "10",
                 "--batch", "2", "--workers", "1", "--workspace", workspace.id, "-o", str(hist)]) == 0
    assert "resuming the search" in capsys.readouterr().err
    trials = open_workspace(workspace.id).get("search").value.to_stored()["trials"]
    assert len(trials) == 18 and trials[:14] == first
    # the resumed trials keep the space's parameter order (blk, cc, tc, …), not the store's
    names = list(load_space("stargazer").parameter_names)
    assert names != sorted(names)
    header = hist.read_text().splitlines()[0].split(",")
    assert [c for c in header if c in names] == names


def test_the_page_resumes_a_stored_forest_study_with_the_forest(workspace):
    """The page has no surrogate field: a study stored with --surrogate forest (or before auto was the
    default) goes on with the forest on the page; a new one uses auto."""
    from gpudse_core.workspace import open_workspace

    space = load_space("stargazer")
    assert search_settings(space, "BFS", "min", 20, 0, initial=10)["surrogate"] == "auto"
    job = start_search(workspace, "BFS", "min", budget=12, batch=2, initial=10)
    assert job.wait(300)
    w = open_workspace(workspace.id, trusted=True)
    doc = w.get("search").value.to_stored()  # as gpudse stores it
    assert doc["settings"]["surrogate"] == "auto"
    doc["settings"].pop("surrogate")  # as stored before the setting existed: it ran the forest
    w.put_analysis("search", doc, inputs=[], origin="an older search", partial=False)
    again = search_settings(space, "BFS", "min", 16, 0, initial=10, batch=2, stored=doc["settings"])
    assert again["surrogate"] == "forest" and same_study(doc["settings"], again)
    job = start_search(workspace, "BFS", "min", budget=16, batch=2, initial=10)
    assert job.wait(300)
    done = open_workspace(workspace.id).get("search").value.to_stored()
    assert len(done["trials"]) == 16 and done["trials"][:12] == doc["trials"]
    assert done["settings"]["surrogate"] == "forest"
    # another seed is another study: a new search, with the default
    other = search_settings(space, "BFS", "min", 16, 1, initial=10, batch=2, stored=doc["settings"])
    assert other["surrogate"] == "auto"
