"""The stepwise search's result as a model: least-squares coefficients of the selected columns (Stargazer
§5.2: the final model of Algorithm 1 is an ordinary least-squares fit of its terms), its settings, support and
notes, and the warning for a fit with about as many coefficients as rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...report.fmt import fmt_r2
from ..fitted import StepwiseModel, ols_noise
from ..support import Support
from .ols import OLSState, adj_r2, r2
from .terms import design

SATURATION = 0.5  # coefficients per training row from which a fit is called near-saturated


def recorded(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a model records: every parameter but ``params``, sequences as lists."""
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in settings.items() if k != "params"}


def build_model(settings: Mapping[str, Any], X: pd.DataFrame, cols: Mapping[str, np.ndarray], z: np.ndarray,
                bases: Mapping, columns: list, terms: list[str], st: OLSState, names: list[str], response: str,
                notes: list[str]) -> StepwiseModel:
    """The model of the selected *columns* (``(parameters, basis-column indices)`` each, in selection order).

    Parameters
    ----------
    settings : mapping
        The search's parameters (recorded in the model; the transform, interaction form, bound and unseen rule
        are taken from them).
    X : DataFrame
        The training parameters (for the model's support).
    cols : mapping
        Each parameter's basis columns on the training rows.
    z : ndarray
        The response on the search's scale.
    bases, columns, terms : the search's bases, selected columns and accepted terms.
    st : OLSState
        The search's least-squares state (its total sum of squares).
    names : list of str
        The parameters searched (the model's parameter order).
    response : str
        The response's name.
    notes : list of str
        The encoding's notes; those of parameters the model does not use are dropped.

    Returns
    -------
    StepwiseModel
    """
    A = design(cols, columns, z.size)
    labels = ["Intercept"] + [" * ".join(bases[p].column_names[i] for p, i in zip(t, lab)) for t, lab in columns]
    coef, *_ = np.linalg.lstsq(A, z, rcond=None)
    fitted = A @ coef
    rss = float(np.sum((z - fitted) ** 2))
    used = sorted({p for t, _ in columns for p in t}, key=names.index)
    used_bases = {p: bases[p] for p in used}
    inter = list(dict.fromkeys(tuple(t) for t, _ in columns if len(t) > 1))
    fit_r2 = r2(rss, st.tss)
    notes = [note for note in notes if note.split(":")[0] in used_bases]
    saturated = saturation_warning(A.shape[1], int(z.size), fit_r2)
    if saturated:
        notes.append(saturated)
    bound = settings["bound_margin"]
    return StepwiseModel(
        response=response, transform=settings["response_transform"], interactions=settings["interactions"],
        bases=used_bases, columns=[(list(t), list(lab)) for t, lab in columns],
        column_labels=labels, coefficients=coef.tolist(), terms=list(terms), n=int(z.size),
        r2=fit_r2, adj_r2=adj_r2(rss, st.tss, z.size, A.shape[1]), settings=recorded(settings),
        support=Support.build(X, used_bases, inter), z_range=(float(z.min()), float(z.max())),
        bound_margin=None if bound is None else float(bound),
        notes=notes, unseen=settings["unseen"], noise=ols_noise(A, rss),
    )


def saturation_warning(n_coef: int, n_rows: int, r2: float | None = None) -> str | None:
    """A warning when a model has at least SATURATION coefficients per training row: it can follow its
    own data (R² near 1) whatever it does between them, so only held-out points judge it.

    Parameters
    ----------
    n_coef : int
        The model's coefficients (intercept included).
    n_rows : int
        Its training rows.
    r2 : float, optional
        Its R², quoted in the warning.

    Returns
    -------
    str or None
        The warning, or None for a model with fewer coefficients.
    """
    if n_rows <= 0 or n_coef < SATURATION * n_rows:
        return None
    fit = f" (R² {fmt_r2(r2)} on them)" if r2 is not None and np.isfinite(r2) else ""
    return (f"{n_coef} coefficients on {n_rows} training rows{fit}: the model is close to interpolating its data, "
            f"so its R² says little. Judge it on held-out points (Accuracy page, gpudse validate), draw more "
            f"samples, or raise the search's thresholds (θ, φ).")
