"""Decision-grade best designs (explore/designs.py): one row per group of designs the model cannot tell
apart, its exact count and the values of the other parameters, checked against brute force over every
feasible design; simulated designs marked or left out; failed ones never recommended."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from explore_models import TableModel, brute_force_by_prediction, small_spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_explore_best import table_models, where_of

from gpudse_core import GpudseError, load_preset
from gpudse_core.explore.designs import ANY, best_designs
from gpudse_core.explore.terms import expression_types
from gpudse_core.space.expr import compile_expression


def feasible_frame(space, where=None) -> pd.DataFrame:
    idx = np.arange(space.size)
    digits = space.decode(idx)
    ok = space.feasible_mask(digits)
    if where:
        ok &= compile_expression(where, expression_types(space)).mask(space.columns(digits), len(idx))
    return space.frame(digits[ok]).assign(design_index=idx[ok])


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rows_are_the_distinct_predictions_their_designs_and_values_exactly(data):
    """One row per prediction, against every feasible design grouped by its prediction: the count, the
    values each parameter takes ('any': all of them) and the design shown by the stated rule."""
    space = data.draw(small_spaces())
    model = data.draw(table_models(space))
    where = where_of(data.draw, space)
    k = data.draw(st.integers(1, 8))
    expected = brute_force_by_prediction(model, space, k, where=where)
    if not expected:
        return
    got = best_designs(model, space, top=k, where=where, level=None)
    assert got.rows.predicted.tolist() == [e["predicted"] for e in expected]
    assert got.rows.design_index.tolist() == [e["shown"] for e in expected]
    assert got.rows.designs.tolist() == [len(e["designs"]) for e in expected]
    for i, e in enumerate(expected):
        same = e["designs"]
        for p in space.parameter_names:
            values = set(same[p].astype(str))
            label = got.label(i, p)
            if len(values) == space.parameter(p).size > 1:
                assert label == ANY
            elif len(values) == 1:
                assert label == _fmt(got.rows[p].iloc[i]) and {str(got.rows[p].iloc[i])} == values
            else:
                assert {str(v) for v in got.free[i][p]} == values


def _fmt(v):
    from gpudse_core.fmt import fmt_value

    return fmt_value(v)


def test_simulated_designs_are_marked_or_left_out_and_failures_never_recommended():
    space = load_preset("stargazer")
    blk = np.array([5.0, 3, 2, 1.5, 1.2])
    model = TableModel(space, 0.0, [(("blk",), blk), (("simd",), np.array([0.0, 0.1, 0.2]))])
    model.response = "cycles"
    base = {p.name: p.values[0] for p in space.parameters}
    plain = best_designs(model, space, top=4, level=None)  # blk 16 < 8 < …, simd 8 < 16 < 32
    assert plain.rows.blk.tolist() == [16, 16, 16, 8] and plain.rows.simd.tolist() == [8, 16, 32, 8]
    assert (plain.rows.designs == space.size // 15).all() and (plain.rows.simulated == 0).all()
    results = pd.DataFrame([{**base, "blk": 16, "simd": 8, "cycles": 1.1},
                            {**base, "blk": 16, "simd": 8, "cc": 32, "cycles": 1.3},  # the same group
                            {**base, "blk": 16, "simd": 16, "cycles": 1.0, "status": "failed"},
                            {**base, "blk": 4, "simd": 8, "cycles": np.nan}])  # a missing response: failed too
    marked = best_designs(model, space, top=3, results=results, level=None)
    # the failed group (blk 16, simd 16) is never recommended; the simulated one is marked with its mean
    assert list(zip(marked.rows.blk, marked.rows.simd)) == [(16, 8), (16, 32), (8, 8)]
    assert marked.rows.simulated.tolist() == [2, 0, 0]
    assert marked.rows.measured.iloc[0] == pytest.approx(1.2) and marked.rows.measured.iloc[1:].isna().all()
    assert marked.left_out == 1
    fresh = best_designs(model, space, top=3, results=results, exclude_simulated=True, level=None)
    assert list(zip(fresh.rows.blk, fresh.rows.simd)) == [(16, 32), (8, 8), (8, 16)]
    assert (fresh.rows.simulated == 0).all() and fresh.left_out == 2


def test_the_scans_structure_counts_the_groups_it_is_not_built_twice(monkeypatch):
    """best_designs counts each group's designs on the structure the exact scan enumerated (the same
    used parameters and where), not on a second one (about 0.5 s on a 4.1 M-design group); with a
    Pareto cost the scan's structure holds the cost's parameters too, and the groups get their own."""
    import gpudse_core.explore.best as best_mod
    import gpudse_core.explore.designs as designs_mod

    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("blk",), np.array([5.0, 3, 2, 1.5, 1.2])),
                                    (("simd",), np.array([0.0, 0.1, 0.2]))])
    built = []
    real = best_mod.build_structure

    def counting(space_, used, *a, **kw):
        built.append(frozenset(used))
        return real(space_, used, *a, **kw)

    monkeypatch.setattr(best_mod, "build_structure", counting)
    monkeypatch.setattr(designs_mod, "build_structure", counting)
    got = best_designs(model, space, top=4, level=None, where="simd != 32")
    assert len(built) == 1
    assert got.rows.designs.tolist() == [space.size // 15] * 4  # every (blk, simd) group: 1/15 of the space
    built.clear()
    best_designs(model, space, top=2, level=None, pareto="cc")
    assert len(built) == 2 and len(set(built)) == 2  # the front's scan (with cc) and the groups' scan, reused


def test_a_failed_group_is_left_off_the_pareto_front_too():
    space = load_preset("stargazer")
    blk = np.array([5.0, 3, 2, 1.5, 1.2])
    model = TableModel(space, 0.0, [(("blk",), blk)])
    model.response = "cycles"
    cost = "blk"  # cheaper with fewer blocks, slower: every blk value is on the front
    plain = best_designs(model, space, top=2, pareto=cost, level=None)
    front = sorted(plain.result.pareto.blk.tolist())
    assert 16 in front and len(front) >= 2
    base = {p.name: p.values[0] for p in space.parameters}
    results = pd.DataFrame([{**base, "blk": 16, "cycles": np.nan, "status": "failed"}])
    marked = best_designs(model, space, top=2, pareto=cost, results=results, level=None)
    assert 16 not in marked.result.pareto.blk.tolist()
    assert sorted(marked.result.pareto.blk.tolist()) == [b for b in front if b != 16]
    assert 16 not in marked.rows.blk.tolist()
    assert any("Pareto front are left out" in n for n in marked.notes)


def test_an_interpolating_fit_gets_no_interval_of_zero_width():
    from gpudse_core.model.stepwise import fit_stepwise

    space = load_preset("stargazer")
    rng = np.random.default_rng(3)
    data = space.frame(space.decode(rng.choice(space.size, 120, replace=False)))
    exact = data.assign(cycles=1000.0 + 37.0 * data.simd)  # noise-free, and linear in what it reads
    model = fit_stepwise(exact, "cycles")
    found = best_designs(model, space, top=3)
    assert found.level is None and found.rows.lower.isna().all() and found.rows.upper.isna().all()
    assert any("reproduces its rows" in n for n in found.notes)
    noisy = exact.assign(cycles=exact.cycles * (1 + 0.01 * rng.standard_normal(len(exact))))
    found = best_designs(fit_stepwise(noisy, "cycles"), space, top=3)
    assert found.level == 0.95 and (found.rows.lower < found.rows.upper).all()


def test_results_without_the_used_parameters_are_refused():
    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("blk",), np.arange(5.0))])
    model.response = "cycles"
    with pytest.raises(GpudseError, match="lacks the column"):
        best_designs(model, space, top=2, results=pd.DataFrame({"simd": [8], "cycles": [1.0]}))


@pytest.mark.slow
def test_the_report_and_the_explore_scan_show_grouped_rows_with_intervals(tmp_path, monkeypatch):
    from dashboard import work as ui_work

    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.workspace import create_workspace
    from gpudse_core.workspace.example import fill_example

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    ws, _ = create_workspace()
    fill_example(ws)
    job = ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=5))
    assert job.wait(300)
    sv = ws.get("scan")
    assert sv.ok and set(sv.inputs) == {"model", "space", "results"}
    best, shown = sv.value.best, sv.value.shown
    used = sv.value.used
    assert len(best) == 5 and not best[used].duplicated().any() and (best.lower < best.upper).all()
    assert list(shown.columns[:4]) == ["predicted cycles", "95 % interval (cycles)", "distinguishable from best",
                                       "designs"]
    assert best.predicted.is_unique and shown["distinguishable from best"].iloc[0] == "(best)"
    assert set(shown["distinguishable from best"].iloc[1:]) <= {"yes", "no"}
    html = workspace_report(ws)
    table = html[html.index("<h3>Best designs"):]
    table = table[:table.index("</table>")]
    assert "95 % interval (cycles)" in table and ">any<" in table and "designs" in table
    assert "True" not in table and "False" not in table and "bounded" not in table and "design_index" not in table


def test_group_designs_lists_a_rows_feasible_designs_in_index_order():
    from gpudse_core.explore.designs import group_designs

    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("blk", "simd"), np.arange(15.0).reshape(5, 3))])
    found = best_designs(model, space, top=2, level=None)
    listed = group_designs(space, found.used, found.rows, limit=50, where="cc <= 8")
    assert listed.groupby("group").size().tolist() == [50, 50]
    for g, part in listed.groupby("group"):
        row = found.rows.iloc[g]
        assert (part.blk == row.blk).all() and (part.simd == row.simd).all() and (part.cc <= 8).all()
        assert part.design_index.is_monotonic_increasing
        every = feasible_frame(space, "cc <= 8")
        every = every[(every.blk == row.blk) & (every.simd == row.simd)]
        assert part.design_index.tolist() == every.design_index.iloc[:50].tolist()


@pytest.mark.slow
def test_simulate_these_on_a_command_backend_checks_then_adds_its_results(tmp_path, monkeypatch):
    """The dashboard's "Simulate these" path (ui_work.start_simulate_best) on an external command
    simulator (tests/fake_sim.py, GPGPU-Sim-style output): the chosen rows' designs are simulated and
    the predictions stand beside the simulations as a check that leaves the results and the model
    current; "Add these to the results and refit" then gives the results the designs (a new version)."""
    from dashboard import work as ui_work
    from test_campaign import backend_file

    from gpudse_core import sample
    from gpudse_core.model.stepwise import fit_stepwise
    from gpudse_core.sim.campaign import CommandBackend, run_campaign
    from gpudse_core.sim.store import CampaignStore
    from gpudse_core.workspace import create_workspace

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    space = load_preset("stargazer")
    backend = CommandBackend.from_file(backend_file(tmp_path))
    pts = sample(space, 30, seed=1).points
    with CampaignStore(tmp_path / "c.db", name="first") as store:
        store.open({**backend.spec()}, pts)
        run_campaign(store, backend, workers=2)
        table = store.table().drop(columns=["status", "attempts", "error"])
    ws, _ = create_workspace()
    ws.set_space(space, "stargazer")
    ws.set_results(table, "gpu_tot_sim_cycle", "fake simulator")
    ws.set_model(fit_stepwise(table[list(space.parameter_names) + ["gpu_tot_sim_cycle"]], "gpu_tot_sim_cycle"), "fit")
    job = ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=3))
    assert job.wait(300) and ws.get("scan").ok
    best = ws.get("scan").value.best
    job = ui_work.start_simulate_best(ws, backend, best, every=True, per_row=2)
    assert job.wait(300) and ws.job(job.id).state == "finished", ws.job(job.id).error
    check = ui_work.latest_simulated_best(ws)
    shown = check.table
    assert len(shown) == 6 and check.simulated == 6 and check.judged == 0 and shown.group.tolist() == [0, 0, 1, 1, 2, 2]
    # a noise-free function of blk: the fit reproduces its rows, so no interval is claimed for any design
    assert (shown["in interval"] == "no interval").all() and shown.simulated.notna().all()
    # the fake simulator's cycles depend on blk alone: what it gave is 100000 // (8 blk) + 17
    assert (shown.simulated == 100000 // (8 * shown.blk) + 17).all()
    assert len(ws.get("results").value.table) == 30 and ws.get("model").ok and ws.get("scan").ok  # confirmed
    job = ui_work.start_add_check(ws)
    assert job.wait(300) and ws.job(job.id).state == "finished", ws.job(job.id).error
    results = ws.get("results")
    assert len(results.value.table) == 36 and "6 simulated designs added" in results.note
    assert ws.get("model").ok and ws.get("model").value.n == 36 and ws.get("scan").ok  # refitted, rescanned


@pytest.mark.slow
def test_a_design_the_command_simulator_failed_on_is_recorded_and_never_recommended_again(tmp_path, monkeypatch):
    """The page's "Simulate these" on a command simulator that crashes at 16 blocks per core: the failed
    design is recorded (the page's table says failed, with the reason), the others stand beside their
    predictions, and the next scan leaves out every row holding the failed design."""
    from dashboard import work as ui_work
    from test_campaign import backend_file

    from gpudse_core import sample
    from gpudse_core.model.stepwise import fit_stepwise
    from gpudse_core.sim.campaign import CommandBackend
    from gpudse_core.workspace import create_workspace

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    space = load_preset("stargazer")
    table = sample(space, 40, seed=2).points
    table = table.assign(gpu_tot_sim_cycle=100000 // (8 * table.blk) + 17.0)  # what the fake simulator prints
    ws, _ = create_workspace()
    ws.set_space(space, "stargazer")
    ws.set_results(table, "gpu_tot_sim_cycle", "fake simulator")
    ws.set_model(fit_stepwise(table[list(space.parameter_names) + ["gpu_tot_sim_cycle"]], "gpu_tot_sim_cycle"), "fit")
    job = ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=3))
    assert job.wait(300) and ws.get("scan").ok
    best = ws.get("scan").value.best
    assert best.blk.tolist()[0] == 16  # the fastest row: the one the crashing simulator fails on
    crashing = CommandBackend.from_file(backend_file(tmp_path, extra_args=["--crash-cta", "16"]))
    job = ui_work.start_simulate_best(ws, crashing, best)
    assert job.wait(300) and ws.job(job.id).state == "finished", ws.job(job.id).error
    check = ui_work.latest_simulated_best(ws)
    shown = check.table
    # noise-free: no interval
    assert shown["in interval"].tolist() == ["failed", "no interval", "no interval"] and len(check.failed) == 1
    assert "status 1" in shown.why.iloc[0] and shown.why.iloc[1:].eq("").all()
    assert len(ws.get("results").value.table) == 40  # a check: the results are not changed
    cols = list(space.parameter_names) + ["gpu_tot_sim_cycle"]
    ws.set_model(fit_stepwise(ws.get("results").value.table[cols], "gpu_tot_sim_cycle"), "refit")
    job = ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=3))
    assert job.wait(300) and ws.get("scan").ok
    scan = ws.get("scan").value
    assert 16 not in scan.best.blk.tolist() and scan.left_out == 1
    # without the recorded failure the same scan would recommend it first (it is the fastest)
    plain = ui_work.scan_work(ws.get("model").value, space, dict(ui_work.EXAMPLE_SCAN, k=3),
                              results=ws.get("results").value.table)
    assert plain.best.blk.tolist()[0] == 16


def test_a_level_cell_no_longer_repeats_one_design_over_six_rows():
    """A level cell (blk = 1 & tc = 4) makes tc matter only at blk = 1. At blk = 16 the six values of tc
    give one prediction: the groups of equal read parameters were six rows with one prediction and
    interval (one design simulated five times); rows of one prediction are now one row, tc 'any'."""
    from gpudse_core.explore.best import find_best

    space = load_preset("stargazer")
    cell = np.zeros((5, 6))
    cell[0, 2] = 0.5  # blk = 1 & tc = 4 (positions of 1 and 4)
    model = TableModel(space, 0.0, [(("blk",), np.array([5.0, 3, 2, 1.5, 1.2])), (("blk", "tc"), cell)])
    model.response = "cycles"
    groups = find_best(model, space, top=8, distinct=True).best  # what the rows were
    assert groups.blk.tolist()[:6] == [16] * 6 and groups.predicted.iloc[:6].nunique() == 1
    got = best_designs(model, space, top=3, level=None)
    assert got.rows.predicted.is_unique and got.rows.blk.tolist() == [16, 8, 4]
    assert got.label(0, "tc") == ANY and got.label(0, "blk") == "16"
    assert got.rows.designs.iloc[0] == space.size // 5  # every design with blk = 16
    # the shown design: every other parameter at the middle of its sorted values (ties: the lower)
    middle = {"cc": 4, "tc": 4, "smp": 2, "ccp": 2, "simd": 16, "mshr": 2, "dramq": 32, "intra": 2, "inter": 4}
    assert {p: got.rows[p].iloc[0] for p in middle} == middle


def _cus_space(values):
    from gpudse_core.space.design import DesignSpace, Parameter

    return DesignSpace((Parameter("cus", tuple(values)), Parameter("freq", (500, 1000, 1500))), name="mgpu")


@pytest.mark.parametrize("order", ["listed", "reversed", "shuffled"])
def test_a_20_way_tie_is_one_row_whose_design_does_not_follow_the_value_order(order):
    """A model that reads cus only where it makes no difference ties the 20 GPU sizes: one row, cus
    'any', and the design shown is the middle size (40 of 4 … 80), however the space lists the sizes;
    the first in index order (what was shown before) would be whichever size the file lists first."""
    sizes = list(range(4, 84, 4))
    if order == "reversed":
        sizes = sizes[::-1]
    elif order == "shuffled":
        sizes = [sizes[i] for i in np.random.default_rng(0).permutation(20)]
    space = _cus_space(sizes)
    model = TableModel(space, 0.0, [(("cus",), np.zeros(20)), (("freq",), np.array([3.0, 2.0, 1.0]))])
    model.response = "cycles"
    got = best_designs(model, space, top=2, level=None)
    assert got.rows.predicted.tolist() == [1.0, 2.0] and got.rows.designs.tolist() == [20, 20]
    assert got.label(0, "cus") == ANY and got.rows.freq.iloc[0] == 1500
    assert got.rows.cus.tolist() == [40, 40]
    assert got.rows.design_index.iloc[0] == space.index({"cus": 40, "freq": 1500})
    # a simulated design comes first: the one differing from it in the fewest parameters
    results = pd.DataFrame([{"cus": 64, "freq": 500, "cycles": 3.0}])
    near = best_designs(model, space, top=2, level=None, results=results)
    assert near.rows.cus.tolist() == [64, 64] and near.rows.freq.tolist() == [1500, 1000]


def test_an_interval_overlapping_the_best_rows_is_not_distinguishable():
    from gpudse_core.model.stepwise import fit_stepwise

    space = load_preset("stargazer")
    rng = np.random.default_rng(3)
    pts = space.frame(space.decode(rng.choice(space.size, 200, replace=False)))
    blk = pts.blk.map({1: 5.0, 2: 3.0, 4: 2.0, 8: 1.5, 16: 1.2}).to_numpy()
    data = pts.assign(cycles=np.exp(blk + rng.normal(0, 0.05, len(pts))))
    model = fit_stepwise(data, "cycles", transform="log")
    got = best_designs(model, space, top=5)
    r = got.rows
    assert r.distinguishable.iloc[0] == False  # noqa: E712  (the best row itself)
    for i in range(1, len(r)):
        apart = r.lower.iloc[i] > r.upper.iloc[0] or r.upper.iloc[i] < r.lower.iloc[0]
        assert bool(r.distinguishable.iloc[i]) == apart
    assert r.distinguishable.iloc[1:].any() and not r.distinguishable.iloc[1:].all()  # (both kinds here)
    shown = got.display(space, "cycles")["distinguishable from best"].tolist()
    assert shown[0] == "(best)" and shown[1:] == ["yes" if v else "no" for v in r.distinguishable.iloc[1:]]


def test_rows_beyond_two_to_the_63_designs_are_counted_exactly():
    """4**40 designs; the model reads x3, x20 and x37 (through a zero term): the best row (x3 = 1, x20 = 1)
    stands for 4**38 designs, and the tie 1 + 0 = 2 - 1 makes the second row two groups in one."""
    from gpudse_core.space.design import DesignSpace, Parameter

    space = DesignSpace(tuple(Parameter(f"x{i}", (0, 1, 2, 3)) for i in range(40)), name="huge")
    model = TableModel(space, 0.0, [(("x3",), np.array([3.0, 1, 2, 5])), (("x3", "x37"), np.zeros((4, 4))),
                                    (("x20",), np.array([0.0, -1, 0, 0]))])
    model.response = "cycles"
    got = best_designs(model, space, top=2, level=None)
    assert got.rows.predicted.tolist() == [0.0, 1.0]
    assert got.rows.designs.tolist() == [4 ** 38, 4 * 4 ** 38]  # x3 = 1 & x20 ≠ 1, and x3 = 2 & x20 = 1
    assert got.label(0, "x37") == ANY and got.label(1, "x3") == "1, 2" and got.label(1, "x20") == ANY
    assert got.rows.x0.tolist() == [1, 1]  # the middle of 0 … 3 (ranks 1 and 2 tie: the lower)
