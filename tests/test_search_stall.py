"""The search's exploration once it stalls (gpudse_core/search/stall.py): a trust region of designs one
parameter (then two, three) away from the best simulated, then a restart far from everything simulated
(CASMOPOLITAN's Hamming trust region and TuRBO's restarts, as a share of the batch). Checked on its parts
with known answers, and on a toy space with a trap: a wide basin that draws the models in and a narrow,
deeper one in the opposite corner that the models alone never simulate."""

from __future__ import annotations

import numpy as np
import pytest

from gpudse_core.search import stall
from gpudse_core.search.pool import make_pool
from gpudse_core.search.study import SearchError, run_search
from gpudse_core.space.design import space_from_dict


def test_stalled_for_counts_the_simulations_since_the_best_last_improved():
    assert stalled_for([None, None]) == 0  # nothing succeeded: not stalled
    assert stalled_for([5.0, 4.0, 6.0, None, 4.0]) == 3  # a tie with the best is no improvement
    assert stall.stalled_for([5.0, 6.0, 7.0], -1.0) == 0  # maximising: 7 improved
    assert stall.stalled_for([5.0, 6.0, 7.0], 1.0) == 2


def stalled_for(values):
    return stall.stalled_for(values, 1.0)


def test_the_phase_alternates_region_and_restart_once_stalled():
    assert [stall.phase(s, stall=4, span=3) for s in range(0, 14)] == (
        [""] * 4 + ["local"] * 3 + ["far"] * 3 + ["local"] * 3 + ["far"])


@pytest.mark.parametrize("k", [1, 5])
def test_the_owed_share_is_the_same_part_of_the_simulations_whatever_the_batch(k):
    counted: list = []
    for _ in range(40 // k):
        n = stall.owed(counted, ("local", "far"), 0.2, k)
        counted += ["local"] * n + ["forest"] * (k - n)
    assert sum(c == "local" for c in counted) == 8  # a fifth of 40
    assert stall.owed([], ("local",), 0.0, 5) == 0


def test_the_region_is_the_best_scored_designs_one_parameter_from_the_centres_then_wider():
    cand = np.array([[0, 0, 1], [0, 2, 0], [1, 1, 0], [3, 3, 3], [0, 0, 2]])
    unit = cand / 3.0
    score = np.array([0.1, 0.5, 0.9, 1.0, 0.3])
    centre = np.array([[0, 0, 0]])
    # one parameter from (0, 0, 0): rows 0, 1 and 4 — the best of them by score is row 1, then row 4
    assert stall.local_picks(cand, unit, score, centre, 2).tolist() == [1, 4]
    # (3, 3, 3) is three parameters away: only when nothing nearer is left does the region reach it
    assert stall.local_picks(cand[3:4], unit[3:4], score[3:4], centre, 1).tolist() == [0]
    assert stall.local_picks(cand[3:4], unit[3:4], score[3:4], centre, 1, max_radius=2).tolist() == []


def test_the_restart_takes_the_designs_farthest_from_everything_simulated():
    grid = np.array([[a, b] for a in range(5) for b in range(5)])
    unit = grid / 4.0
    done = np.array([[0.0, 0.0], [0.25, 0.0]])
    picks = stall.far_picks(grid, unit, np.zeros(len(grid)), done, 2)
    assert grid[picks[0]].tolist() == [4, 4]  # the corner opposite the simulated ones
    # the second is far from both the simulated and the first pick: an opposite corner
    assert grid[picks[1]].tolist() in ([0, 4], [4, 0])


def _trap_space():
    return space_from_dict({"name": "trap", "parameters": [{"name": n, "values": list(range(8))} for n in "abc"]})


def _trap(digits, designs):
    """A wide basin around (2, 2, 2) whose floor is 10, and a narrow one at (7, 7, 7) going down to 1."""
    out = []
    for d in designs:
        a, b, c = d["a"], d["b"], d["c"]
        wide = 10 + abs(a - 2) + abs(b - 2) + abs(c - 2)
        narrow = 1 + 4 * (abs(a - 7) + abs(b - 7) + abs(c - 7))
        out.append((float(min(wide, narrow)), ""))
    return out


@pytest.mark.slow  # two 60-simulation searches: about 1 s of CPU, and sklearn's import
def test_a_stalled_search_explores_and_finds_the_narrow_basin_the_models_alone_never_simulate(monkeypatch):
    monkeypatch.setattr(stall, "STALL", 10)  # the toy space's scale: stalled after 10, phases of 5
    monkeypatch.setattr(stall, "SPAN", 5)
    kw = dict(goal="min", budget=60, batch=3, seed=2, surrogate="forest")
    alone = run_search(make_pool(_trap_space()), _trap, local_share=0.0, **kw)
    assert alone.best().value == 10.0  # the trap: the wide basin's floor, and nothing labelled by the stall
    assert not any(t.surrogate in ("local", "far") for t in alone.trials)
    res = run_search(make_pool(_trap_space()), _trap, local_share=0.5, **kw)
    assert res.best().value == 1.0
    first = next(t for t in res.trials if t.value is not None and t.value < 10.0)
    assert first.surrogate == "far"  # the restart found the narrow basin; the models then went down it
    keys = [tuple(t.design.values()) for t in res.trials]
    assert len(set(keys)) == len(keys)  # nothing simulated twice


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan"), "half", True])
def test_a_share_outside_0_to_1_is_refused_before_anything_runs(share):
    ran = []
    with pytest.raises(SearchError, match="local_share must be a share from 0 to 1"):
        run_search(make_pool(_trap_space()), lambda d, designs: ran.append(d) or _trap(d, designs), goal="min",
                   budget=20, local_share=share)
    assert not ran
