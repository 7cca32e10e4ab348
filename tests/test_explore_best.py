"""Exact best designs and Pareto fronts: find_best equals brute force — every feasible
design predicted with model.predict, ties broken by design index — on random spaces (groups,
constraints, --where), random models (tables with exact ties, clipped plateaus, spline models,
a non-additive model), for every scan method, block size and precision."""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from explore_models import StepModel, TableModel, brute_force, brute_force_distinct, random_stepwise, small_spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudse_core import GpudseError, load_preset
from gpudse_core.explore.best import choose_inner, find_best
from gpudse_core.explore.structure import build_structure
from gpudse_core.space.design import DesignSpace, Parameter

CONFIGS = [  # (method, dtype, block): one block, many tiny blocks (branch and bound), float32, every point
    ("exact", None, 1 << 17), ("exact", np.float32, 2), ("exact", np.float64, 5), ("stream", np.float32, 3),
    ("predict", None, 7),
]


@st.composite
def table_models(draw, space: DesignSpace) -> TableModel:
    names = list(space.parameter_names)
    terms = []
    for _ in range(draw(st.integers(1, 4))):
        ps = tuple(draw(st.permutations(names))[:draw(st.integers(1, min(3, len(names))))])
        shape = [space.parameter(p).size for p in ps]
        n = math.prod(shape)
        if draw(st.booleans()):  # small integers: many exact ties between designs
            vals = draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n))
        else:
            vals = draw(st.lists(st.floats(-5, 5, allow_nan=False, width=32), min_size=n, max_size=n))
        terms.append((ps, np.asarray(vals, dtype=float).reshape(shape)))
    model = TableModel(space, draw(st.floats(-3, 3, width=32)), terms, draw(st.sampled_from(["none", "log"])))
    clip = draw(st.sampled_from([None, (0.0, 1.0), (0.3, 1.0), (0.0, 0.7), (0.25, 0.75)]))
    if clip is not None:  # a bound that clips part of the space: plateaus of exactly tied predictions
        z = model.linear(space.frame(space.decode(np.arange(space.size))))
        model.lo, model.hi = float(np.quantile(z, clip[0])), float(np.quantile(z, clip[1]))
    return model


def where_of(draw, space: DesignSpace) -> str | None:
    numeric = [p for p in space.parameters if p.kind == "numeric"]
    if not numeric or draw(st.booleans()):
        return None
    p = draw(st.sampled_from(numeric))
    return f"{p.name} {draw(st.sampled_from(['<=', '>=', '!=']))} {draw(st.sampled_from(p.values))}"


def check_best(model, space, k, maximize, where, configs=CONFIGS):
    expected, _ = brute_force(model, space, k, maximize, where)
    for method, dtype, block in configs:
        if len(expected) == 0:
            with pytest.raises(GpudseError, match="no design"):
                find_best(model, space, top=k, maximize=maximize, where=where, method=method, dtype=dtype, block=block)
            continue
        r = find_best(model, space, top=k, maximize=maximize, where=where, method=method, dtype=dtype, block=block)
        got = r.best
        assert got.design_index.tolist() == expected.design_index.tolist(), (method, dtype, block)
        # the same designs; their values from model.predict on another batch may differ in the last bit
        np.testing.assert_allclose(got.predicted.to_numpy(), expected.predicted.to_numpy(), rtol=1e-12, atol=0)
        pd.testing.assert_frame_equal(got[list(space.parameter_names)], expected[list(space.parameter_names)],
                                      check_dtype=False)
        assert r.complete and r.space_size == space.size


@pytest.mark.slow
@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_top_k_equals_brute_force_on_random_table_models(data):
    space = data.draw(small_spaces())
    model = data.draw(table_models(space))
    check_best(model, space, data.draw(st.integers(1, 12)), data.draw(st.booleans()), where_of(data.draw, space))


