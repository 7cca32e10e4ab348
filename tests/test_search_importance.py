"""Parameter importance of a search's history (gpudse_core.search.importance): fANOVA-like main effects
of a random forest, checked on histories of known structure."""

from __future__ import annotations

import numpy as np
import pytest

from gpudse_core.search.importance import MIN_TRIALS, encode, parameter_importance
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.study import Trial


def study_of(designs: list[dict], values: list, goal: str = "min", objective: str = "") -> SearchStudy:
    trials = tuple(Trial(i, i // 4, 0, d, None, v, "ok" if v is not None else "failed") for i, (d, v)
                   in enumerate(zip(designs, values)))
    settings = {"goal": goal, "response": "cycles", "params": list(designs[0]),
                **({"objective": objective} if objective else {})}
    return SearchStudy(settings, trials, "budget")


def random_designs(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"simd": int(rng.choice([8, 16, 32, 64])), "smp": int(rng.choice([1, 2, 4])),
             "sched": str(rng.choice(["gto", "lrr", "two_level"])), "l1": int(rng.choice([16, 32, 48, 64]))}
            for _ in range(n)]


def test_the_one_parameter_that_decides_the_objective_ranks_first():
    designs = random_designs(120)
    values = [1000.0 * d["l1"] for d in designs]  # only l1 matters
    imp = parameter_importance(study_of(designs, values))
    assert imp.top() == "l1" and imp.shares[0] > 0.95
    assert abs(sum(imp.shares) - 1) < 1e-9 and list(imp.shares) == sorted(imp.shares, reverse=True)
    assert set(imp.names) == {"simd", "smp", "sched", "l1"} and imp.trials == 120


def test_a_text_parameter_and_two_effects_of_known_size_are_ordered():
    designs = random_designs(200, seed=3)
    slow = {"gto": 1.0, "lrr": 3.0, "two_level": 5.0}
    # additive on the log scale the forest uses: sched spans a factor 5, smp a factor 4 ** 0.25 ≈ 1.4
    values = [slow[d["sched"]] * d["smp"] ** 0.25 * 100 for d in designs]
    imp = parameter_importance(study_of(designs, values))
    assert imp.names[:2] == ("sched", "smp")
    assert imp.shares[1] > max(imp.shares[2:]) * 3  # a real, smaller effect stands clear of the noise ones


def test_failed_simulations_and_a_constant_parameter_are_left_out():
    designs = random_designs(60, seed=1)
    for d in designs:
        d["smp"] = 2  # never varied: no importance
    values = [float(d["simd"]) if i % 5 else None for i, d in enumerate(designs)]
    imp = parameter_importance(study_of(designs, values, objective="cycles * simd"))
    assert imp.top() == "simd" and imp.trials == 48 and imp.valued == "objective"
    assert dict(zip(imp.names, imp.shares))["smp"] == 0.0


def test_too_few_simulations_give_no_importance():
    designs = random_designs(MIN_TRIALS - 1)
    assert parameter_importance(study_of(designs, [1.0 * d["simd"] for d in designs])) is None


@pytest.mark.parametrize("values,levels,codes", [([32, 8, 16, 8], [8, 16, 32], [2, 0, 1, 0]),
                                                 (["lrr", "gto", "lrr"], ["gto", "lrr"], [1, 0, 1])])
def test_values_are_encoded_as_their_ranks(values, levels, codes):
    x, got = encode(values)
    assert got == levels and x.tolist() == codes
