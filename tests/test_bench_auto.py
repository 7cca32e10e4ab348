"""benchmarks/bench_auto.py scores ``auto``'s rules on the draws of ``gpudse validate`` (and so of
bench_accuracy.py): its figures in docs/models.md are quoted as that table's ``auto/forest``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
bench = pytest.importorskip("bench_auto")


def test_the_draws_are_those_validate_scores(monkeypatch):
    from gpudse_core.model import validation

    rng = np.random.default_rng(4)
    data = pd.DataFrame({"a": rng.integers(1, 9, 200), "b": rng.uniform(0, 1, 200)})
    data["y"] = np.exp(0.1 * data.a + data.b)
    seen = []

    def capture(train, test, *a, **k):
        seen.append((train, test))
        return {}

    monkeypatch.setattr(validation, "_predict_all", capture)
    validation.validate(data, "y", train_sizes=[30], test_size=50, repeats=3, models=["forest"], seed=7)
    args = argparse.Namespace(seed=7, repeats=3, train=30, test=50)
    mine = list(bench.draws(data, args))
    assert [rep for rep, _, _ in mine] == [0, 1, 2] and len(seen) == 3
    for (_, train, test), (v_train, v_test) in zip(mine, seen):
        pd.testing.assert_frame_equal(train, v_train)
        pd.testing.assert_frame_equal(test, v_test)