def check_distinct(model, space, k, maximize, where, configs=CONFIGS):
    expected = brute_force_distinct(model, space, k, maximize, where)
    for method, dtype, block in configs:
        if len(expected) == 0:
            continue
        r = find_best(model, space, top=k, maximize=maximize, where=where, method=method, dtype=dtype, block=block,
                      distinct=True)
        assert r.best.design_index.tolist() == expected.design_index.tolist(), (method, dtype, block)
        np.testing.assert_allclose(r.best.predicted.to_numpy(), expected.predicted.to_numpy(), rtol=1e-12, atol=0)
        used = list(model.parameters)
        assert not r.best[used].astype(str).duplicated().any()  # never two rows the model cannot tell apart


@pytest.mark.slow
@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_distinct_top_k_equals_grouped_brute_force(data):
    space = data.draw(small_spaces())
    model = data.draw(table_models(space))
    check_distinct(model, space, data.draw(st.integers(1, 12)), data.draw(st.booleans()), where_of(data.draw, space))


@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 1000))
def test_distinct_top_k_of_a_non_additive_model_and_with_a_front(data, seed):
    space = data.draw(small_spaces())
    model = StepModel(space, seed) if data.draw(st.booleans()) else data.draw(table_models(space))
    k = data.draw(st.integers(1, 10))
    expected = brute_force_distinct(model, space, k)
    if len(expected) == 0:
        return
    cost = cost_of(data.draw, space)
    r = find_best(model, space, top=k, pareto=cost, distinct=True)  # the cost's axes split groups into cells
    assert r.best.design_index.tolist() == expected.design_index.tolist()


@pytest.mark.slow
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 2**32 - 1))
def test_top_k_equals_brute_force_on_random_spline_models(data, seed):
    space = data.draw(small_spaces(max_size=5))
    model = random_stepwise(space, np.random.default_rng(seed), transform=data.draw(st.sampled_from(["none", "log"])))
    check_best(model, space, data.draw(st.integers(1, 15)), data.draw(st.booleans()), where_of(data.draw, space))


def test_predict_scan_keeps_ties_whose_last_bits_differ_between_blocks():
    """Found by the property test above: designs 24 and 28 are exactly tied (the model reads neither
    p5 nor p6), but model.predict of a 7-row block gave one of them a value an ulp below the other's,
    so the pool dropped 24 before the final, exact comparison. The pool now keeps values within a
    relative 1e-12 of the cut as candidates."""
    from gpudse_core.space.design import Group

    def num(name, values):
        return Parameter(name=name, values=values, kind="numeric")

    space = DesignSpace(dimensions=(Group(name="g0", members=(num("p0", (0, 1, 2, 3)), num("p1", (0, 1, 2, 3)))),
                                    Parameter(name="p2", values=("v0", "v1"), kind="categorical"),
                                    Group(name="g2", members=(num("p3", (0, 1)), num("p4", (0, 1)))),
                                    Group(name="g3", members=(num("p5", (0, 1)), num("p6", (0, 1))))), name="h")
    model = random_stepwise(space, np.random.default_rng(125527), transform="none")
    expected, _ = brute_force(model, space, 3, False, None)
    assert expected.design_index.tolist() == [26, 27, 24]
    check_best(model, space, 3, False, None)


@pytest.mark.parametrize("transform, values", [("log", (-1.401298464324817e-45, 0.0)),  # exp: both 1.0
                                               ("sqrt", (1e-200, 3e-200))])  # squared: both 0.0
def test_values_the_back_transform_merges_are_ties_the_design_index_decides(transform, values):
    """Found by the property test above: a table value of −1.4e-45 (a float32 denormal) and 0 are two
    values on the log scale but one prediction (exp gives 1.0 for both), so design 0 ties design 1
    and comes first; the pool, comparing on the log scale, had kept only design 1. Its margin now
    covers what the back-transform merges."""
    from gpudse_core.space.design import Group

    space = DesignSpace(dimensions=(Group(name="g0",
                                          members=(Parameter(name="p0", values=("v0", "v1"), kind="categorical"),
                                                   Parameter(name="p1", values=("v0", "v1"), kind="categorical"))),
                                    Parameter(name="p2", values=("v0", "v1"), kind="categorical")), name="h")
    model = TableModel(space, 0.0, [(("p0",), np.array(values))], transform)
    for maximize in (True, False):
        expected, _ = brute_force(model, space, 1, maximize, None)
        assert expected.design_index.tolist() == [0]  # every prediction is equal: the first design
        check_best(model, space, 1, maximize, None)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 1000))
