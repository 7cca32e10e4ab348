"""Intervals on a search's proposals (gpudse_core.search.intervals): every design a model proposes carries
the value predicted for it and a calibrated 95 % interval made before it was simulated — containing the
prediction, never of zero width, above zero for a positive response — and the conformal ends hold their
level on residuals of known noise, the forest's spread widening them where it is large."""

from __future__ import annotations

import numpy as np
import pytest

from gpudse_core.model.coverage import coverage, coverage_text, inside, interval_fields
from gpudse_core.search.intervals import LEVEL, held_out_calibration, interval, joined
from gpudse_core.search.pool import make_pool
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.stored import StudyDamaged
from gpudse_core.search.study import Trial, run_search
from gpudse_core.space.design import space_from_dict


def _space():
    return space_from_dict({"name": "grid", "parameters": [{"name": "a", "values": list(range(12))},
                                                           {"name": "b", "values": list(range(12))}]})


def _bowl(digits, designs):
    """A positive response with one minimum (a time: the forest models it on the log scale)."""
    return [(1.0 + (d["a"] - 7) ** 2 + 0.5 * (d["b"] - 3) ** 2, "") for d in designs]


@pytest.fixture(scope="module")
def searched():
    return run_search(make_pool(_space()), _bowl, goal="min", budget=40, initial=12, batch=4, seed=2, n_trees=10,
                      surrogate="forest")


def test_every_model_proposal_carries_a_prediction_inside_a_positive_interval_of_the_level(searched):
    initial = [t for t in searched.trials if t.model_version == 0]
    proposed = [t for t in searched.trials if t.model_version > 0]
    assert len(initial) == 12 and len(proposed) == 28
    assert all(t.predicted is None and t.lower is None and t.level is None for t in initial)  # no model yet
    assert all(t.level == LEVEL == 0.95 for t in proposed)
    assert all(0 < t.lower < t.predicted < t.upper for t in proposed)  # never zero width, above zero
    k, n = coverage(searched.trials)
    assert n == 28 and k == sum(t.lower <= t.value <= t.upper for t in proposed)


def test_the_json_and_the_stored_study_carry_the_intervals(searched):
    doc = searched.to_json(["a", "b"])
    last = doc["history"][-1]
    t = searched.trials[-1]
    assert (last["predicted"], last["lower"], last["upper"], last["level"]) == (t.predicted, t.lower, t.upper, 0.95)
    assert last["inside"] == (t.lower <= t.value <= t.upper)
    assert doc["history"][0]["inside"] is None
    k, n = coverage(searched.trials)
    assert doc["intervals"] == {"level": 0.95, "checked": n, "inside": k, "coverage": k / n}
    study = SearchStudy({"goal": "min", "params": ["a", "b"]}, tuple(searched.trials), "budget")
    back = SearchStudy.from_stored(study.to_stored())
    assert [(b.lower, b.upper, b.level) for b in back.trials] == [(t.lower, t.upper, t.level) for t in searched.trials]


@pytest.mark.parametrize("change, field", [({"upper": None}, "interval"), ({"level": 95}, "level"),
                                           ({"lower": "low"}, "lower")])
def test_a_forged_interval_reads_as_damaged_naming_the_field(searched, change, field):
    trials = [t.to_dict() for t in searched.trials]
    trials[-1].update(change)
    with pytest.raises(StudyDamaged, match=f"trial {len(trials)}'s {field}"):
        SearchStudy.from_stored({"settings": {"goal": "min", "params": ["a", "b"]}, "trials": trials})


def test_conformal_ends_hold_their_level_on_known_noise():
    """Residuals N(0, 0.2) on the log scale: the 95 % ends are ±1.96 × 0.2 and cover 95 % of fresh draws."""
    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 0.2, 4000)
    cal = held_out_calibration(np.zeros(4000), z, log=True)
    lo, hi = interval(np.ones(1), cal, None)
    assert np.log(lo[0]) == pytest.approx(-1.96 * 0.2, rel=0.06) and np.log(hi[0]) == pytest.approx(1.96 * 0.2,
                                                                                                      rel=0.06)
    fresh = np.exp(rng.normal(0.0, 0.2, 4000))
    assert np.mean((fresh >= lo[0]) & (fresh <= hi[0])) == pytest.approx(0.95, abs=0.015)


