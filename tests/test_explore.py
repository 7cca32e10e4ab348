"""Response curves, interaction grids, whole-space prediction, Pareto fronts, sensitivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpudse_core import GpudseError, load_preset, sample
from gpudse_core.explore.scan import (interaction_grid, pareto_front, predict_space, response_curve, sensitivity)
from gpudse_core.sim.simulator import simulate
from gpudse_core.model.stepwise import fit_stepwise

SPACE = load_preset("stargazer")


@pytest.fixture(scope="module")
def fitted():
    pts = sample(SPACE, 300, seed=1).points
    data = pts.assign(cycles=simulate(pts, "matMul").cycles)
    return fit_stepwise(data, "cycles", transform="log"), data


def base_point():
    return {p.name: p.values[len(p.values) // 2] for p in SPACE.parameters}


@pytest.mark.slow
def test_response_curve_band_contains_the_prediction(fitted):
    model, data = fitted
    curve = response_curve(model, data, "blk", base_point(), SPACE, points=50)
    assert len(curve) == 50 and curve.blk.iloc[0] == 1 and curve.blk.iloc[-1] == 16
    assert (curve.lower <= curve.predicted).all() and (curve.predicted <= curve.upper).all()
    frame = pd.DataFrame([{**base_point(), "blk": 4}])
    assert np.interp(4, curve.blk, curve.predicted) == pytest.approx(model.predict(frame)[0], rel=0.02)
    # matMul: more block concurrency is faster (memory bound at low #blk)
    assert curve.predicted.iloc[0] > curve.predicted.iloc[-1]


def test_interaction_grid(fitted):
    model, _ = fitted
    xs, ys, z = interaction_grid(model, "blk", "simd", base_point(), SPACE, points=10)
    assert z.shape == (len(ys), len(xs)) and np.all(z > 0)
    with pytest.raises(GpudseError, match="two different"):
        interaction_grid(model, "blk", "blk", base_point())
    # at the legal values only: one cell per design, each the model's prediction at that design
    xs, ys, z = interaction_grid(model, "blk", "simd", base_point(), SPACE, legal_only=True)
    assert list(xs) == list(SPACE.parameter("blk").values) and list(ys) == list(SPACE.parameter("simd").values)
    frame = pd.DataFrame([{**base_point(), "blk": xs[2], "simd": ys[1]}])
    assert z[1, 2] == pytest.approx(model.predict(frame)[0])
    from gpudse_core.report import figures

    fig = figures.interaction_heatmap(xs, ys, z, SPACE.parameter("blk"), SPACE.parameter("simd"), "cycles",
                                      legal_only=True)
    assert list(fig.data[0].x) == ["1", "2", "4", "8", "16"] and fig.layout.xaxis.type == "category"


def test_predict_space_top_k_and_pareto(fitted):
    model, _ = fitted
    seen = []
    scan = predict_space(model, SPACE, cost=lambda f: f.simd * f.blk, k=5, chunk_size=100_000,
                         progress=lambda d, t: seen.append(d))
    assert scan.points == 933_120 and seen[-1] == 933_120 and len(seen) == 10
    every = scan.predictions
    assert len(every) == 933_120
    assert scan.best.predicted.tolist() == sorted(every.predicted.nsmallest(5).tolist())
    front = scan.pareto
    assert front.cost.is_monotonic_increasing and front.predicted.is_monotonic_decreasing
    for _, row in front.iterrows():  # nothing beats a front point on both objectives
        assert not ((every.cost <= row.cost) & (every.predicted < row.predicted - 1e-9)).any()


def test_pareto_front_small():
    df = pd.DataFrame({"v": [5, 3, 4, 1, 2], "c": [1, 2, 2, 5, 3]})
    assert pareto_front(df, "v", "c")[["v", "c"]].values.tolist() == [[5, 1], [3, 2], [2, 3], [1, 5]]


def test_sensitivity(fitted):
    model, _ = fitted
    s = sensitivity(model, base_point(), SPACE)
    assert set(s.parameter) == set(SPACE.parameter_names)
    blk = s[s.parameter == "blk"].set_index("value")
    assert blk.loc[4, "change"] == pytest.approx(0.0) and blk.loc[1, "change"] > 0.5
    unused = [p for p in SPACE.parameter_names if p not in model.bases]
    assert all((s[s.parameter == p].change == 0).all() for p in unused)


def test_space_mismatch(fitted):
    model, _ = fitted
    with pytest.raises(GpudseError, match="does not have"):
        predict_space(model, load_preset("zatel"))


def test_sensitivity_and_interaction_grid_of_a_learner(fitted):
    """A learner reads its parameters, not bases: the dashboard's Explore and Response
    curves pages call these with any model kind; a learner's grid is the legal values."""
    from gpudse_core.model.registry import fit_model

    _, data = fitted
    forest = fit_model("forest", data, "cycles", list(SPACE.parameter_names), transform="log")
    s = sensitivity(forest, base_point(), SPACE)
    blk = s[s.parameter == "blk"].set_index("value")
    assert blk.loc[4, "change"] == pytest.approx(0.0) and blk.loc[1, "change"] > 0.5
    frame = pd.DataFrame([{**base_point(), "blk": 1}])
    assert blk.loc[1, "predicted"] == pytest.approx(forest.predict(frame)[0])
    xs, ys, z = interaction_grid(forest, "blk", "simd", base_point(), SPACE)
    assert list(xs) == [1, 2, 4, 8, 16] and list(ys) == list(SPACE.parameter("simd").values)
    grid = pd.DataFrame([{**base_point(), "blk": x, "simd": y} for y in ys for x in xs])
    np.testing.assert_allclose(z.ravel(), forest.predict(grid))