def test_non_additive_model_goes_through_predict_with_ties_by_index(data, seed):
    space = data.draw(small_spaces())
    model = StepModel(space, seed)
    k = data.draw(st.integers(1, 30))
    expected, _ = brute_force(model, space, k)
    r = find_best(model, space, top=k, block=data.draw(st.integers(1, 50)))
    assert r.method == "predict"
    assert r.best.design_index.tolist() == expected.design_index.tolist()


def cost_of(draw, space: DesignSpace) -> str:
    numeric = [p.name for p in space.parameters if p.kind == "numeric"]
    if not numeric:
        return "1"
    a, b = draw(st.permutations(numeric))[0], draw(st.sampled_from(numeric))
    return draw(st.sampled_from([a, f"{a} + 2 * {b}", f"{a} * {b} - {b}", f"{a} / 3 + {b} * 0.1", f"max({a}, {b})"]))


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_pareto_front_equals_brute_force(data):
    space = data.draw(small_spaces())
    model = data.draw(table_models(space))
    cost = cost_of(data.draw, space)
    maximize = data.draw(st.booleans())
    where = where_of(data.draw, space)
    expected_best, expected = brute_force(model, space, 3, maximize, where, cost)
    for method, dtype, block in CONFIGS:
        if len(expected_best) == 0:
            continue
        r = find_best(model, space, top=3, maximize=maximize, pareto=cost, where=where, method=method, dtype=dtype,
                      block=block)
        assert r.pareto.design_index.tolist() == expected.design_index.tolist(), (method, dtype, block, cost)
        np.testing.assert_allclose(r.pareto.cost.to_numpy(), expected.cost.to_numpy(), rtol=0, atol=0)
        np.testing.assert_allclose(r.pareto.predicted.to_numpy(), expected.predicted.to_numpy(), rtol=1e-12, atol=0)
        assert r.best.design_index.tolist() == expected_best.design_index.tolist()


def test_pareto_with_per_value_costs_is_the_sum_of_the_tables():
    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("blk",), np.array([5.0, 3, 2, 1.5, 1.2])), (("blk", "simd"), np.zeros((5, 3)))])
    costs = {"blk": [1, 2, 4, 8, 16], "simd": [0, 1, 2]}
    r = find_best(model, space, top=1, pareto=costs)
    assert r.method == "exact" and r.evaluated == 15
    # blk's cost rises while the prediction falls: every blk value is on the front, at simd's cheapest value
    assert r.pareto.blk.tolist() == [1, 2, 4, 8, 16] and (r.pareto.simd == 8).all()
    assert r.pareto.cost.tolist() == [1, 2, 4, 8, 16] and r.pareto.predicted.tolist() == [5.0, 3, 2, 1.5, 1.2]
    first = {p.name: p.values[0] for p in space.parameters}
    assert r.pareto.design_index.tolist() == [space.index({**first, "blk": b}) for b in (1, 2, 4, 8, 16)]


@pytest.mark.slow
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 2**32 - 1))
def test_float32_scan_keeps_every_candidate_its_rounding_could_hide(data, seed):
    """Values 1e4 apart from zero and differing by 1e-4: float32 cannot order them (its step there is
    1e-3), so only the error margin and the final model.predict order make the answer exact."""
    space = data.draw(small_spaces(constraints=False))
    rng = np.random.default_rng(seed)
    names = list(space.parameter_names)
    terms = [((p,), rng.integers(0, 3, space.parameter(p).size) * 1e-4 + rng.normal(0, 1e-5)) for p in names]
    terms.append(((names[0], names[-1]), rng.normal(0, 3e-4, (space.parameter(names[0]).size,
                                                              space.parameter(names[-1]).size))))
    model = TableModel(space, 1e4, terms)
    k = data.draw(st.integers(1, 10))
    check_best(model, space, k, data.draw(st.booleans()), None,
               configs=[("exact", np.float32, 1 << 17), ("exact", np.float32, 2), ("stream", np.float32, 3)])


