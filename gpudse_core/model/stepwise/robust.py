"""``robust="huber"`` (step 9 of the package docstring): Huber's device for making a least-squares procedure
robust (pseudo-observations, Huber, *Robust Statistics*, 1981, §7.8) wrapped around the stepwise search of
Stargazer Algorithm 1.

The least-squares search runs first (with ``response_transform="auto"`` it chooses the transform). Then
``ROBUST_ROUNDS`` times: the residuals e of the current fit f, centred on their median c, are clipped at
``ROBUST_K`` times their MAD scale s, and the search is rerun at that transform on z* = f + c + ψ(e − c) / m
(m: the share of residuals inside the clip, Huber's correction, which keeps the F-tests from seeing a smaller
spread than the data's). Of the least-squares model and each round's, the one whose rows left out one at a time
are predicted best (:func:`robust_score`) is kept: a round started from a poor fit can lose a term, and where
there is nothing to discount least squares is as good. A round is not kept when least squares predicts, left out,
the rows the round calls outlying (:func:`real_corners`): on a deterministic simulator rows that several designs
agree on are the physics, and only a row nothing else explains is discounted.

A kept round's coefficients are least squares on its pseudo-observations; its coefficient table, ANOVA, R² and
adjusted R² are least squares on its own working response (:func:`.fitted.working_response`); its prediction
intervals take the spread of the data about the fit. A fit whose residuals have no spread (noise-free data)
stays least squares.

Why: a tuning space has a few pathological cells (on the A4000 a 2D convolution with block height 8 and 4 × 4
tiles is 3–30× slower than its neighbours); in least squares those rows choose terms and pull every
coefficient. Measured, with what was tried and not kept (the full M-estimate of the last columns, k = 1.345,
one round, five rounds), in docs/models.md ("Real tuning spaces").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...fmt import fmt_r2
from ..fitted import (
    FitError,
    StepwiseModel,
    design_matrix,
    huber_residuals,
    inverse_transform,
    mad_scale,
    ols_noise,
    transform_response,
    working_response,
)
from ..trace import TraceStep
from .ols import adj_r2, r2
from .scores import loo_errors
from .search import GUARD_NOTE, Search
from .transform import Data, Fit, Steps, least_squares

# Huber's ψ clips a residual at ROBUST_K times the MAD scale, and the search is rerun ROBUST_ROUNDS times on the
# pseudo-observations (docs/models.md "Real tuning spaces": k = 1.0 and 3 rounds against k = 1.345, 0.7 and 1,
# 4 or 5 rounds, 20 draws per GPU)
ROBUST_K = 1.0
ROBUST_ROUNDS = 3
LEAST_SQUARES = "least squares"  # the robust fit's first candidate: the least-squares search's model
ROBUST_TIE = 0.02  # a rerun replaces least squares only when its leave-one-out error is lower by more than this share
OUTLYING = 3.0  # residuals beyond this many scales are called outlying in the fit's note
# a round is not kept when least squares predicts the rows it calls outlying, left out, with less than this share of
# the round's error on them (:func:`real_corners`)
CORNER_SHARE = 0.5

Candidate = tuple[str, StepwiseModel, np.ndarray]  # (name, model, its design on the training rows)


def pseudo_observations(fitted: np.ndarray, z: np.ndarray, transform: str, tiny: float) -> np.ndarray | None:
    """Huber's pseudo-observations of a fit (Huber 1981, §7.8): the fitted values plus the residuals, centred on
    their median (a fit pulled up by slow rows first moves to the bulk of them), clipped at ``ROBUST_K`` times
    their MAD scale, divided by the share inside (:func:`.fitted.huber_residuals`); non-negative on the
    square-root scale. None when the residuals have no spread above *tiny*.

    Parameters
    ----------
    fitted : ndarray
        The fit's values on the training rows (response scale of the search).
    z : ndarray
        The data on that scale.
    transform : str
    tiny : float
        The spread below which the residuals are called noise-free (:func:`spread_floor`).

    Returns
    -------
    ndarray or None

    References
    ----------
    Huber, *Robust Statistics*, 1981, §7.8.
    """
    e = z - fitted
    s = mad_scale(e)
    if not s > tiny:
        return None
    zs = fitted + float(np.median(e)) + huber_residuals(e, ROBUST_K, s)
    return np.maximum(zs, 0.0) if transform == "sqrt" else zs


def spread_floor(z: np.ndarray) -> float:
    """The residual scale below which a fit is called noise-free."""
    return 1e-9 * max(float(np.ptp(z)), float(np.max(np.abs(z))), 1e-300)


def robust_score(model: StepwiseModel, A: np.ndarray, z: np.ndarray, y: np.ndarray, pseudo: bool,
                 bound_margin: float | None) -> tuple[float, float, np.ndarray, np.ndarray, np.ndarray]:
    """How well a candidate of the robust fit predicts its rows left out.

    The mean leave-one-out error on the response scale, scored as the prune step scores (the transform and the
    pruning are chosen by the same figure), from the hat values of its design *A* applied to its working
    response (the data for the least-squares model, its pseudo-observations for a Huber round).

    Returns
    -------
    score : float
    scale : float
        The MAD scale of its residuals.
    working : ndarray
        Its working response.
    A : ndarray
        Its design on the training rows.
    errors : ndarray
        Each row's leave-one-out error.
    """
    coef = np.asarray(model.coefficients, dtype=float)
    s = mad_scale(z - A @ coef)
    working = working_response(A, z, coef, ROBUST_K, s) if pseudo and s > 0 else z
    errors = loo_errors(A, working, y, model.transform, z, bound_margin)
    return float(np.mean(errors)), s, working, A, errors


def real_corners(round_: tuple, least: tuple, z: np.ndarray) -> np.ndarray:
    """The rows a Huber round calls outlying (beyond ``OUTLYING`` scales) that least squares predicts when they
    are left out: its leave-one-out error on them, together, is below ``CORNER_SHARE`` of the round's. A lone
    pathological design is predicted badly by both (nothing else shows it), so the round keeps discounting it;
    a corner that several rows show — on a deterministic simulator, the physics (MGPUSim's 4-CU GPUs) — is
    predicted from the others by least squares, and a round that down-weights it is not kept.

    Parameters
    ----------
    round_, least : tuple
        The scored candidates (name, model, score, scale, working response, design, leave-one-out errors) of
        the round and of least squares.
    z : ndarray
        The response on the search's scale.

    Returns
    -------
    ndarray of int
        The rows (empty: the round down-weights no row least squares predicts).
    """
    _, model, _, s, _, A, errors = round_
    e = z - A @ np.asarray(model.coefficients, dtype=float)
    out = np.flatnonzero(np.abs(e - np.median(e)) > OUTLYING * s)
    if out.size == 0 or not np.sum(least[6][out]) < CORNER_SHARE * np.sum(errors[out]):
        return np.zeros(0, dtype=int)
    return out


def huber(settings: Mapping[str, Any], data: Data) -> Steps:
    """The robust fit: least squares, ``ROBUST_ROUNDS`` reruns of the search on Huber pseudo-observations, and
    the candidate that predicts its left-out rows best (least squares unless a round is more than
    ``ROBUST_TIE`` better). Yields least squares' steps and one ``robust`` row per round and for the choice.

    Parameters
    ----------
    settings : mapping
        The estimator's parameters.
    data : Data

    Returns
    -------
    Fit
        (the generator's return value) the kept model and its leave-one-out error.

    References
    ----------
    Huber, *Robust Statistics*, 1981, §7.8; Stargazer §5.2, Algorithm 1 (the search rerun).
    """
    first = yield from least_squares({**settings, "robust": "none"}, data)
    t = first.model.transform
    z = transform_response(data.y, t, data.response)
    fits: list[Candidate] = [(LEAST_SQUARES, first.model, design_matrix(first.model, data.X))]
    yield from _rounds(settings, data, fits, z)
    if len(fits) == 1:  # nothing to make robust: least squares, said so
        model = first.model
        model.settings = {**model.settings, "robust": "huber"}
        model.notes.append("robust fit: the least-squares residuals have no spread (noise-free data), so "
                           "there is nothing to make robust: the model is least squares")
        return Fit(model, first.loo_error)
    bound = settings["bound_margin"]
    scored = [(name, m, *robust_score(m, A, z, data.y, name != LEAST_SQUARES, bound)) for name, m, A in fits]
    best = min(scored[1:], key=lambda c: c[2])  # ties: the earliest round
    # least squares unless a round predicts clearly better: four noisy leave-one-out means, and on data with
    # nothing to discount the rounds only trade noise (the tie band of --model auto)
    kept = scored[0] if scored[0][2] <= best[2] * (1 + ROBUST_TIE) else best
    corners = real_corners(best, scored[0], z) if kept is best else np.zeros(0, dtype=int)
    if corners.size:
        kept = scored[0]
    model = _kept(kept, first.model, z, len(fits) - 1, corners)
    step = TraceStep(len(model.trace) + 1, "robust", "loo_error", {n: sc for n, _, sc, *_ in scored}, {},
                     kept[0], True, kept[2], list(model.terms), model.r2, model.adj_r2)
    model.trace = model.trace + [step.to_dict()]
    yield step
    return Fit(model, kept[2])


def _rounds(settings: Mapping[str, Any], data: Data, fits: list[Candidate], z: np.ndarray) -> Steps:
    """The Huber rounds: each reruns the search on the pseudo-observations of the previous candidate in *fits*
    and appends its model; stops early on noise-free residuals or pseudo-observations the search refuses."""
    t = fits[0][1].transform
    tiny = spread_floor(z)
    base = len(fits[0][1].trace)
    for r in range(1, ROBUST_ROUNDS + 1):
        _, model, A = fits[-1]
        zs = pseudo_observations(A @ np.asarray(model.coefficients, dtype=float), z, t, tiny)
        if zs is None:  # noise-free data (or a fit through every row): nothing to make robust
            break
        ys = inverse_transform(zs, t)
        if not np.all(np.isfinite(ys)):  # beyond the response scale's finite values
            break
        try:
            s = Search({**settings, "robust": "none", "response_transform": t}, data.X, ys, data.names,
                       data.response)
            steps = list(s.steps())
        except FitError:  # the pseudo-observations cannot be fitted (e.g. all clipped to one value)
            break
        model = s.model
        fits.append((f"Huber round {r}", model, design_matrix(model, data.X)))
        last = steps[-1] if steps else None
        yield TraceStep(base + r, "robust", "r2", {}, {}, f"Huber round {r}", True, None, list(model.terms),
                        last.r2 if last else model.r2, last.adj_r2 if last else model.adj_r2)


def _kept(kept: tuple, first: StepwiseModel, z: np.ndarray, rounds: int,
          corners: np.ndarray = np.zeros(0, dtype=int)) -> StepwiseModel:
    """The kept candidate's model with the robust fit's figures, settings, notes and trace (the trace row of the
    choice itself is added by the caller). *corners*: the rows a better-scoring round would have down-weighted
    although least squares predicts them (:func:`real_corners`)."""
    name, model, _score, s, working, A, _errors = kept
    t = first.transform
    reruns = f"the search was rerun {rounds} time{'s' if rounds != 1 else ''} on Huber pseudo-observations"
    if name == LEAST_SQUARES and corners.size:
        rows = ", ".join(str(int(i) + 1) for i in corners[:8]) + (", …" if corners.size > 8 else "")
        note = (f"robust fit: {reruns}; the best rerun calls row(s) {rows} outlying, but least squares predicts "
                f"them when they are left out (real corners of the space, not noise), so its model is kept")
        trace = [dict(r) for r in model.trace]
    elif name == LEAST_SQUARES:
        note = (f"robust fit: {reruns}; no rerun predicts its left-out rows more than "
                f"{ROBUST_TIE:.0%} better than least squares, whose model is kept")
        trace = [dict(r) for r in model.trace]
    else:
        fitted = A @ np.asarray(model.coefficients, dtype=float)
        e = z - fitted
        e = e - np.median(e)
        clipped = int(np.count_nonzero(np.abs(e) > ROBUST_K * s))
        outlying = int(np.count_nonzero(np.abs(e) > OUTLYING * s))
        # R² of the pseudo-observations (outlying rows counted at the clip), as its coefficient table reports it;
        # the note gives the data's R² too. Prediction intervals take the data's spread about the fit: with the
        # pseudo-observations' spread 95 % intervals covered 85 % of held-out simulations on AES
        # (tests/test_intervals.py asks for 90 %)
        rss, tss = float(np.sum((working - fitted) ** 2)), float(np.sum((working - working.mean()) ** 2))
        model.r2, model.adj_r2 = r2(rss, tss), adj_r2(rss, tss, z.size, A.shape[1])
        data_rss = float(np.sum((z - fitted) ** 2))
        data_r2 = r2(data_rss, float(np.sum((z - z.mean()) ** 2)))
        model.noise = ols_noise(A, data_rss)
        model.z_range = (float(z.min()), float(z.max()))
        model.robust = {"method": "huber", "k": ROBUST_K, "scale": float(s), "rounds": int(name.rsplit(" ", 1)[1])}
        scale_text = f"{s:.3g}" + ("" if t == "none" else f" on the {t} scale")
        note = (f"robust fit: {reruns}, and {name} predicts its left-out rows best; its residual scale is "
                f"{scale_text}, {clipped} of {z.size} rows lie beyond {ROBUST_K:g} scale and are counted as "
                f"if they were that far (Huber's ψ), {outlying} lie beyond {OUTLYING:g} scales (outlying). "
                f"R² is {fmt_r2(model.r2)} on these pseudo-observations, {fmt_r2(data_r2)} on the data")
        # the scale decision first (its R² blank: it was made on least squares' fits), then the kept round's own
        # search on its pseudo-observations
        transform_rows = [{**r, "r2": None, "adj_r2": None}  # least squares' decision: no model state of its own
                          for r in first.trace if r.get("kind") == "transform"]
        trace = transform_rows + [{**r, "fit": name} for r in model.trace]
    model.settings = {**first.settings, "robust": "huber"}
    own = [n for n in first.notes if name == LEAST_SQUARES or not n.startswith(GUARD_NOTE)]
    model.notes = own + [n for n in model.notes if n not in own] + [note]
    model.trace = [{**r, "step": i + 1} for i, r in enumerate(trace)]
    return model
