"""The search history's charts (gpudse_core.search.figures): what each line and axis of the parallel
coordinates holds, and the best-so-far curves of two searches."""

from __future__ import annotations

from gpudse_core.search.figures import best_so_far, parallel_coordinates
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.study import Trial


def study(values, goal="min", cost=None):
    trials = tuple(Trial(i, i // 4, 0, {"simd": [8, 16, 32, 64][i % 4], "sched": ["lrr", "gto"][i % 2]}, None, v,
                         "ok" if v is not None else "failed", cost=None if cost is None else float(i))
                   for i, v in enumerate(values))
    settings = {"goal": goal, "response": "cycles", "params": ["simd", "sched"], **({"cost": cost} if cost else {})}
    return SearchStudy(settings, trials, "budget")


def test_parallel_coordinates_one_line_per_success_an_axis_per_parameter_and_the_value():
    s = study([5.0, None, 3.0, 4.0, 1.0, 2.0], goal="pareto", cost="simd")
    pc = parallel_coordinates(s).data[0]
    labels = [d.label for d in pc.dimensions]
    assert labels == ["simd", "sched", "cycles", "cost"]
    assert list(pc.line.color) == [5.0, 3.0, 4.0, 1.0, 2.0]  # the failed simulation is left out
    simd, sched = pc.dimensions[0], pc.dimensions[1]
    assert list(simd.ticktext) == ["8", "16", "32", "64"] and list(simd.values) == [0, 2, 3, 0, 1]
    assert list(sched.ticktext) == ["gto", "lrr"] and list(sched.values) == [1, 1, 0, 1, 0]


def test_best_so_far_of_two_searches_follows_each_goal():
    fig = best_so_far(["low", "high", "front"], [study([5.0, 3.0, None, 4.0]), study([1.0, 3.0, 2.0], "max"),
                                                 study([1.0, 2.0], "pareto", cost="simd")])
    assert [tr.name for tr in fig.data] == ["low", "high"]  # a pareto search has no best so far
    assert list(fig.data[0].y) == [5.0, 3.0, 3.0, 3.0] and list(fig.data[1].y) == [1.0, 3.0, 3.0]
