"""Guarded predictions: training support, extrapolation reasons, the bound, and the
model as additive term tables."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, StepwiseModel, StepwiseRegression, fit_stepwise
from gpudse_core.sim.simulator import simulate


@pytest.fixture(scope="module")
def n30():
    """The guard's N = 30 case: seed 91 samples blk = 8 only with simd = 32."""
    space = load_preset("stargazer")
    train = sample(space, 30, seed=91).points
    train = train.assign(cycles=simulate(train, "matMul").cycles)
    test = sample(space, 2000, seed=99).points
    test = test.assign(cycles=simulate(test, "matMul").cycles)
    assert set(train.loc[train.blk == 8, "simd"]) == {32}
    return train, test


def test_n30_blow_up_is_bounded_and_flagged(n30):
    train, test = n30
    X = test.drop(columns="cycles")
    at = ((test.blk == 8) & (test.simd == 8)).to_numpy()
    # the paper's model unguarded: the log-scale prediction runs away where blk=8 meets simd=8
    raw = fit_stepwise(train, "cycles", transform="log", bound_margin=None, **ALGORITHM1_SETTINGS)
    ratio = raw.predict(X) / test.cycles.to_numpy()
    assert ratio[at].max() > 1e4
    # guarded (the default): bounded to the training range widened by the margin, and flagged with the reason
    m = fit_stepwise(train, "cycles", transform="log", **ALGORITHM1_SETTINGS)
    d = m.predict_details(X)
    assert list(d.columns) == ["predicted", "bounded", "extrapolation"]
    worst = np.argmax(np.where(at, ratio, 0))
    assert d.bounded.iloc[worst]
    assert "blk=8 with simd=8 not seen in training" in d.extrapolation.iloc[worst]
    lo, hi = m.bounds()
    zmin, zmax = np.log(train.cycles.min()), np.log(train.cycles.max())
    assert hi == pytest.approx(zmax + 0.25 * (zmax - zmin)) and lo == pytest.approx(zmin - 0.25 * (zmax - zmin))
    assert np.all(np.isfinite(d.predicted)) and d.predicted.max() <= np.exp(hi) * (1 + 1e-12)
    assert (d.predicted / test.cycles).max() < 10  # was 1e5
    # every bounded prediction is also outside the support, and nothing inside it was touched
    inside = (d.extrapolation == "").to_numpy()
    np.testing.assert_allclose(d.predicted[inside], raw.predict(X)[inside], rtol=1e-12)
    assert d.bounded.sum() >= 1 and (d.extrapolation != "").sum() >= d.bounded.sum()
    # the robust default model flags the same unseen combination
    robust = fit_stepwise(train, "cycles", transform="log")
    reasons = robust.extrapolation(X)
    assert any("with simd=8" in r for r in reasons[at])


def test_predictions_are_never_non_finite():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(1, 9, 80).astype(float), "b": rng.choice(["x", "y"], 80)})
    df["y"] = np.exp(df.a + (df.b == "y"))
    m = fit_stepwise(df, "y", transform="log", bound_margin=None, **ALGORITHM1_SETTINGS)
    far = pd.DataFrame({"a": [1e300, -1e300, 4.0, 1e6], "b": ["x", "y", "zz", "x"]})
    d = m.predict_details(far)
    assert np.all(np.isfinite(d.predicted)) and d.bounded.iloc[:2].all()
    assert d.extrapolation.iloc[0].startswith("a=1e+300 outside the training range [1, 8]")
    assert d.extrapolation.iloc[2] == "b=zz not seen in training" and not d.bounded.iloc[2]


def test_bound_can_be_turned_off_and_counts():
    m = fit_stepwise(pd.DataFrame({"a": np.arange(1.0, 21.0), "y": np.arange(1.0, 21.0) ** 2}), "y",
                     bound_margin=0.0, **ALGORITHM1_SETTINGS)
    z, mask = m.bound(np.array([0.5, 1.0, 400.0, 401.0, np.nan]))
    np.testing.assert_array_equal(mask, [True, False, False, True, True])
    assert z[0] == 1.0 and z[3] == 400.0 and np.isfinite(z[4])
    m.bound_margin = None
    z, mask = m.bound(np.array([-1e9, 1e9]))
    np.testing.assert_array_equal(z, [-1e9, 1e9]) and not mask.any()


def test_support_is_saved_with_the_model(n30, tmp_path):
    train, test = n30
    m = fit_stepwise(train, "cycles", transform="log", max_order=3)
    m.save(tmp_path / "m.json")
    back = StepwiseModel.load(tmp_path / "m.json")
    X = test.drop(columns="cycles")
    np.testing.assert_array_equal(back.extrapolation(X), m.extrapolation(X))
    pd.testing.assert_frame_equal(back.predict_details(X), m.predict_details(X))
    assert back.z_range == m.z_range and back.bound_margin == 0.25 and back.kind == "stepwise"


def test_support_reasons_for_three_way_terms():
    rng = np.random.default_rng(1)
    grid = pd.DataFrame(list(itertools.product([1, 2, 4, 8], [8, 16, 32], [1, 2, 4, 8])), columns=["a", "b", "c"])
    train = grid.sample(40, random_state=2, replace=False).reset_index(drop=True)
    train = pd.concat([train] * 3, ignore_index=True)
    y = np.log2(train.a) * np.log2(train.b) * np.log2(train.c) + rng.normal(0, 0.01, len(train))
    m = fit_stepwise(train.assign(y=y), "y", forced=["a:b:c"], search=False)
    assert m.terms == ["a", "b", "c", "a:b:c"]  # hierarchy: main effects enter first
    seen = set(map(tuple, train[["a", "b", "c"]].to_numpy()))
    reasons = m.extrapolation(grid)
    for row, why in zip(grid.itertuples(index=False), reasons):
        if tuple(row) in seen:
            assert why == ""
        else:
            assert why == f"a={row.a} with b={row.b} and c={row.c} not seen in training"


def test_additive_terms_reproduce_the_linear_predictor():
    pts = sample(load_preset("stargazer"), 300, seed=4).points
    y = simulate(pts, "matMul", noise=0.01, seed=1).cycles
    m = StepwiseRegression(response_transform="log", max_order=3).fit(pts, y).model_
    assert any(len(t) == 3 for t, _ in m.columns)
    levels = {p: np.unique(pts[p].to_numpy()) for p in m.parameters}
    levels["blk"] = np.array([1, 3, 16, 64])  # between and beyond the training values
    intercept, tables = m.additive_terms(levels)
    assert [t for t, _ in tables] == [g for g, _ in m.term_groups()]
    for t, table in tables:
        assert table.shape == tuple(len(levels[p]) for p in t)
    grid = pd.DataFrame(list(itertools.product(*levels.values())), columns=list(levels))
    idx = {p: np.searchsorted(levels[p], grid[p].to_numpy()) for p in levels}
    total = intercept + sum(table[tuple(idx[p] for p in t)] for t, table in tables)
    np.testing.assert_allclose(total, m.linear_predictor(grid), rtol=1e-12, atol=1e-12)