# ---- the structure: cells, completions, design indices -----------------------------------------------
@settings(max_examples=150)
@given(st.data())
def test_completions_of_a_cell_are_its_feasible_designs_in_index_order(data):
    space = data.draw(small_spaces())
    where = where_of(data.draw, space)
    used = set(data.draw(st.lists(st.integers(0, len(space.radices) - 1), max_size=3)))
    from gpudse_core.explore.terms import expression_types
    from gpudse_core.space.expr import compile_expression

    expr = compile_expression(where, expression_types(space)) if where else None
    try:
        s = build_structure(space, used, expr, where or "")
    except GpudseError:
        return  # --where leaves nothing: tested with find_best
    digits = space.decode(np.arange(space.size))
    ok = space.feasible_mask(digits)
    if expr is not None:
        ok &= expr.mask(space.columns(digits), space.size)
    assert s.feasible == int(ok.sum())
    weights, w0 = s.weights()
    cells = list(itertools.product(*[range(n) for n in s.sizes]))
    seen = 0
    for cell in cells:
        got = list(s.completions(np.array(cell), limit=10**6))
        fixed = {d: s.axes[s.dim_axis[d][0]].digits[cell[s.dim_axis[d][0]], s.dim_axis[d][1]] for d in used}
        match = ok.copy()
        for d, v in fixed.items():
            match &= digits[:, d] == v
        want = np.flatnonzero(match)
        assert [i for i, _ in got] == want.tolist()
        assert all(np.array_equal(d, digits[i]) for i, d in got)
        first = int(w0[0] + sum(weights[a][v][0] for a, v in enumerate(cell)))
        assert first == want[0]  # the first completion's index is a sum over the axes
        seen += len(want)
    assert seen == s.feasible


def test_spaces_beyond_two_to_the_62_use_several_index_words():
    params = [Parameter(f"x{i}", (0, 1, 2, 3)) for i in range(40)]  # 4**40 = 2**80 points
    space = DesignSpace(tuple(params), name="huge")
    model = TableModel(space, 0.0, [(("x3",), np.array([3.0, 1, 2, 5])), (("x3", "x37"), np.zeros((4, 4))),
                                    (("x20",), np.array([0.0, -1, 0, 0]))])
    r = find_best(model, space, top=6)
    assert r.method == "exact" and r.evaluated == 64 and r.feasible == 4 ** 40
    # the best cell is x3 = 1, x20 = 1 (x37 any); its designs in index order: the last dimensions vary first
    first = {p.name: 0 for p in params}
    want = []
    for tail in itertools.product(range(4), repeat=3):
        want.append({**first, "x3": 1, "x20": 1, "x37": tail[0], "x38": tail[1], "x39": tail[2]})
    want = sorted(want, key=space.index)[:6]
    assert r.best.design_index.tolist() == [space.index(w) for w in want]
    assert all(i > 2 ** 63 for i in r.best.design_index)
    assert (r.best.predicted == 0.0).all() and r.best.x39.tolist() == [0, 1, 2, 3, 0, 1]


def test_the_split_leaves_the_strongest_interactions_inside_blocks():
    sizes = (10, 10, 10, 10)
    f = [((0, 1), np.arange(100.0).reshape(10, 10)), ((2, 3), np.ones((10, 10))), ((1, 2), np.eye(10) * 1e-3)]
    assert choose_inner(sizes, f, target=100) == [0, 1]  # crossing only the weak (1, 2) factor
    assert choose_inner(sizes, f, target=10_000) == [0, 1, 2, 3]


