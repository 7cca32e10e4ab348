"""Prediction intervals (model/intervals.py): the stepwise model's is statsmodels' OLS prediction
interval; nominal 95 % intervals cover at least 90 % of held-out simulations on the built-in kernels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from gpudse_core import GpudseError, load_preset, sample
from gpudse_core.model.fitted import StepwiseModel, design_matrix
from gpudse_core.model.intervals import predict_interval
from gpudse_core.model.registry import fit_model
from gpudse_core.sim.simulator import KERNELS, simulate

SPACE = load_preset("stargazer")
PARAMS = list(SPACE.parameter_names)


def split(kernel: str, n_train: int = 300, n_test: int = 1000):
    train = sample(SPACE, n_train, seed=1).points
    test = sample(SPACE, n_test, seed=2).points
    train = train.assign(cycles=simulate(train, kernel, noise=0.01, seed=3).cycles.to_numpy())
    truth = simulate(test, kernel, noise=0.01, seed=4).cycles.to_numpy()
    return train, test, truth


def coverage(kind: str, kernel: str) -> float:
    train, test, truth = split(kernel)
    model = fit_model(kind, train, "cycles", PARAMS)
    iv = predict_interval(model, test, 0.95)
    assert np.array_equal(iv.predicted.to_numpy(), model.predict(test))
    assert (iv.lower <= iv.predicted).all() and (iv.predicted <= iv.upper).all()
    return float(np.mean((truth >= iv.lower.to_numpy()) & (truth <= iv.upper.to_numpy())))


@pytest.mark.parametrize("kind", ["stepwise", "paper"])
def test_stepwise_interval_is_the_ols_prediction_interval(kind):
    """Both stepwise searches (the robust one and the authors' reference) keep what the interval needs."""
    train, test, _ = split("matMul", 200, 50)
    kw = {"bound_margin": None, **({"robust": "none", "blend": "off"} if kind == "stepwise" else {})}
    model = fit_model(kind, train, "cycles", PARAMS, transform="none", stepwise_kw=kw)
    A = design_matrix(model, train)
    ols = sm.OLS(train.cycles.to_numpy(), A).fit()
    want = ols.get_prediction(design_matrix(model, test)).summary_frame(alpha=0.05)
    got = predict_interval(model, test, 0.95)
    np.testing.assert_allclose(got.lower, want.obs_ci_lower, rtol=1e-7)
    np.testing.assert_allclose(got.upper, want.obs_ci_upper, rtol=1e-7)
    # the numbers survive the model file
    again = StepwiseModel.from_dict(model.to_dict())
    pd.testing.assert_frame_equal(predict_interval(again, test, 0.95), got)
    wider = predict_interval(model, test, 0.99)
    assert (wider.lower < got.lower).all() and (wider.upper > got.upper).all()


def test_the_huber_fit_interval_is_centred_on_its_prediction_with_the_data_spread():
    """The default (Huber) fit: the OLS interval formula about the model's own prediction, with the
    residual spread of the data about the fit (not of its clipped pseudo-observations, which would
    understate it)."""
    from scipy import stats

    train, test, _ = split("matMul", 200, 50)
    slow = np.random.default_rng(7).random(len(train)) < 0.05  # a few pathological designs, 4× slower
    train = train.assign(cycles=np.where(slow, 4 * train.cycles, train.cycles))
    model = fit_model("stepwise", train, "cycles", PARAMS, transform="none",
                      stepwise_kw={"bound_margin": None, "blend": "off"})  # the equation's own interval
    assert model.robust is not None  # a Huber round was kept
    A, At = design_matrix(model, train), design_matrix(model, test)
    coef = np.asarray(model.coefficients)
    resid = train.cycles.to_numpy() - A @ coef
    rank = np.linalg.matrix_rank(A)
    sigma = np.sqrt(resid @ resid / (len(A) - rank))
    h = np.einsum("ij,jk,ik->i", At, np.linalg.pinv(A.T @ A), At)
    half = stats.t.ppf(0.975, len(A) - rank) * sigma * np.sqrt(1 + h)
    got = predict_interval(model, test, 0.95)
    np.testing.assert_allclose(got.predicted, At @ coef, rtol=1e-9)
    np.testing.assert_allclose(got.upper - got.predicted, half, rtol=1e-6)
    np.testing.assert_allclose(got.predicted - got.lower, half, rtol=1e-6)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_stepwise_95_intervals_cover_90_percent_of_held_out_truths(kernel):
    assert coverage("stepwise", kernel) >= 0.90


@pytest.mark.slow
@pytest.mark.parametrize("kind, kernel", [("forest", "BFS"), ("forest", "LPS"), ("boosting", "AES")])
def test_learner_95_intervals_cover_90_percent_of_held_out_truths(kind, kernel):
    assert coverage(kind, kernel) >= 0.90


def test_a_model_file_without_the_noise_has_no_interval_and_bad_levels_are_refused():
    train, test, _ = split("CP", 100, 5)
    model = fit_model("stepwise", train, "cycles", PARAMS)
    d = model.to_dict()
    d.pop("noise")
    with pytest.raises(GpudseError, match="needs its 'noise'.*refit"):  # the blend's leverage reads it
        StepwiseModel.from_dict(d)
    d.pop("fallback")  # a file from before the blend has neither
    old = StepwiseModel.from_dict(d)
    with pytest.raises(GpudseError, match="refit"):
        predict_interval(old, test)
    with pytest.raises(GpudseError, match="level"):
        predict_interval(model, test, 95)
    d = model.to_dict()
    d["noise"]["root"] = d["noise"]["root"][:-1]
    with pytest.raises(GpudseError, match="noise"):
        StepwiseModel.from_dict(d, "m.json")


@pytest.mark.slow
def test_a_saved_forest_keeps_its_trees_spread_and_interval():
    """The spread of a forest's trees comes from the saved trees themselves: a model loaded from its
    file gives the same spread and interval as the one just fitted, and the spread is the standard
    deviation of what the trees predict (not a constant)."""
    from gpudse_core.model.intervals import spread
    from gpudse_core.model.registry import load_model, model_to_dict

    train, test, _ = split("matMul", 120, 40)
    model = fit_model("forest", train, "cycles", PARAMS)
    again = load_model(model_to_dict(model))
    s = spread(model, test)
    assert s.shape == (40,) and np.all(s >= 0) and np.ptp(s) > 0
    np.testing.assert_array_equal(spread(again, test), s)
    pd.testing.assert_frame_equal(predict_interval(again, test, 0.9), predict_interval(model, test, 0.9))


def test_a_blended_prediction_has_the_blends_variance():
    """With the forest blend (model/fallback.py) the interval is about the blended prediction, its variance the
    inverse-variance sum of the two forecasts: sigma^2 (1 + c w); where the forest alone predicts, sigma^2 (1 + c)."""
    from scipy import stats

    train, test, _ = split("matMul", 200, 50)
    model = fit_model("stepwise", train, "cycles", PARAMS, transform="none", stepwise_kw={"robust": "none"})
    fb = model.fallback
    assert fb is not None
    far = test.assign(blk=64)  # beyond blk's training range: the forest alone
    X = pd.concat([test, far.iloc[:3]], ignore_index=True)
    got = predict_interval(model, X, 0.95)
    _, _, held = model.guarded(X)
    w = np.where(held, 1.0, fb.weights(model, X))
    assert held[-3:].all() and not held[:-3].all()
    half = stats.t.ppf(0.975, model.noise["df"]) * model.noise["sigma"] * np.sqrt(1 + fb.c * w)
    z = model.guarded(X)[0]
    free = ~model.bound(z - half)[1] & ~model.bound(z + half)[1]
    np.testing.assert_allclose((got.upper - got.predicted)[free], half[free], rtol=1e-6)
    np.testing.assert_allclose(got.predicted, model.predict(X), rtol=1e-12)
