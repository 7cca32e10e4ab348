"""``response_transform="auto"`` (step 8 of the package docstring): the search once per response transform,
keeping the one whose rows left out one at a time are predicted best (Lee & Brooks model the response on a
transformed scale; the choice between log, square root and none is made by leave-one-out error).

Also the plain search and the fit without the robust layer, which the outer layers (:mod:`.robust`,
:mod:`.level_cells`) call.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..fitted import FitError, StepwiseModel
from ..trace import TraceStep
from .search import Search

AUTO_TRANSFORMS = ("log", "sqrt", "none")  # what response_transform="auto" chooses from


class Data(NamedTuple):
    """The training data as the search takes them: parameter frame (string column names, response left out),
    response values, the parameters to model and the response's name."""

    X: pd.DataFrame
    y: np.ndarray
    names: list[str]
    response: str


class Fit(NamedTuple):
    """A layer's result: the model and its mean leave-one-out error (what the next layer out chooses by)."""

    model: StepwiseModel
    loo_error: float


Steps = Generator[TraceStep, None, Fit]  # yields Table 1 rows, returns the fit


def search(settings: Mapping[str, Any], data: Data) -> Steps:
    """Algorithm 1 on one response scale (:class:`.search.Search`)."""
    s = Search(settings, data.X, data.y, data.names, data.response)
    yield from s.steps()
    return Fit(s.model, s.loo_error)


def least_squares(settings: Mapping[str, Any], data: Data) -> Steps:
    """The least-squares search: :func:`auto_transform` when the transform is ``auto``, else :func:`search`."""
    if settings["response_transform"] == "auto":
        return (yield from auto_transform(settings, data))
    return (yield from search(settings, data))


def auto_transform(settings: Mapping[str, Any], data: Data) -> Steps:
    """The whole search once per transform the response allows (log for positive responses, sqrt for
    non-negative ones, none), keeping the model with the lowest leave-one-out error on the response scale
    (relative errors, so a log and an untransformed model compare on the errors a user sees). Yields the kept
    search's steps and a final ``transform`` step with every transform's score.

    Why: time adds up (rounds of blocks, memory + compute cycles), and where the runtime spans a few × an
    untransformed or square-root response is the more additive one (BFS, LPS, AES on the built-in simulator);
    across 100× (real tuning spaces) the log is, and the errors choose it (docs/models.md "Regression choices").

    Parameters
    ----------
    settings : mapping
        The estimator's parameters.
    data : Data

    Returns
    -------
    Fit
        (the generator's return value) the kept transform's model and its leave-one-out error.

    References
    ----------
    Lee & Brooks §3 (the response modelled on a transformed scale); Stargazer §5.2, Algorithm 1.
    """
    y, col = data.y, data.response
    options = [t for t in AUTO_TRANSFORMS if (t != "log" or np.all(y > 0)) and (t != "sqrt" or np.all(y >= 0))]
    runs, failed = [], {}
    for t in options:
        try:
            s = Search({**settings, "response_transform": t}, data.X, y, data.names, col)
            steps = list(s.steps())
        except FitError as e:
            failed[t] = str(e)
            continue
        runs.append((s.loo_error, t, s.model, steps))
    if not runs:
        raise FitError(next(iter(failed.values())))
    err, t, model, steps = min(runs, key=lambda r: r[0])
    yield from steps
    scores = {r[1]: r[0] for r in runs}
    step = TraceStep(len(steps) + 1, "transform", "loo_error", scores, failed, t, True, err, list(model.terms),
                     model.r2, model.adj_r2)
    model.trace.append(step.to_dict())
    model.settings["response_transform"] = "auto"
    shown = ", ".join(f"{k} {100 * v:.3g} %" for k, v in sorted(scores.items(), key=lambda kv: kv[1]))
    model.notes.append(f"{col}: {t} scale chosen by the mean leave-one-out error ({shown})"
                       if np.all(y > 0) else f"{col}: {t} scale chosen by the mean leave-one-out error")
    yield step
    return Fit(model, err)
