"""The stepwise model's origin line (dashboard.frame.describe_fit): the settings a reader needs."""

from __future__ import annotations

from gpudse_core.model.stepwise import PAPER_SETTINGS

DEFAULT = {"theta": 0.001, "phi": 0.001, "criterion": "ftest", "knots": 6, "knot_placement": "distinct",
           "robust": "huber", "cells": True, "row_guard": True, "count_pairs": True, "response_transform": "auto"}


def test_origin_line_names_the_robust_defaults_and_says_which_were_taken_off():
    from dashboard.frame import describe_fit

    on = describe_fit(DEFAULT, "log")
    assert on.startswith("stepwise (Algorithm 1): θ = 0.001, φ = 0.001, ftest, k = 6 (distinct), Huber fit")
    assert "level cells, one-row guard, count pairs" in on and "no " not in on
    assert "log response scale chosen by the mean leave-one-out error" in on
    off = describe_fit({**DEFAULT, "count_pairs": False})
    assert "no count pairs" in off and "level cells, one-row guard" in off
    off = describe_fit({**DEFAULT, "cells": False, "row_guard": False})
    assert "no level cells, no one-row guard, count pairs" in off
    paper = describe_fit(dict(PAPER_SETTINGS))  # Stargazer as written has none of them: nothing to say
    assert paper.startswith("stepwise, Stargazer as written") and "count pairs" not in paper
