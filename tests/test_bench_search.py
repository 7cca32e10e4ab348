"""The search benchmark's own arithmetic (benchmarks/bench_search.py): the figures in docs/search.md
rest on its exact random-search expectation and on its cycles × area truth, so both are checked
against direct computation, and one short run of each method goes through the code the bench runs."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

bs = pytest.importorskip("bench_search")


class _Tiny(bs.Truth):
    def __init__(self, values):
        from gpudse_core.space.design import space_from_dict

        space = space_from_dict({"name": "t", "parameters": [{"name": "a", "values": list(range(len(values)))}]})
        super().__init__("tiny", space, np.arange(len(values))[:, None], np.asarray(values, float), "y")

    def lookup(self, digits):
        return self.values[np.asarray(digits)[:, 0]]


@pytest.mark.parametrize("B", [1, 2, 3, 5])
def test_random_expectation_is_the_exact_mean_over_every_draw(B):
    finite = [4.0, 2.0, 7.0, 2.5, 9.0]
    exact = np.mean([min(finite[i] for i in d) / min(finite) - 1
                     for d in itertools.combinations(range(len(finite)), B)])
    assert bs.random_expectation(_Tiny(finite), B) == pytest.approx(exact, rel=1e-12)


def test_per_area_truth_is_cycles_times_the_area_expression():
    cache: dict = {}
    t = bs.make_truth("matMul×area", cache)
    k = cache["matMul"]
    rng = np.random.default_rng(0)
    digits = t.space.decode(rng.choice(t.space.size, 50, replace=False))
    frame = t.space.frame(digits)
    area = (40 + frame.simd + (frame.cc + frame.tc) / 2 + 4 * (frame.smp + frame.ccp) + 2 * frame.blk + frame.mshr
            + frame.dramq / 8 + frame.intra + frame.inter).to_numpy(float)
    np.testing.assert_allclose(t.lookup(digits), k.lookup(digits) * area, rtol=1e-12)
    assert int(np.sum(t.values == t.best)) == 1  # the judged objective has one best design


@pytest.mark.slow
def test_each_method_runs_and_reports_a_regret_curve():
    cache: dict = {}
    t = bs.make_truth("LPS×area", cache)
    r = bs.run_gpudse(t, 30, seed=0, batch=2)
    assert len(r.trials) == 30 and all(x.value is not None for x in r.trials)
    curve = bs.best_curve([x.value for x in r.trials], (10, 30))
    assert curve[30] <= curve[10] and curve[30] >= t.best
    shot = bs.run_oneshot([t], 30, seed=0)
    assert shot[0] >= 0.0


def test_the_mgpusim_study_space_is_its_simulated_designs_once_each():
    import pandas as pd

    frame = pd.read_csv(bs.MGPUSIM_STUDY)
    t = bs.make_truth("mgpusim-study", {})
    designs = frame[bs.STUDY_PARAMS].drop_duplicates()
    assert len(t.values) == len(designs) < len(frame)  # one row per design: the repeated one averaged
    repeated = frame[frame.duplicated(bs.STUDY_PARAMS, keep=False)]
    key = t.space.digits_of_point({p: repeated.iloc[0][p] for p in bs.STUDY_PARAMS})
    assert t.lookup(np.array([key]))[0] == pytest.approx(repeated[bs.STUDY_RESPONSE].mean(), rel=1e-12)
    assert t.best == pytest.approx(frame[bs.STUDY_RESPONSE].min(), rel=1e-12)
    assert max(bs.budgets_of("mgpusim-study")) < len(t.values)  # a budget below the designs there are
