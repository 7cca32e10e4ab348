"""Calibrated intervals of recommended designs (model/calibration.py): held-out coverage at the nominal
rate on data with known noise, including the rows the model ranks best; never zero width, never a lower
end at or below zero for a positive response, and a clamped prediction gets a wider interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpudse_core import GpudseError
from gpudse_core.model.calibration import MIN_HALF, Calibration, calibrate, calibrated_interval
from gpudse_core.model.registry import fit_model
from gpudse_core.space.design import DesignSpace, Parameter

PARAMS = ["a", "b", "c"]
SIGMA = 0.08  # log-normal noise of the synthetic response: 8 %


def truth(X: pd.DataFrame) -> np.ndarray:
    """A smooth positive time: falls with a, has an optimum in b, and c adds a step."""
    lb = np.log2(X.b)
    return 50.0 * X.a ** -0.6 * (1 + 0.15 * (lb - 3) ** 2) * np.where(X.c == 1, 1.3, 1.0)


def draw(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.choice(np.arange(1, 17), n), "b": rng.choice([1, 2, 4, 8, 16, 32, 64], n),
                      "c": rng.choice([0, 1], n)})
    return X.assign(time=truth(X) * np.exp(rng.normal(0, SIGMA, n)))


@pytest.fixture(scope="module")
def fitted():
    train = draw(120, 1)
    model = fit_model("stepwise", train, "time", PARAMS, transform=None)
    return model, train, calibrate(model, train)


def covered(iv: pd.DataFrame, y: np.ndarray) -> np.ndarray:
    return (y >= iv.lower.to_numpy()) & (y <= iv.upper.to_numpy())


def test_held_out_coverage_is_nominal_on_every_row_and_on_the_rows_ranked_best(fitted):
    model, _, cal = fitted
    assert cal.scale == "log" and cal.n == 120 and cal.folds == 5
    test = draw(3000, 2)
    y = test.time.to_numpy()
    every = covered(calibrated_interval(model, test, cal, 0.95, goal=None), y).mean()
    assert 0.92 <= every <= 0.995  # near 95 %: neither too narrow nor uselessly wide
    pred = model.predict(test)
    best = pred <= np.quantile(pred, 0.1)  # the designs the model would recommend
    assert covered(calibrated_interval(model, test[best], cal, 0.95, goal="min"), y[best]).mean() >= 0.9
    # a lower level is narrower and covers less, still near its own nominal rate
    iv80 = calibrated_interval(model, test, cal, 0.8, goal=None)
    iv95 = calibrated_interval(model, test, cal, 0.95, goal=None)
    assert (iv80.upper <= iv95.upper).all() and (iv80.lower >= iv95.lower).all()
    assert 0.72 <= covered(iv80, y).mean() <= 0.9


def test_the_selection_correction_takes_the_rows_ranked_best_for_the_goal():
    """Residuals of rows ranked best (lowest predictions for min, highest for max) set the ends."""
    rank = (np.arange(100) + 0.5) / 100
    resid = np.where(rank <= 0.3, 0.5, 0.0) + np.where(rank >= 0.7, -0.5, 0.0)  # optimistic at both ends
    cal = Calibration(resid, rank, "log", 5, (1.0, 10.0))
    assert set(cal.selected("min")) == {0.5} and set(cal.selected("max")) == {-0.5}
    assert cal.selected(None).size == 100
    assert cal.ends(0.95, "min") == (-MIN_HALF, 0.5)  # no zero width: each end at least MIN_HALF away
    assert cal.ends(0.95, "max") == (-0.5, MIN_HALF)
    with pytest.raises(GpudseError, match="goal"):
        cal.selected("lowest")


def test_no_zero_width_and_positive_ends_even_when_held_out_rows_were_exact():
    """A calibration whose held-out errors are all 0 still gives an interval of width > 0 about the
    prediction, with a lower end above 0."""
    X = draw(40, 3)
    model = fit_model("stepwise", X, "time", PARAMS, transform=None)
    cal = Calibration(np.zeros(40), (np.arange(40) + 0.5) / 40, "log", 5, (float(X.time.min()), float(X.time.max())))
    iv = calibrated_interval(model, X, cal, 0.95)
    assert (iv.upper > iv.predicted).all() and (iv.lower < iv.predicted).all() and (iv.lower > 0).all()
    np.testing.assert_allclose(iv.upper / iv.predicted, np.exp(MIN_HALF))


def test_the_linear_predictor_is_evaluated_once_and_gives_what_the_model_says(fitted, monkeypatch):
    """calibrated_interval reads the prediction, the bound's flags, the envelope's flags and the equation's own
    value from one pass over the rows (plus the rows the envelope held); each equals what the model's own
    methods give, so the interval is the one built from them separately."""
    from gpudse_core.model.calibration import _guarded
    from gpudse_core.model.fitted import StepwiseModel, inverse_transform

    model, train, cal = fitted
    far = pd.DataFrame({"a": [4096, 20, 24, 1, -300], "b": [8, 1, 64, 128, 4], "c": [0, 1, 0, 1, 1]})
    X = pd.concat([draw(50, 7)[PARAMS], far], ignore_index=True)
    z, mask, held = model.guarded(X)
    clamped = model.bound(model.linear_predictor(X))[1]
    own = inverse_transform(model.bound(model.linear_predictor(X))[0], model.transform)
    assert held.any() and clamped.any() and not held.all()  # every kind of row is present
    rows = []
    lp = StepwiseModel.linear_predictor
    monkeypatch.setattr(StepwiseModel, "linear_predictor", lambda self, Z: rows.append(len(Z)) or lp(self, Z))
    pred, c, h, o = _guarded(model, X)
    assert rows == [len(X), int(held.sum())]
    np.testing.assert_array_equal(pred, model.predict(X))
    np.testing.assert_array_equal(c, clamped)
    np.testing.assert_array_equal(h, held)
    np.testing.assert_array_equal(o[held], own[held])
    assert np.isnan(o[~held]).all()
    rows.clear()
    iv = calibrated_interval(model, X, cal, 0.95)
    assert rows == [len(X), int(held.sum())]
    np.testing.assert_array_equal(iv.predicted, model.predict(X))
    np.testing.assert_array_equal(iv.bounded, clamped | held)


def test_a_clamped_prediction_gets_an_interval_spanning_what_the_model_can_predict(fitted):
    model, train, cal = fitted
    lo_b, hi_b = np.exp(model.bounds()) if model.transform == "log" else (None, None)
    inside = train.iloc[:1][PARAMS]
    far = pd.DataFrame({"a": [4096], "b": [8], "c": [0]})  # far beyond the training range of a: held at a bound
    assert model.bound(model.linear_predictor(far))[1].all()
    iv_in = calibrated_interval(model, inside, cal, 0.95)
    iv_far = calibrated_interval(model, far, cal, 0.95)
    assert not iv_in.bounded.any() and iv_far.bounded.all()
    assert (iv_far.upper / iv_far.lower).iloc[0] > 4 * (iv_in.upper / iv_in.lower).iloc[0]
    assert iv_far.lower.iloc[0] > 0 and iv_far.lower.iloc[0] <= train.time.min()
    assert iv_far.upper.iloc[0] >= train.time.max()
    if lo_b is not None:
        assert iv_far.lower.iloc[0] <= lo_b and iv_far.upper.iloc[0] >= hi_b


@pytest.mark.parametrize("transform", ["sqrt", "none"])
def test_a_positive_response_is_never_predicted_at_or_below_zero(transform):
    """On the sqrt or raw scale the bound below the training range stays above 0 (a sqrt fit's 25 %
    margin below the fastest design reached 0 ms on a real table)."""
    train = draw(80, 4)
    train = train.assign(time=np.where(train.a > 12, 0.05, 1.0) * train.time)  # fast rows 20× below the rest
    model = fit_model("stepwise", train, "time", PARAMS, transform=transform)
    lo = model.bounds()[0]
    floor_y = lo ** 2 if transform == "sqrt" else lo
    y = train.time.to_numpy()
    np.testing.assert_allclose(floor_y, y.min() * (y.min() / y.max()) ** model.bound_margin, rtol=1e-9)
    far = pd.DataFrame({"a": [1e6], "b": [8], "c": [0]})
    z = np.array([-1e9])
    assert model.bound(z)[0][0] == lo and floor_y > 0
    assert (model.predict(pd.concat([train[PARAMS], far])) > 0).all()
    iv = calibrated_interval(model, train[PARAMS], calibrate(model, train), 0.95)
    assert (iv.lower > 0).all() and (iv.upper > iv.lower).all()


def test_too_few_rows_or_missing_columns_are_refused_by_name(fitted):
    model, train, _ = fitted
    with pytest.raises(GpudseError, match="at least 10 rows"):
        calibrate(model, train.iloc[:9])
    with pytest.raises(GpudseError, match="'c'"):
        calibrate(model, train.drop(columns="c"))


def test_explore_calibrates_with_the_training_rows_and_says_when_it_cannot(fitted):
    from gpudse_core.explore.designs import best_designs

    model, train, cal = fitted
    space = DesignSpace((Parameter("a", tuple(range(1, 17))), Parameter("b", (1, 2, 4, 8, 16, 32, 64)),
                         Parameter("c", (0, 1))), name="synthetic")
    found = best_designs(model, space, top=5, results=train)
    assert not any("not calibrated" in n for n in found.notes)
    want = calibrated_interval(model, found.rows[PARAMS], cal, 0.95, goal="min")
    np.testing.assert_allclose(found.rows.lower, want.lower)
    np.testing.assert_allclose(found.rows.upper, want.upper)
    bare = best_designs(model, space, top=5)
    assert any("not calibrated on held-out rows" in n for n in bare.notes)
    assert (bare.rows.lower < bare.rows.upper).all()


def test_an_interval_stays_within_the_range_the_model_can_predict(fitted):
    """Held-out errors of a factor e^5 would put the upper end far beyond every training time: it stops
    at the model's upper bound, still above the prediction."""
    model, train, _ = fitted
    n = 40
    cal = Calibration(np.linspace(-5, 5, n), (np.arange(n) + 0.5) / n, "log", 5,
                      (float(train.time.min()), float(train.time.max())))
    iv = calibrated_interval(model, train[PARAMS], cal, 0.95, goal=None)
    lo_b, hi_b = np.exp(model.bounds())
    np.testing.assert_allclose(iv.upper, hi_b)
    np.testing.assert_allclose(iv.lower, lo_b)
    assert (iv.lower < iv.predicted).all() and (iv.predicted < iv.upper).all()


