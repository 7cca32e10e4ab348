"""The search's interleaved uniform draws (SMAC's random configurations), a setting off by default (they
measured worse on the convolution tables): a fixed share of the proposals after the initial sample, whatever
the batch size; a share of those made while the best has stalled; none by default; each labelled
``random`` in the history and never a design simulated before."""

from __future__ import annotations

import pytest

from gpudse_core.search.pool import make_pool
from gpudse_core.search.study import RANDOM_SHARE, STALL, STALLED_SHARE, run_search
from gpudse_core.space.design import space_from_dict


def _space():
    return space_from_dict({"name": "grid", "parameters": [{"name": "a", "values": list(range(20))},
                                                           {"name": "b", "values": list(range(20))}]})


def _bowl(digits, designs):
    """A smooth bowl: the forest improves steadily, so the best rarely stalls."""
    return [(1.0 + (d["a"] - 7) ** 2 + (d["b"] - 12) ** 2, "") for d in designs]


def _flat_after_first(digits, designs):
    """A constant response: after the first success nothing ever improves (the best has stalled)."""
    return [(5.0, "") for _ in designs]


@pytest.mark.parametrize("batch", [1, 4])
def test_a_fixed_share_of_proposals_are_uniform_draws_whatever_the_batch(batch):
    space = _space()
    res = run_search(make_pool(space), _bowl, goal="min", budget=50, initial=10, batch=batch, seed=1,
                     random_share=0.25, stalled_share=0.0)
    after = res.trials[10:]
    drawn = [t for t in after if t.surrogate == "random"]
    assert len(drawn) == int(len(after) * 0.25)  # 40 model rounds' worth: 10 draws, batch 1 or 4 alike
    assert all(t.acquisition is None and t.predicted is not None for t in drawn)  # the forest's, for the record
    keys = [tuple(t.design.values()) for t in res.trials]
    assert len(set(keys)) == len(keys)  # a draw never repeats a simulated design


def test_switched_off_every_proposal_is_the_models():
    res = run_search(make_pool(_space()), _bowl, goal="min", budget=40, initial=10, batch=3, seed=2, random_share=0,
                     stalled_share=0)
    assert not any(t.surrogate == "random" for t in res.trials)
    assert all(t.surrogate in ("forest", "stepwise") for t in res.trials[10:])


def test_the_stalled_share_applies_once_the_best_has_stalled():
    res = run_search(make_pool(_space()), _flat_after_first, goal="min", budget=10 + STALL + 40, initial=10, batch=2,
                     seed=3, stalled_share=0.5)
    # the first design is the best for ever: stalled once STALL more have simulated, and not before
    assert not any(t.surrogate == "random" for t in res.trials[:STALL + 1])
    later = res.trials[STALL + 1:]
    assert sum(t.surrogate == "random" for t in later) / len(later) == pytest.approx(0.5, abs=0.06)


def test_by_default_every_proposal_is_the_models_even_when_stalled():
    assert RANDOM_SHARE == 0 and STALLED_SHARE == 0
    res = run_search(make_pool(_space()), _flat_after_first, goal="min", budget=10 + STALL + 20, initial=10, batch=2,
                     seed=5)
    assert not any(t.surrogate == "random" for t in res.trials)
