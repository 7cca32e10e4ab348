"""Work budgets: what an input makes the product do is bounded before the work starts (constraint
evaluation in points × syntax nodes, the refit of an older learner file in trees × rows) and a table
built column by column is written in time proportional to its cells."""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd
import pytest

from gpudse_core import limits
from gpudse_core.csvout import CHUNK_CELLS, frame_text, write_frame
from gpudse_core.space.design import space_from_dict

pytestmark = pytest.mark.filterwarnings("ignore::pandas.errors.PerformanceWarning")


def _space(n_constraints: int, values: int = 45, body: str = "a * b + c * d - a * c + b * d + {i} < 100000 + a*a"):
    return space_from_dict({
        "name": "w", "parameters": [{"name": n, "values": f"1::1::{values}"} for n in "abcd"],
        "constraints": [body.format(i=i) for i in range(n_constraints)]}, "w.yaml")


def test_many_costly_constraints_over_a_large_component_are_probed_not_enumerated():
    # 4.1 M combinations × 200 constraints of 20 nodes: enumerated, about 16 G array operations (minutes)
    s = _space(200)
    t0 = time.perf_counter()
    comp = s.analysis.components[0]
    assert comp.method == "probed" and comp.enumerable  # small enough to enumerate, too costly to evaluate
    assert time.perf_counter() - t0 < 30
    assert any("constraint_work" in n and "and 195 more" in n for n in s.notes)


def test_a_cheap_component_is_still_enumerated_exactly():
    s = _space(2, values=20)
    assert s.analysis.components[0].method == "enumerated" and s.feasible_size == 20 ** 4


def test_constraint_work_is_charged_in_points_times_nodes():
    s = _space(1, values=20)  # 160,000 points; the constraint has 22 nodes
    cost = s._cost([0])
    assert cost == s.conjuncts[0][1].nodes > 10
    with limits.override(constraint_work=20 ** 4 * cost):
        assert _space(1, values=20).analysis.components[0].method == "enumerated"
    with limits.override(constraint_work=20 ** 4 * cost - 1):
        assert _space(1, values=20).analysis.components[0].method != "enumerated"


def test_constraints_too_costly_even_to_probe_are_refused_naming_the_limit():
    with limits.override(constraint_work=4096 * 100):
        with pytest.raises(limits.LimitError, match=r"w\.yaml: the constraints .* on a, b, c, d cost .* syntax nodes "
                                                     r"a point.*constraint_work.*simplify"):
            _space(50).analysis


def _chain(n: int = 7, values: int = 1000):
    names = [f"p{i}" for i in range(n)]
    return space_from_dict({"name": "chain", "parameters": [{"name": p, "values": f"1::1::{values}"} for p in names],
                            "constraints": [" < ".join(names)]}, "chain.yaml")


def test_sampling_by_rejection_is_bounded_before_the_first_draw():
    """A chain of comparisons keeps one random draw in 7! = 5,040: 20,000 points meant ~10^8 draws of
    21 syntax nodes (26 s); refused at once naming sampling_work, while a request within the budget
    is drawn, every point satisfying the chain."""
    from gpudse_core.space.sampling import _blocks, _share, sample

    s = _chain()
    comp = s.analysis.components[0]
    assert comp.method == "probed" and 1 / 7000 < comp.feasible_fraction < 1 / 3500
    nodes = s._cost(list(comp.conjuncts))
    t0 = time.perf_counter()
    with pytest.raises(limits.LimitError, match=r"chain\.yaml: drawing 20,000 points by rejection \(the constraints "
                                                r"on p0, p1, p2, p3, p4, p5, p6 keep about 0\.000\d+ of random draws: "
                                                r".* draws × 21 syntax nodes\).*\(sampling_work\); ask for fewer"):
        sample(s, n=20_000, seed=1)
    assert time.perf_counter() - t0 < 1.0
    share = _share(s, _blocks(s))
    fits = int(limits.current().sampling_work / nodes * share / 1.25)  # the largest request within the budget
    assert 1000 < fits < 20_000
    with pytest.raises(limits.LimitError, match="sampling_work"):
        sample(s, n=fits + 50, seed=1)
    with limits.override(sampling_work=nodes * 60 * 5040):  # a smaller budget: a few draws per point still fit
        got = sample(_chain(), n=40, seed=1).points
    assert len(got) == 40 and (np.diff(got.to_numpy(), axis=1) > 0).all()