def test_failed_simulations_in_the_results_are_no_held_out_rows(fitted):
    """A results row whose status is not ok (or whose response is missing) is not a held-out row: the
    calibration is the one of the successful rows alone."""
    from gpudse_core.explore.designs import _calibration

    model, train, cal = fitted
    bad = train.iloc[:6].assign(time=[1e6, 1e6, 1e6, np.nan, np.nan, np.nan])
    results = pd.concat([train.assign(status="ok"), bad.assign(status=["failed", "timeout", "error", "ok", "", "x"])],
                        ignore_index=True)
    got, why = _calibration(model, results)
    assert why == "" and got.n == cal.n
    np.testing.assert_array_equal(got.residuals, cal.residuals)


@pytest.mark.slow
def test_a_learner_is_calibrated_on_its_own_training_rows():
    from gpudse_core.explore.designs import best_designs

    train = draw(60, 5)
    model = fit_model("forest", train, "time", PARAMS)
    space = DesignSpace((Parameter("a", tuple(range(1, 17))), Parameter("b", (1, 2, 4, 8, 16, 32, 64)),
                         Parameter("c", (0, 1))), name="synthetic")
    found = best_designs(model, space, top=3)  # no results given: the forest keeps its rows
    assert not any("not calibrated" in n for n in found.notes)
    want = calibrated_interval(model, found.rows[PARAMS], calibrate(model, train), 0.95, goal="min")
    np.testing.assert_allclose(found.rows.lower, want.lower)
    assert (found.rows.lower > 0).all() and (found.rows.lower < found.rows.predicted).all()


def test_results_with_fewer_rows_than_the_fit_do_not_calibrate_another_model(fitted):
    """Refits on a few new simulations would describe a different model: explore keeps the model's own
    interval and says why."""
    from gpudse_core.explore.designs import _calibration

    model, train, _ = fitted
    got, why = _calibration(model, train.iloc[:50])
    assert got is None and "fewer than the 120" in why