def test_the_spread_widens_the_interval_where_the_forest_is_unsure():
    """A fifth of the rows have ten times the noise, and the forest's spread says which: scaled by the
    spread, the noisy rows are covered far better than by the one interval for all (which is too wide
    for the quiet rows and too narrow for the noisy ones)."""
    rng = np.random.default_rng(1)
    n = 5000
    sd = np.where(np.arange(n) % 5 == 0, 1.0, 0.1)
    z = rng.normal(0.0, sd)
    scaled, plain = held_out_calibration(np.zeros(n), z, False, sd), held_out_calibration(np.zeros(n), z, False)
    fresh = rng.normal(0.0, sd)
    hit = {}
    for name, cal in (("scaled", scaled), ("plain", plain)):
        lo, hi = interval(np.zeros(n), cal, None, spread=sd)
        hit[name] = (fresh >= lo) & (fresh <= hi)
    noisy = sd == 1.0
    # plain, the ends are about ±1.15 (0.2 · P(|N(0, 1)| > q) = 5 %): 75 % of the noisy rows; scaled, 89 %
    assert hit["plain"][noisy].mean() < 0.8 and hit["scaled"][noisy].mean() > 0.85
    assert hit["scaled"].mean() == pytest.approx(0.95, abs=0.02)


def test_an_exact_model_still_has_an_interval_of_width():
    cal = held_out_calibration(np.log(np.full(20, 3.0)), np.log(np.full(20, 3.0)), log=True)
    lo, hi = interval(np.array([3.0, 0.0]), cal, "min")
    assert 0 < lo[0] < 3.0 < hi[0]
    assert np.isnan(lo[1]) and np.isnan(hi[1])  # a time predicted at 0 has no interval on the log scale
    assert held_out_calibration(np.zeros(5), np.zeros(5), log=False) is None  # too few rows to calibrate


def test_coverage_counts_simulated_values_inside_their_own_interval():
    def trial(n, value, lo, hi, status="ok"):
        return Trial(n, 1, 1, {"a": n}, None, value, status, lower=lo, upper=hi, level=None if lo is None else 0.95)

    trials = [trial(0, 2.0, 1.0, 2.0), trial(1, 2.5, 1.0, 2.0), trial(2, None, 1.0, 2.0, "failed"),
              trial(3, 1.5, None, None), trial(4, 1.0, 1.0, 3.0)]
    assert coverage(trials) == (2, 3)  # the ends count as inside; a failure and a design without one do not
    assert [interval_fields(t)["inside"] for t in trials] == [True, False, None, None, True]
    assert inside(None, 1.0, 2.0) is None
    assert coverage_text(trials) == "2 of 3 simulated values (67 %) inside their 95 % intervals"
    assert coverage_text(trials[2:4]) == ""


def test_an_end_reaches_at_most_a_quarter_of_the_values_range_past_it():
    """Held-out errors of a factor e² on values from 1 to e (log range 1): an interval reaches at most
    e^-0.25 below the smallest value and e^1.25 above, as Explore's stays in the range the model can predict."""
    z = np.linspace(0.0, 1.0, 40)
    held_out = z + np.where(np.arange(40) % 2, 2.0, -2.0)
    lo, hi = interval(np.array([1.5]), held_out_calibration(held_out, z, log=True), None)
    assert lo[0] == pytest.approx(np.exp(-0.25)) and hi[0] == pytest.approx(np.exp(1.25))


def test_the_stepwise_models_interval_joins_the_forests_and_holds_its_prediction():
    nan = np.array([np.nan])
    lo, hi = joined(np.array([2.0]), (np.array([1.0]), np.array([3.0])), (np.array([2.5]), np.array([6.0])), True)
    assert (lo[0], hi[0]) == (1.0, 6.0)
    # no stepwise calibration yet: the forest's interval, widened to hold the stepwise prediction inside
    lo, hi = joined(np.array([5.0]), (nan, nan), (np.array([1.0]), np.array([3.0])), True)
    assert lo[0] == 1.0 and 5.0 < hi[0] < 5.01
    assert np.isnan(joined(np.array([5.0]), (nan, nan), (nan, nan), True)).all()