def test_a_wide_frame_is_written_in_chunks_of_a_million_cells_not_a_hundred_thousand(monkeypatch, tmp_path):
    df = pd.DataFrame({"a": np.arange(50)})
    for i in range(300):
        df[f"r{i}"] = np.arange(50) * 1.5  # one block per column, as validation builds it
    expected = df.to_csv(index=False)
    seen = []
    real = pd.DataFrame.to_csv
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda self, *a, **k: seen.append(k.get("chunksize")) or real(
        self, *a, **k))
    assert frame_text(df) == expected
    write_frame(df, tmp_path / "w.csv")
    assert (tmp_path / "w.csv").read_text() == expected
    assert seen == [CHUNK_CELLS // 301] * 2 and CHUNK_CELLS // 301 >= 10 * (100_000 // 301)


@pytest.fixture(scope="module")
def old_forest():
    from gpudse_core.model.learners import fit_learner
    from gpudse_core.model.registry import model_to_dict

    rng = np.random.default_rng(0)
    data = pd.DataFrame({"x": rng.uniform(1, 10, 40), "y": rng.uniform(1, 10, 40)})
    data["t"] = data.x * data.y
    d = model_to_dict(fit_learner("forest", data, "t", settings={"n_estimators": 5}))
    return {k: v for k, v in d.items() if k != "fitted"} | {"schema": "gpudse.learner/1"}


def test_an_old_learner_file_is_refused_before_a_costly_refit(old_forest):
    from gpudse_core.model.registry import load_model

    d = dict(old_forest, settings=dict(old_forest["settings"], n_estimators=2000))
    with limits.override(refit_work=2000 * 40 - 1), pytest.raises(
            limits.LimitError, match=r"old\.json: a file of the older gpudse\.learner/1 format is refitted on load: "
                                     r"2,000 trees × 40 training rows.*refit_work.*gpudse fit"):
        load_model(d, "old.json")
    with limits.override(refit_work=5 * 40):
        assert "refitted" in load_model(old_forest, "old.json").notes[0]


@pytest.fixture(scope="module")
def constant():
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"x": rng.uniform(1, 9, 30), "y": rng.uniform(1, 9, 30)})
    d["t"] = 5.0
    return d


CONSTANT = r"column 't' has the same value \(5\) in all 30 training rows, so this model predicts 5 for every design"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["forest", "auto"])
def test_a_model_of_a_constant_response_says_so(constant, name):
    import re

    from gpudse_core.model.registry import fit_model

    m = fit_model(name, constant, "t", ["x", "y"], folds=2)
    assert sum(bool(re.search(CONSTANT, n)) for n in m.notes) == 1  # said once, whichever kind won
    varied = constant.assign(t=constant.x * 2)
    assert not any("same value" in n for n in fit_model("forest", varied, "t", ["x", "y"]).notes)


def test_an_old_learner_file_refitted_on_a_constant_response_warns_and_the_cli_says_it(constant, tmp_path, capsys):
    import json

    from gpudse_core.cli import main
    from gpudse_core.model.learners import fit_learner
    from gpudse_core.model.registry import load_model, model_to_dict

    d = model_to_dict(fit_learner("forest", constant, "t", settings={"n_estimators": 5}))
    old = {k: v for k, v in d.items() if k != "fitted"} | {"schema": "gpudse.learner/1"}
    notes = load_model(old, "old.json").notes
    assert any(re.search(CONSTANT, n) for n in notes) and any("refitted" in n for n in notes)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    constant.to_csv(tmp_path / "p.csv", index=False)
    assert main(["predict", str(path), str(tmp_path / "p.csv"), "-o", str(tmp_path / "out.csv")]) == 0
    assert re.search("note: model: " + CONSTANT, capsys.readouterr().err)


@pytest.mark.slow
def test_the_sampling_page_refuses_a_costly_rejection_request_with_the_limit_named_at_once(tmp_path, monkeypatch):
    """A legal space whose chain of comparisons keeps one draw in 5,040: the Sampling page's request
    for 20,000 points is refused before drawing (sampling_work), the previous samples kept."""
    from gpudse_core.space.design import space_from_dict

    from test_app import button, goto, new_app, ok, texts, ws

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    app = new_app()
    w = ws(app)
    names = [f"p{i}" for i in range(7)]
    chain = space_from_dict({"name": "chain", "parameters": [{"name": p, "values": "1::1::1000"} for p in names],
                             "constraints": [" < ".join(names)]}, "chain.yaml")
    w.set_space(chain, "uploaded chain.yaml")
    goto(app, "Sampling")
    app.number_input[0].set_value(20_000)
    t0 = time.monotonic()
    button(app, "Sample").click().run()
    ok(app, "sample")
    assert time.monotonic() - t0 < 20  # was 26 s of drawing (load 3)
    said = [e for e in texts(app, "error") if "sampling_work" in e]
    assert said and "drawing 20,000 points by rejection" in said[0] and "GPUDSE_CONFIG" in said[0], texts(app, "error")
    assert w.get("samples").value is None or len(w.get("samples").value) != 20_000


# ---- a scan of every point (gpudse explore, the Explore page) -------------------------------------------
def _every_point_case(values: int = 12):
    """A space whose two costly constraints are probed, not enumerated (a small constraint_work), so an
    additive model's scan checks them at every point; an additive model reading all four parameters."""
    from explore_models import TableModel

    with limits.override(constraint_work=500_000):  # enough to probe the group, not to enumerate it
        s = _space(2, values=values)
        assert not s.analysis.exact
    rng = np.random.default_rng(5)
    model = TableModel(s, 1.0, [((p,), rng.normal(size=values)) for p in "abcd"])
    return s, model


