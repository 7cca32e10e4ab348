"""``cells=True`` (step 10 of the package docstring, :mod:`..cells`): level cells wrapped around the stepwise
search of Stargazer Algorithm 1 (least squares or robust, as set).

Indicator columns for combinations of two or three parameter levels (a tuning space's corners that no smooth
curve follows) are chosen by a Bonferroni F-test on the fit's working response and kept when the rows left out
are predicted better. For a robust model the selection makes ``cells.ROUNDS`` passes, each on the Huber
pseudo-observations of the previous pass's fit with its cells (a corner the cells fit is no longer clipped as
outlying). The pass (or no cells) whose rows left out one at a time are predicted best is kept, cells only when
more than ``cells.TIE`` better. ``max_order=2`` allows pairs only; with ``max_terms`` a cell must fall in a term
the model has.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...fmt import fmt_r2
from .. import cells as lc
from ..fitted import StepwiseModel, design_matrix, mad_scale, ols_noise, term_name, transform_response, working_response
from ..splines import format_level, make_basis
from ..support import Support
from ..trace import TraceStep
from .ols import adj_r2, r2
from .robust import huber, pseudo_observations, spread_floor
from .scores import loo_errors
from .transform import Data, Fit, Steps, least_squares

Pass = tuple[str, list[int], np.ndarray, np.ndarray]  # (name, chosen cells, design with them, working response)


def without_cells(settings: Mapping[str, Any], data: Data) -> Steps:
    """The fit the cells are added to: the robust fit (:func:`.robust.huber`) or least squares."""
    if settings["robust"] == "huber":
        return (yield from huber(settings, data))
    return (yield from least_squares(settings, data))


def with_cells(settings: Mapping[str, Any], data: Data) -> Steps:
    """The fit without cells, then the level cells chosen on its working response; yields the fit's steps and
    a ``cells`` row with every pass's leave-one-out score.

    Parameters
    ----------
    settings : mapping
        The estimator's parameters (``max_terms``, ``max_order`` and ``bound_margin`` shape the cells).
    data : Data

    Returns
    -------
    Fit
        (the generator's return value) the model, with the cells when they predict better, and its
        leave-one-out error.

    References
    ----------
    Lee & Brooks (regional models: a part of the space with its own behaviour); Stargazer §5.2, Algorithm 1.
    """
    inner = yield from without_cells({**settings, "cells": False}, data)
    model = inner.model
    model.settings = {**model.settings, "cells": True}
    t = model.transform
    z = transform_response(data.y, t, data.response)
    A = design_matrix(model, data.X)
    coef = np.asarray(model.coefficients, dtype=float)
    tiny = spread_floor(z)
    if not mad_scale(z - A @ coef) > tiny:  # noise-free data: nothing a cell could find that is not noise
        model.notes.append("level cells: the residuals have no spread (noise-free data), so none is looked for")
        return inner
    robust = model.robust
    working = working_response(A, z, coef, robust["k"], robust["scale"]) if robust else z
    cand, text, groups = _candidates(model, data, settings)
    bound = settings["bound_margin"]
    scores = {"without cells": float(np.mean(loo_errors(A, working, data.y, t, z, bound)))}
    passes = _passes(A, working, cand.columns, data.y, z, t, bool(robust), bound, scores)
    best = min(passes, key=lambda c: scores[c[0]]) if passes else None  # ties: the earliest pass
    kept = best is not None and scores[best[0]] < scores["without cells"] * (1 - lc.TIE)
    loo_error = inner.loo_error
    if kept:
        name, chosen, A2, w = best
        model, extra = add_cells(model, A2, w, z, [cand.conditions[j] for j in chosen], text, data.X)
        loo_error = scores[name]
        note = _kept_note(chosen, cand, name, bool(robust), extra)
    else:
        note = _none_note(bool(passes), cand.columns.shape[1], settings["max_terms"] is not None, groups)
    model.notes = list(model.notes) + [note + _limits_note(cand)]
    step = TraceStep(len(model.trace) + 1, "cells", "loo_error", scores, {},
                     best[0] if kept else "without cells", kept, loo_error, list(model.terms), model.r2, model.adj_r2)
    model.trace = list(model.trace) + [step.to_dict()]
    yield step
    return Fit(model, loo_error)


def _candidates(model: StepwiseModel, data: Data, settings: Mapping[str, Any]) -> tuple[Any, dict, set]:
    """The candidate cells of every parameter, also one the search left out (a cell can act where no curve
    does): pairs, and triples unless ``max_order=2``; with ``max_terms`` only within the model's terms.
    Returns (the candidates, which parameters have text levels, the model's terms as parameter sets)."""
    text = {p: (b.kind == "categorical" and not b.numeric_levels) if (b := model.bases.get(p)) is not None
            else data.X[p].to_numpy().dtype.kind in "OUSb" for p in data.names}
    groups = {frozenset(tt) for tt, _ in model.columns}
    allowed = (lambda ps: frozenset(ps) in groups) if settings["max_terms"] is not None else None
    cand = lc.candidates({p: data.X[p].to_numpy() for p in data.names}, text,
                         orders=(2,) if settings["max_order"] == 2 else (2, 3), allowed=allowed)
    return cand, text, groups


def _passes(A: np.ndarray, working: np.ndarray, C: np.ndarray, y: np.ndarray, z: np.ndarray, t: str, robust: bool,
            bound: float | None, scores: dict[str, float]) -> list[Pass]:
    """The selection passes (one for least squares, up to ``cells.ROUNDS`` for a robust fit), each scored into
    *scores* by its leave-one-out error."""
    passes: list[Pass] = []
    w = working
    total = lc.ROUNDS if robust else 1
    tiny = spread_floor(z)
    for r in range(1, total + 1):
        chosen = lc.select(A, w, C) if C.shape[1] else []
        if not chosen:
            break
        A2 = np.column_stack([A, C[:, chosen]])
        name = f"{len(chosen)} cell{'s' if len(chosen) != 1 else ''}" + (f", pass {r} of {total}" if robust else "")
        scores[name] = float(np.mean(loo_errors(A2, w, y, t, z, bound)))
        passes.append((name, chosen, A2, w))
        if not robust:
            break
        w = pseudo_observations(A2 @ np.linalg.lstsq(A2, w, rcond=None)[0], z, t, tiny)
        if w is None:
            break
    return passes


def _kept_note(chosen: list[int], cand: Any, name: str, robust: bool, extra: str) -> str:
    m = cand.columns.shape[1]
    labels = [lc.label(cand.conditions[j], format_level) for j in chosen]
    which = f" (selection pass {name.split(' pass ')[1]})" if robust else ""
    return (f"level cells: {len(chosen)} of {m} candidate cell{'s' if m != 1 else ''} "
            f"{'pass' if len(chosen) != 1 else 'passes'} the F-test at {lc.ALPHA:g}/{m}{which} and "
            f"{'predict' if len(chosen) != 1 else 'predicts'} the rows left out better: {'; '.join(labels)}. "
            f"{extra}")


def _none_note(passed: bool, m: int, capped: bool, groups: set[frozenset]) -> str:
    if passed:
        return (f"level cells: cells pass the F-test but do not predict the rows left out {lc.TIE:.0%} better; "
                f"none is kept")
    if m:
        return f"level cells: none of {m} candidate cell{'s' if m != 1 else ''} " \
               f"pass{'es' if m == 1 else ''} the F-test at {lc.ALPHA:g}/{max(m, 1)}"
    if capped and not any(len(g) > 1 for g in groups):
        return ("level cells: none looked for: with max_terms a cell may only join one of the model's "
                "interaction terms, and it has none")
    return ("level cells: no combination of two or three levels holds for at least "
            f"{lc.MIN_ROWS} training rows and fails for as many")


def _limits_note(cand: Any) -> str:
    note = ""
    if cand.too_many_levels:
        note += (f"; left out for having more than {lc.MAX_CELL_LEVELS} levels: "
                 f"{', '.join(cand.too_many_levels)}")
    if cand.truncated:
        note += ("; the candidates were cut short by the limits cell_bytes / cell_work or "
                 f"{lc.MAX_CANDIDATES:,} columns (pairs first)")
    return note


def add_cells(model: StepwiseModel, A: np.ndarray, working: np.ndarray, z: np.ndarray, chosen: list[tuple],
              text: Mapping[str, bool], X: pd.DataFrame) -> tuple[StepwiseModel, str]:
    """*model* with the chosen cells as more columns (:mod:`..cells`), refitted by least squares on its working
    response *working*; *A* is its design with the cells' columns last.

    A categorical parameter's level other than the first is its own level column; any other level gets a cell
    column in the basis. A parameter the search left out enters with a basis whose own column no model column
    uses, and with its training range in the support.

    Returns
    -------
    model : StepwiseModel
        A copy of *model* with the cells.
    extra : str
        A sentence with the fit's figures after the cells.
    """
    m = copy.deepcopy(model)
    for conds in chosen:
        _add_cell_column(m, conds, text, X)
    if m.support is not None and set(m.bases) - set(m.support.params):
        m.support = Support.build(m._with_derived(X), m.bases, list(m.support.seen))
    coef = np.linalg.lstsq(A, working, rcond=None)[0]
    m.coefficients = coef.tolist()
    fitted = A @ coef
    data_rss = float(np.sum((z - fitted) ** 2))
    data_r2 = r2(data_rss, float(np.sum((z - z.mean()) ** 2)))
    if m.robust:  # R² of its own working response, as its coefficient table reports it
        m.robust = {**m.robust, "scale": mad_scale(z - fitted)}
        working = working_response(A, z, coef, m.robust["k"], m.robust["scale"])
    rss, tss = float(np.sum((working - fitted) ** 2)), float(np.sum((working - working.mean()) ** 2))
    m.r2, m.adj_r2 = r2(rss, tss), adj_r2(rss, tss, z.size, A.shape[1])
    m.noise = ols_noise(A, data_rss)
    if m.robust:
        on = "" if m.transform == "none" else f" on the {m.transform} scale"
        extra = (f"With them the residual scale is {m.robust['scale']:.3g}{on} and R² is {fmt_r2(m.r2)} on the "
                 f"pseudo-observations, {fmt_r2(data_r2)} on the data (the robust fit's figures above are "
                 f"before the cells)")
    else:
        extra = f"With them R² is {fmt_r2(m.r2)}"
    return m, extra


def _add_cell_column(m: StepwiseModel, conds: tuple, text: Mapping[str, bool], X: pd.DataFrame) -> None:
    """One cell (a combination of parameter levels) as a model column, its term added when new."""
    idx = []
    for p, lvl in conds:
        if p not in m.bases:
            m.bases[p] = make_basis(p, X[p].to_numpy(), 0, categorical=bool(text[p]))
        b = m.bases[p]
        if isinstance(lvl, lc.AtLeast):  # a threshold's step column, after the level cells' columns
            if lvl.value not in b.thresholds:
                b.thresholds.append(lvl.value)
            idx.append(b.own_width + len(b.cells) + b.thresholds.index(lvl.value))
            continue
        v = str(lvl) if text[p] else float(lvl)
        own = [str(x) if text[p] else float(x) for x in b.levels] if b.kind == "categorical" else []
        if v in own[1:]:  # the level's own column is this indicator
            idx.append(own.index(v) - 1)
            continue
        if v not in b.cells:
            b.cells.append(v)
            _shift_thresholds(m, p, b.own_width + len(b.cells) - 1)
        idx.append(b.own_width + b.cells.index(v))
    params = [p for p, _ in conds]
    m.columns.append((params, idx))
    m.column_labels.append(" * ".join(f"[{m.bases[p].column_names[i]}]" for p, i in zip(params, idx)))
    if frozenset(params) not in {frozenset(u.split(":")) for u in m.terms}:
        m.terms.append(term_name(params))


def _shift_thresholds(m: StepwiseModel, p: str, start: int) -> None:
    """A level cell's column was inserted at *start* of *p*'s basis: the step columns after it move up one."""
    for c, (params, idx) in enumerate(m.columns):
        if p in params:
            m.columns[c] = (params, type(idx)(i + 1 if q == p and i >= start else i for q, i in zip(params, idx)))
