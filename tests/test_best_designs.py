"""Decision-grade best designs (explore/designs.py): one row per group of designs the model cannot tell
apart, its exact count and the values of the other parameters, checked against brute force over every
feasible design; simulated designs marked or left out; failed ones never recommended."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from explore_models import TableModel, brute_force_distinct, small_spaces
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
def test_rows_count_their_designs_and_list_the_other_values_exactly(data):
    space = data.draw(small_spaces())
    model = data.draw(table_models(space))
    where = where_of(data.draw, space)
    k = data.draw(st.integers(1, 8))
    expected = brute_force_distinct(model, space, k, where=where)
    if not len(expected):
        return
    got = best_designs(model, space, top=k, where=where, level=None)
    assert got.rows.design_index.tolist() == expected.design_index.tolist()
    assert got.rows.designs.tolist() == expected.designs.tolist()
    every = feasible_frame(space, where)
    used = list(model.parameters)
    used_dims = {d for d, dim in enumerate(space.dimensions) for q in dim.parameters if q.name in used}
    for i, row in got.rows.iterrows():
        same = every
        for p in used:
            same = same[same[p].astype(str) == str(row[p])]
        assert len(same) == row.designs
        for p in space.parameter_names:
            label = got.label(i, p)
            if any(q.name == p for d in used_dims for q in space.dimensions[d].parameters):
                assert p not in got.free[i] and same[p].astype(str).nunique() == 1  # fixed by a group member
                continue
            values = set(same[p].astype(str))
            if len(values) == space.parameter(p).size > 1:
                assert label == ANY
            else:
                assert got.free[i][p] is not None and {str(v) for v in got.free[i][p]} == values


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
    best, shown = sv.value["best"], sv.value["shown"]
    used = sv.value["used"]
    assert len(best) == 5 and not best[used].duplicated().any() and (best.lower < best.upper).all()
    assert list(shown.columns[:3]) == ["predicted cycles", "95 % interval (cycles)", "designs"]
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
def test_simulate_these_on_a_command_backend_appends_its_results(tmp_path, monkeypatch):
    """The dashboard's "Simulate these" path (ui_work.start_simulate_best) on an external command
    simulator (tests/fake_sim.py, GPGPU-Sim-style output): the chosen rows' designs are simulated,
    the predictions stand beside the simulations and the results gain the designs as a new version."""
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
    best = ws.get("scan").value["best"]
    job = ui_work.start_simulate_best(ws, backend, best, every=True, per_row=2)
    assert job.wait(300) and ws.job(job.id).state == "finished", ws.job(job.id).error
    info, shown = ui_work.latest_simulated_best(ws)
    assert len(shown) == 6 and shown.group.tolist() == [0, 0, 1, 1, 2, 2]
    # a noise-free function of blk: the fit reproduces its rows, so no interval is claimed for any design
    assert (shown["in interval"] == "no interval").all() and shown.simulated.notna().all()
    # the fake simulator's cycles depend on blk alone: what it gave is 100000 // (8 blk) + 17
    assert (shown.simulated == 100000 // (8 * shown.blk) + 17).all()
    results = ws.get("results")
    assert len(results.value.table) == 36 and "6 simulated designs added" in results.note
    assert not ws.get("model").ok  # fitted before the new results


@pytest.mark.slow
def test_a_design_the_command_simulator_failed_on_is_recorded_and_never_recommended_again(tmp_path, monkeypatch):
    """The page's "Simulate these" on a command simulator that crashes at 16 blocks per core: the failed
    design is recorded (the page's table says failed, with the reason), the others join the results,
    and the next scan leaves out every row holding the failed design."""
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
    best = ws.get("scan").value["best"]
    assert best.blk.tolist()[0] == 16  # the fastest row: the one the crashing simulator fails on
    crashing = CommandBackend.from_file(backend_file(tmp_path, extra_args=["--crash-cta", "16"]))
    job = ui_work.start_simulate_best(ws, crashing, best)
    assert job.wait(300) and ws.job(job.id).state == "finished", ws.job(job.id).error
    info, shown = ui_work.latest_simulated_best(ws)
    assert shown["in interval"].tolist() == ["failed", "no interval", "no interval"]  # noise-free: no interval
    assert "status 1" in shown.why.iloc[0] and shown.why.iloc[1:].eq("").all()
    assert len(ws.get("results").value.table) == 42  # the two that simulated
    cols = list(space.parameter_names) + ["gpu_tot_sim_cycle"]
    ws.set_model(fit_stepwise(ws.get("results").value.table[cols], "gpu_tot_sim_cycle"), "refit")
    job = ui_work.start_scan(ws, dict(ui_work.EXAMPLE_SCAN, k=3))
    assert job.wait(300) and ws.get("scan").ok
    scan = ws.get("scan").value
    assert 16 not in scan["best"].blk.tolist() and scan["left_out"] == 1
    # without the recorded failure the same scan would recommend it first (it is the fastest)
    plain = ui_work.scan_work(ws.get("model").value, space, dict(ui_work.EXAMPLE_SCAN, k=3),
                              results=ws.get("results").value.table)
    assert plain["best"].blk.tolist()[0] == 16