def test_a_scan_of_every_point_is_refused_beyond_scan_work_before_it_starts():
    """Explore's scan of every point evaluates the constraints (and --where, and a cost expression) at
    each point; points × syntax nodes beyond scan_work is refused before the scan starts, and a
    request exactly at the limit runs, with the brute-force answer."""
    from explore_models import brute_force

    from gpudse_core.explore.best import check_scan_work, find_best

    s, model = _every_point_case()
    nodes = sum(s.conjuncts[k][1].nodes for k in range(len(s.conjuncts)))
    work = s.size * nodes
    assert work == 12 ** 4 * 88
    calls = []
    with limits.override(scan_work=work - 1):
        for call in (lambda: find_best(model, s, top=5, progress=lambda d, t: calls.append(d)),
                     lambda: check_scan_work(model, s)):
            with pytest.raises(limits.LimitError,
                               match=r"scanning every point of space 'w' evaluates its 2 constraints "
                                     r"\(88 syntax nodes\) at each of its 20,736 points.*1,824,768 is more than the "
                                     r"limit of 1,824,767 \(scan_work\); combine or simplify the constraints"):
                call()
        assert not calls  # refused before the first block
        # a --where is evaluated at every point too: it counts
        with pytest.raises(limits.LimitError, match=r"its 2 constraints and --where \(9\d syntax nodes\)"):
            find_best(model, s, top=5, where="a > 1")
    with limits.override(scan_work=work):
        check_scan_work(model, s)
        got = find_best(model, s, top=5)
    assert got.method == "stream" and got.best["design_index"].tolist() == brute_force(model, s, 5)[0][
        "design_index"].tolist()


def test_a_scan_without_constraints_is_bounded_by_its_points_only():
    from gpudse_core.explore.best import find_best
    from explore_models import TableModel

    s = space_from_dict({"name": "free", "parameters": [{"name": n, "values": "1::1::12"} for n in "abcd"]}, "f.yaml")
    model = TableModel(s, 0.0, [(("a",), np.arange(12.0))])
    with limits.override(scan_work=1):
        assert find_best(model, s, top=3, method="stream").method == "stream"  # no expression at any point
        with pytest.raises(limits.LimitError, match=r"--where \(\d+ syntax nodes\).*scan_work"):
            find_best(model, s, top=3, method="stream", where="a > 1")


@pytest.mark.slow
def test_the_explore_page_refuses_a_scan_beyond_scan_work_before_starting_it(tmp_path, monkeypatch):
    """A forest (not additive) over a constrained space is scanned point by point, its constraint
    checked at each: beyond scan_work the Explore page's Recompute says so (st.error naming the limit)
    at once, starts no job and keeps the last scan; at the limit it runs."""
    from gpudse_core.explore.terms import expression_types
    from gpudse_core.model.learners import fit_learner
    from gpudse_core.space.expr import compile_expression
    from gpudse_core.space.sampling import sample

    from test_app import goto, new_app, ok, texts, wait_jobs, ws

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    app = new_app()
    w = ws(app)
    doc = w.get("space").value.to_dict()
    space = space_from_dict({**doc, "constraints": ["simd * blk <= 64"]}, "constrained.yaml")
    results = w.get("results").value
    params = list(space.parameter_names)
    table = results.table[(results.table.simd * results.table.blk) <= 64]  # the example's results that fit
    w.set_space(space, "uploaded constrained.yaml")
    w.set_samples(sample(space, n=300, seed=1), "test")
    w.set_results(table.reset_index(drop=True), results.response, app_column=None)
    w.set_model(fit_learner("forest", table[params + [results.response]], results.response, params,
                            settings={"n_estimators": 5}), "a forest")
    before = w.get("scan")
    assert before.value is not None and not before.ok  # the example's scan, out of date
    jobs = len(w.jobs())
    goto(app, "Explore")
    nodes = compile_expression("simd * blk <= 64", expression_types(space), "c").nodes
    work = space.size * nodes
    with limits.override(scan_work=work - 1):
        app.button(key="fix_scan").click().run()
        ok(app, "recompute beyond scan_work")
        said = [e for e in texts(app, "error") if "scan_work" in e]
        assert said and f"at each of its {space.size:,} points" in said[0] and "GPUDSE_CONFIG" in said[0], \
            texts(app, "error")
        assert len(w.jobs()) == jobs and w.get("scan").version == before.version  # no job started; the last scan kept
    with limits.override(scan_work=work):
        app.button(key="fix_scan").click().run()
        ok(app, "recompute at scan_work")
        wait_jobs(app)
    scan = w.get("scan")
    assert scan.ok and scan.version > before.version and scan.value.method == "predict"
    assert not [e for e in texts(app, "error") if "scan_work" in e]
