"""Named settings of the stepwise search: Stargazer as written (§5.2, Algorithm 1, and the authors' released
implementation) and Algorithm 1 as the paper's text reads on this package's incremental search.

The estimator's own defaults are the robust choice measured in docs/models.md "Regression choices" (the F-test at
θ = φ = 0.001, revisit, look-ahead, prune, the one-row guard, Huber rounds, level cells, the automatic response
transform); each of these is off in :data:`PAPER_SETTINGS` and :data:`ALGORITHM1_SETTINGS`.
"""

from __future__ import annotations

from typing import Any

# Stargazer as written: the authors' released implementation (Stargazer 1.0, :mod:`.reference`):
# R's natural splines on its own knots, full pairwise interactions, adjusted R² against R² with
# θ = φ = 0 relative to R², the raw response. Its predictions are guarded like every model's (a
# prediction beyond the training range widened by the bound margin is bounded and flagged; R would
# give the unbounded value). ``threshold_rule="absolute"``
# with θ = φ = 0.01 is the paper text's reading (§5.2). The knot, scale and interaction settings of
# the robust search do not apply to it.
PAPER_SETTINGS: dict[str, Any] = {
    "reference": True, "theta": 0.0, "phi": 0.0, "threshold_rule": "relative", "criterion": "adjr2", "compare": "r2",
    "interactions": "full", "max_order": 2, "revisit": False, "lookahead": False, "prune": False, "unseen": "model",
    "response_transform": "none", "robust": "none", "cells": False, "row_guard": False, "count_pairs": False,
}
ABSOLUTE_THRESHOLD = 0.01  # θ = φ of the paper text's absolute reading (§5.2)
# Algorithm 1 as the paper's text reads on this module's incremental search (no exact-reference
# claim): two even interior knots on the raw values (k = 4), restricted pairwise interactions,
# adjusted R² against R² with absolute θ = φ = 0.01. What tests and benchmarks of the search use as
# its plain form; the ``paper`` model is :data:`PAPER_SETTINGS`.
ALGORITHM1_SETTINGS: dict[str, Any] = {
    "theta": ABSOLUTE_THRESHOLD, "phi": ABSOLUTE_THRESHOLD, "criterion": "adjr2", "compare": "r2",
    "threshold_rule": "absolute", "knots": 4, "knot_placement": "even", "interactions": "restricted",
    "scale": "linear", "categorical_levels": 0, "max_order": 2, "revisit": False, "lookahead": False, "prune": False,
    "unseen": "model", "response_transform": "none", "powers_of_two": False, "robust": "none", "cells": False,
    "row_guard": False, "count_pairs": False,
}
