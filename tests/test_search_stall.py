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


def test_novelty_is_how_near_the_moved_values_were_tried():
    centre = np.array([[0, 0, 0]])
    done = np.array([[0, 0, 0], [3, 3, 3], [1, 0, 1]])
    cand = np.array([[1, 0, 0], [0, 3, 0], [0, 0, 2], [1, 3, 0]])
    nov, moved = stall.novelty(cand, centre, done)
    # a = 1 was tried next door (1, 0, 1): 1; b = 3 only at (3, 3, 3), two parameters from (0, 3, 0): 2;
    # c = 2 never: 4 (three parameters + 1); the pair (a = 1, b = 3) never together: 4
    assert nov.tolist() == [1, 2, 4, 4]
    assert moved.tolist() == [[True, False, False], [False, True, False], [False, False, True], [True, True, False]]


def test_the_region_walks_the_moves_not_tried_here_before_the_models_best():
    centre = np.array([[0, 0, 0]])
    done = np.array([[0, 0, 0], [3, 3, 3], [1, 0, 1], [0, 1, 2]])
    cand = np.array([[1, 0, 0], [0, 0, 2], [0, 3, 0], [1, 1, 0]])
    score = np.array([0.9, 0.8, 0.1, 1.0])
    # b = 3 was simulated only far from here, so the model's worst-scored move goes first; a = 1 and c = 2
    # were tried next door, in the model's order; (1, 1, 0) is two parameters away: only once one is not enough
    assert stall.local_picks(cand, score, centre, done, 3).tolist() == [2, 0, 1]
    assert stall.local_picks(cand, score, centre, done, 5).tolist() == [2, 0, 1, 3]
    # (3, 3, 3) is three parameters away: only when nothing nearer is left does the region reach it
    far = np.array([[3, 3, 2]])
    assert stall.local_picks(far, np.zeros(1), centre, done, 1).tolist() == [0]
    assert stall.local_picks(far, np.zeros(1), centre, done, 1, max_radius=2).tolist() == []


def test_a_move_picked_counts_as_tried_for_the_next_pick():
    centres = np.array([[0, 0, 0], [0, 0, 2]])  # the same move b = 3 from either centre
    done = centres.copy()
    cand = np.array([[0, 3, 0], [0, 3, 2], [2, 0, 0]])
    done = np.vstack([done, [[2, 1, 1]]])  # a = 2 tried two parameters from (2, 0, 0): novelty 2
    score = np.array([0.5, 0.4, 0.1])
    # b = 3 is untried (4) from both; once (0, 3, 0) is picked, (0, 3, 2) is one parameter from it (1),
    # so the next pick is a = 2 (2) despite its worse score
    assert stall.local_picks(cand, score, centres, done, 2).tolist() == [0, 2]


def test_every_direction_from_a_centre_is_polled_before_one_twice():
    centre = np.array([[0, 0, 0]])
    done = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]])  # a was moved twice from the centre already
    cand = np.array([[3, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]])
    tries, key = stall.polled(cand, centre, done)
    assert tries.tolist() == [2, 0, 0, 0]
    assert key[1] != key[2] and len(set(key.tolist())) == 4
    # a = 3 is a never-simulated value (the most novel), but a was polled twice: b and c go first
    score = np.array([1.0, 0.2, 0.1, 0.0])
    assert stall.local_picks(cand, score, centre, done, 3).tolist() == [1, 2, 0]
    # within a round too: once a is moved, b goes before a second move of a, whatever the score
    cand = np.array([[1, 0, 0], [2, 0, 0], [0, 1, 0]])
    assert stall.local_picks(cand, np.array([0.9, 0.8, 0.1]), centre, centre, 3).tolist() == [0, 2, 1]


def test_the_share_grows_the_longer_the_stall_lasts():
    assert [stall.share_at(s, 0.2, stall=40, span=20) for s in (0, 39, 40, 59, 60, 80, 100, 400)] == (
        [0.0, 0.0, 0.2, 0.2, 0.4, pytest.approx(0.6), pytest.approx(0.6), pytest.approx(0.6)])
    assert stall.share_at(100, 0.0, stall=40, span=20) == 0.0  # off stays off
    assert stall.share_at(100, 0.8, stall=40, span=20) == 0.8  # a share above the cap is kept, not lowered
    assert [stall.phase_start(s, stall=40, span=20) for s in (40, 59, 60, 99)] == [40, 40, 60, 80]


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


def _ridge_space():
    return space_from_dict({"name": "ridge", "parameters": [{"name": n, "values": list(range(6))} for n in "whx"]})


def _ridge_value(w: int, h: int, x: int) -> float:
    """A basin whose floor is 10 at (2, 2, 2), except the largest h: 60 with a wide w (3 and up), and below
    the floor with a narrow one — 1 at (2, 5, 2), one parameter from the basin's floor (a tile height
    fast only with a narrow tile, as on conv-MI250X)."""
    if h == 5:
        return 1.0 + abs(w - 2) + abs(x - 2) if w <= 2 else 60.0
    return 10.0 + abs(w - 2) + abs(h - 2) + abs(x - 2)


def _ridge(digits, designs):
    return [(_ridge_value(d["w"], d["h"], d["x"]), "") for d in designs]


@pytest.mark.slow  # two 56-simulation searches: about 1 s of CPU, and sklearn's import
def test_a_stalled_search_walks_to_the_move_the_models_learned_as_bad(monkeypatch):
    """(Seeds 0–4: the models alone end at 10 in all five; with the walk at 1 in four, 2 in one. The region
    ranked by the forest, as before the walk, reached 1 in none of ten seeds at 50 simulations: 4 in three,
    through the restart, 10 in seven.)"""
    from gpudse_core.search.study import Trial

    monkeypatch.setattr(stall, "STALL", 10)  # the toy space's scale: stalled after 10, phases of 10
    monkeypatch.setattr(stall, "SPAN", 10)
    # the initial sample: h = 5 simulated only with a wide w (all 60), so the trees learn h = 5 as bad
    start = [(4, 5, 0), (5, 5, 4), (3, 5, 5), (0, 0, 0), (5, 1, 5),
             (1, 3, 4), (4, 2, 1), (0, 4, 5), (3, 0, 3), (5, 3, 0)]
    trials = [Trial(i, 0, 0, dict(w=w, h=h, x=x), None, _ridge_value(w, h, x), "ok")
              for i, (w, h, x) in enumerate(start)]
    kw = dict(goal="min", budget=56, batch=3, seed=0, surrogate="forest", trials=trials)
    alone = run_search(make_pool(_ridge_space()), _ridge, local_share=0.0, **kw)
    assert alone.best().value == 10.0  # the basin's floor, never h = 5 beside it
    res = run_search(make_pool(_ridge_space()), _ridge, **kw)  # the default share
    assert res.best().value == 1.0
    first = next(t for t in res.trials if t.value is not None and t.value < 10.0)
    assert first.surrogate == "local" and first.design["h"] == 5  # the walk tried the move the model ranks last
    keys = [tuple(t.design.values()) for t in res.trials]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan"), "half", True])
def test_a_share_outside_0_to_1_is_refused_before_anything_runs(share):
    ran = []
    with pytest.raises(SearchError, match="local_share must be a share from 0 to 1"):
        run_search(make_pool(_trap_space()), lambda d, designs: ran.append(d) or _trap(d, designs), goal="min",
                   budget=20, local_share=share)
    assert not ran
