"""Sampling (Stargazer §5.1): request forms, reproducibility, uniqueness, constraints, uniformity, LHS."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import stats

import gpudse_core.space.sampling as sampling_mod
from gpudse_core import Constraint, DesignSpace, Parameter, SamplingError, SpaceError, load_preset, sample, sample_size


def grid(radices, constraints=()):
    return DesignSpace(tuple(Parameter(f"p{i}", tuple(range(m))) for i, m in enumerate(radices)),
                       constraints=tuple(Constraint(c) for c in constraints))


@pytest.fixture(scope="module")
def stargazer():
    return load_preset("stargazer")


def test_three_request_forms(stargazer):
    assert len(sample(stargazer, 300, seed=1)) == 300
    # 0.03% of 933,120 (the paper's "fewer than 300 simulations (0.03% of the space)")
    assert len(sample(stargazer, fraction=0.0003, seed=1)) == round(0.0003 * 933_120) == 280
    per_dim = math.prod(math.ceil(0.5 * m) for m in stargazer.radices)
    assert sample_size(stargazer, per_dim_fraction=0.5) == per_dim == 3 * 3 * 3 * 2 * 2 * 2 * 2 * 2 * 2 * 2
    assert len(sample(stargazer, per_dim_fraction=0.5, seed=1)) == per_dim


def test_subgrid_reading(stargazer):
    s = sample(stargazer, per_dim_fraction=0.5, per_dim_mode="subgrid", seed=4)
    assert len(s) == 3 * 3 * 3 * 2 * 2 * 2 * 2 * 2 * 2 * 2
    for p in stargazer.parameters:
        assert s.points[p.name].nunique() == math.ceil(0.5 * p.size)
    assert len(set(s.indices.tolist())) == len(s)


def test_reproducible_from_seed(stargazer):
    a, b, c = (sample(stargazer, 200, seed=s) for s in (7, 7, 8))
    assert a.points.equals(b.points) and (a.indices == b.indices).all()
    assert not a.points.equals(c.points)
    la, lb = (sample(stargazer, 200, seed=7, method="lhs") for _ in range(2))
    assert la.points.equals(lb.points)


def test_points_and_indices_agree(stargazer):
    s = sample(stargazer, 50, seed=3)
    for i, row in zip(s.indices, s.points.to_dict(orient="records")):
        assert stargazer.point(int(i)) == row


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"n": 933_121}, r"933,121 points requested but the space has only 933,120 points"),
        ({"n": 0}, r"at least 1"),
        ({"n": -5}, r"at least 1"),
        ({"n": 2.5}, r"whole number"),
        ({"fraction": 0.0}, r"\(0, 1\]"),
        ({"fraction": 1.5}, r"\(0, 1\]"),
        ({"per_dim_fraction": -0.1}, r"\(0, 1\]"),
        ({"n": 10, "fraction": 0.1}, r"exactly one way"),
        ({}, r"exactly one way"),
        ({"n": 10, "method": "sobol"}, r"unknown sampling method"),
        ({"n": 10, "seed": -1}, r"non-negative"),
        ({"per_dim_fraction": 0.5, "per_dim_mode": "grid"}, r"unknown per-dimension mode"),
    ],
)
def test_bad_requests(stargazer, kwargs, pattern):
    with pytest.raises(SamplingError, match=pattern):
        sample(stargazer, **kwargs)


def test_too_many_for_constrained_space():
    s = grid([4, 4, 3], ["p0 >= p1"])
    assert s.feasible_size == 10 * 3
    with pytest.raises(SamplingError, match="only 30 feasible points"):
        sample(s, 31)
    assert len(set(sample(s, 30, seed=0).indices.tolist())) == 30


@st.composite
def constrained_space(draw):
    radices = draw(st.lists(st.integers(1, 7), min_size=1, max_size=6))
    cons = []
    if len(radices) >= 2 and draw(st.booleans()):
        cons.append(f"p0 + p1 >= {draw(st.integers(0, 4))}")
    if len(radices) >= 3 and draw(st.booleans()):
        cons.append(f"p2 != {draw(st.integers(0, 6))} or p0 == 0")
    return radices, cons


@given(spec=constrained_space(), data=st.data(), method=st.sampled_from(["uniform", "lhs"]),
       dense=st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_samples_are_unique_feasible_and_complete(spec, data, method, dense):
    radices, cons = spec
    s = grid(radices, cons)
    try:
        feasible = s.feasible_size
    except SpaceError:
        return  # unsatisfiable draw: covered by test_space
    n = data.draw(st.integers(1, feasible))
    old = sampling_mod.DENSE_LIMIT
    sampling_mod.DENSE_LIMIT = old if dense else 0  # exercise both the dense and the sparse path
    try:
        res = sample(s, n, seed=data.draw(st.integers(0, 2**32)), method=method)
    finally:
        sampling_mod.DENSE_LIMIT = old
    idx = [int(i) for i in res.indices]
    assert len(idx) == n == len(set(idx))
    digits = s.decode(idx)
    assert s.feasible_mask(digits).all()
    assert res.points.equals(s.frame(digits))


def test_huge_space_sampling():
    s = grid([1000] * 10)  # 10**30 points
    res = sample(s, 1000, seed=5)
    assert res.indices.dtype == object and len(set(res.indices.tolist())) == 1000
    assert all(0 <= i < 10**30 for i in res.indices)
    assert s.point(res.indices[17]) == res.points.iloc[17].to_dict()


def test_whole_space_is_a_permutation():
    s = grid([3, 4, 2])
    res = sample(s, 24, seed=1)
    assert sorted(int(i) for i in res.indices) == list(range(24))


# ---- uniformity ---------------------------------------------------------------------------------
def test_chi_square_per_value_frequencies(stargazer):
    res = sample(stargazer, 20_000, seed=2026)
    for p in stargazer.parameters:
        counts = res.points[p.name].value_counts().reindex(list(p.values)).to_numpy()
        assert counts.sum() == 20_000
        pval = stats.chisquare(counts).pvalue
        assert pval > 1e-3, (p.name, counts, pval)


def test_chi_square_has_power_against_a_biased_sampler(stargazer):
    # The same test must reject a sampler that under-draws one value by ~8%: it is not vacuous.
    res = sample(stargazer, 40_000, seed=2026)
    simd = res.points["simd"].to_numpy()
    drop = (simd == 8) & (np.random.default_rng(0).random(simd.size) < 0.08)
    counts = np.array([np.sum(simd[~drop] == v) for v in (8, 16, 32)])
    assert stats.chisquare(counts).pvalue < 1e-3


def test_uniform_over_feasible_points_not_raw_space():
    # 30 feasible points; each should be chosen equally often over many small samples.
    s = grid([4, 4, 3], ["p0 >= p1"])
    counter: Counter = Counter()
    runs = 3000
    for seed in range(runs):
        counter.update(int(i) for i in sample(s, 3, seed=seed).indices)
    feasible = [i for i in range(s.size) if s.feasible_mask(s.decode([i]))[0]]
    assert set(counter) == set(feasible)
    counts = np.array([counter[i] for i in feasible])
    assert stats.chisquare(counts).pvalue > 1e-3


# ---- Latin hypercube ------------------------------------------------------------------------------
def test_lhs_balances_every_dimension(stargazer):
    res = sample(stargazer, 999, seed=11, method="lhs")
    assert res.replaced == 0
    for p in stargazer.parameters:
        c = res.points[p.name].value_counts()
        assert set(c.index) == set(p.values)
        assert c.max() - c.min() <= 1, p.name


def test_lhs_with_constraints_replaces_and_reports():
    s = grid([6, 6, 5], ["p0 + p1 >= 4"])
    res = sample(s, 60, seed=3, method="lhs")
    assert res.replaced > 0
    assert s.feasible_mask(s.decode(res.indices)).all()
    assert len(set(res.indices.tolist())) == 60


def test_outputs(tmp_path, stargazer):
    res = sample(stargazer, 25, seed=9)
    res.save(tmp_path / "s.csv")
    res.save(tmp_path / "s.parquet", with_index=True)
    res.save(tmp_path / "s.json")
    import json

    import pandas as pd
    csv = pd.read_csv(tmp_path / "s.csv")
    assert list(csv.columns) == list(stargazer.parameter_names) and len(csv) == 25
    pq = pd.read_parquet(tmp_path / "s.parquet")
    assert pq["design_index"].tolist() == res.indices.tolist()
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["meta"]["seed"] == 9 and doc["meta"]["request"]["n"] == 25 and len(doc["points"]) == 25


def test_rejection_path_for_components_too_large_to_enumerate():
    from gpudse_core import limits

    with limits.override(feasibility_points=10):
        s = grid([8, 8, 5], ["p0 + p1 < 6"])
        s.check()
    assert s.feasible_size is None  # estimated, so sampling rejects infeasible draws
    exact = sum(a + b < 6 for a, b in itertools.product(range(8), repeat=2)) * 5
    res = sample(s, 60, seed=1)
    assert s.feasible_mask(s.decode(res.indices)).all() and len(set(res.indices.tolist())) == 60
    assert res.notes and "estimated" in res.notes[0]
    with pytest.raises(SamplingError, match="fewer feasible points"):
        sample(s, exact + 1, seed=1)