# ---- the presets, at scale -------------------------------------------------------------------------
def lee_brooks_model(groups: int):
    """The benchmark's stepwise models (benchmarks/bench_explore.py): fitted to a response with known
    structure over the first *groups* of Lee & Brooks' parameter groups."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_explore import model_over

    space = load_preset("lee-brooks")
    return space, model_over(space, groups)


@pytest.mark.slow
@pytest.mark.parametrize("groups", [3, 12])
def test_lee_brooks_exact_equals_every_point(groups):
    space, model = lee_brooks_model(groups)
    used = {d for d, dim in enumerate(space.dimensions) for p in dim.parameters if p.name in model.bases}
    assert len(used) == groups
    exact = find_best(model, space, top=20, maximize=groups == 3)
    every = find_best(model, space, top=20, maximize=groups == 3, method="stream")
    assert exact.method == "exact" and every.method == "stream" and every.evaluated == 937_500_000
    assert exact.evaluated < 937_500_000 // 100
    pd.testing.assert_frame_equal(exact.best, every.best)
    frame = space.frame(space.decode(exact.best.design_index.to_numpy()))
    np.testing.assert_array_equal(model.predict(frame), exact.best.predicted)


# ---- progress, stop, errors ------------------------------------------------------------------------
@pytest.mark.slow
def test_progress_reaches_the_total_and_stop_keeps_what_was_done():
    space, model = lee_brooks_model(12)
    seen = []
    full = find_best(model, space, top=5, method="stream", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (937_500_000, 937_500_000) and all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    calls = []
    part = find_best(model, space, top=5, method="stream", stop=lambda: len(calls) > 3 or calls.append(1))
    assert not part.complete and 0 < part.evaluated < 937_500_000 and len(part.best) == 5
    assert part.feasible is None and any("stopped" in n for n in part.notes)
    # the partial answer is the exact answer over the blocks scanned (the first ones, in index order)
    assert part.best.design_index.max() < part.evaluated
    assert (part.best.predicted >= full.best.predicted.iloc[0]).all()


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(where="simd >"), "--where"),
    (dict(where="nosuch > 1"), "unknown name 'nosuch'"),
    (dict(where="simd > 100"), "no design of space 'stargazer' satisfies it"),
    (dict(top=-1), "--top must be"),
    (dict(top=10**9), "explore_top"),
    (dict(top=0), "nothing to find"),
    (dict(pareto="simd +"), "--pareto"),
    (dict(pareto="log(blk - 1)"), "not a finite number"),
    (dict(pareto={"simd": [1, 2]}), "one number per value"),
    (dict(method="fast"), "unknown method"),
])
def test_bad_requests_are_explained(kwargs, fragment):
    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("simd",), np.array([1.0, 2, 3]))])
    with pytest.raises(GpudseError, match=fragment.replace("(", r"\(")):
        find_best(model, space, **kwargs)


def test_a_model_reading_a_parameter_the_space_lacks_is_refused():
    space = load_preset("stargazer")
    model = TableModel(load_preset("lee-brooks"), 0.0, [(("depth",), np.zeros(10))])
    with pytest.raises(GpudseError, match="uses depth, which space 'stargazer' does not have"):
        find_best(model, space)


def test_constraints_too_large_to_enumerate_fall_back_to_every_point(monkeypatch):
    import gpudse_core.explore.structure as structure

    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("simd", "blk"), np.arange(15.0).reshape(3, 5)), (("smp",), np.arange(4.0))])
    where = "simd * blk <= 64 and smp >= 2"
    monkeypatch.setattr(structure, "enumeration_limit", lambda: 10)
    r = find_best(model, space, top=7, where=where)
    assert r.method == "stream" and "enumerate" in r.notes[0] and r.feasible == 933_120 * 9 // 15 * 3 // 4
    with pytest.raises(GpudseError, match="method 'exact' is not possible"):
        find_best(model, space, where=where, method="exact")
    monkeypatch.undo()
    exact = find_best(model, space, top=7, where=where)
    assert exact.method == "exact" and exact.feasible == r.feasible
    pd.testing.assert_frame_equal(exact.best.drop(columns="bounded", errors="ignore"),
                                  r.best.drop(columns="bounded", errors="ignore"))


def test_an_axis_keyed_by_one_integer_equals_the_row_wise_unique():
    """The projection of a part onto its used columns, grouped by a mixed-radix code, is what a
    row-wise unique of the projected rows gives (the path taken when the code would pass int64)."""
    from gpudse_core.explore.structure import Part, _axis

    rng = np.random.default_rng(3)
    radices = [7, 5, 9, 4]
    codes = np.unique(rng.integers(0, math.prod(radices), 600))
    rows = np.stack(np.unravel_index(codes, radices), axis=1).astype(np.int32)  # distinct, in index order
    part = Part((0, 1, 2, 3), rows)
    for cols in ([1], [0, 2], [3, 1], [0, 1, 3], [0, 1, 2, 3]):
        keyed = _axis(0, part, cols, [radices[j] for j in cols])
        if 1 < len(cols) < 4:  # radices whose code passes int64: the row-wise unique
            unique = _axis(0, part, cols, [1 << 62] * len(cols))
            assert keyed.dims == unique.dims
            for name in ("digits", "first", "order", "start"):
                np.testing.assert_array_equal(getattr(keyed, name), getattr(unique, name), err_msg=f"{cols} {name}")
        proj = rows[:, cols]
        assert len(keyed.digits) == len({tuple(r) for r in proj.tolist()})
        for v in range(keyed.size):  # each value's rows: exactly those with its digits, in index order
            members = keyed.order[keyed.start[v]:keyed.start[v + 1]]
            assert (np.diff(members) > 0).all() and keyed.first[v] == members[0]
            np.testing.assert_array_equal(members, np.flatnonzero((proj == keyed.digits[v]).all(axis=1)))
            assert keyed.value_of(keyed.digits[v]) == v  # found by binary search: the values are sorted
        present = set(map(tuple, proj.tolist()))
        absent = [d for d in itertools.product(*(range(radices[j]) for j in cols)) if d not in present]
        assert all(keyed.value_of(d) == -1 for d in absent[:50])


def test_a_joined_component_is_scanned_in_index_order(monkeypatch):
    """A component too large to enumerate is built one dimension at a time, fewest values first, so its
    table is not in index order (here b before a); the designs of a tie are still listed by index."""
    from gpudse_core import limits
    from gpudse_core.space.design import space_from_dict

    with limits.override(feasibility_points=100):
        space = space_from_dict({"name": "j", "parameters": [{"name": "a", "values": "0::1::29"},
                                                            {"name": "b", "values": "0::1::4"},
                                                            {"name": "e", "values": [1, 2]}],
                                 "constraints": ["a + b == 6"]}, "j.yaml")
        comp = space.analysis.components[0]
        assert comp.method == "joined" and comp.table[:, 0].tolist() == [6, 5, 4, 3, 2]  # not index order
        model = TableModel(space, 0.0, [(("e",), np.array([3.0, 1.0]))])  # every (a, b) of a tie
        got = find_best(model, space, top=3)
    want, _ = brute_force(model, space, 3)
    assert got.method == "exact" and got.best["design_index"].tolist() == want["design_index"].tolist() == [29, 37, 45]


@pytest.mark.parametrize("kwargs, fragment", [(dict(top=1, pareto="blk"), "may lie on the Pareto front"),
                                              (dict(top=5), "within the scan's error margin")])
def test_candidate_pools_are_bounded_by_the_limit(kwargs, fragment):
    from gpudse_core import limits

    space = load_preset("stargazer")
    model = TableModel(space, 0.0, [(("blk",), np.array([5.0, 3, 2, 1.5, 1.2]))])
    with limits.override(explore_candidates=3), pytest.raises(GpudseError, match=fragment):
        find_best(model, space, **kwargs)
    assert len(find_best(model, space, **kwargs).best) == kwargs["top"]  # the default limit is ample
