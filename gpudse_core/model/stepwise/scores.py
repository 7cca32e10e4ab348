"""How the stepwise search scores a model: the acceptance criteria of Stargazer Algorithm 1 (adjusted R², §5.2)
and its alternatives (AIC, BIC, the partial F-test of Lee & Brooks eq. 10), and the leave-one-out error that
the prune step, the automatic transform, the Huber rounds and the level cells choose by.

The leave-one-out predictions of a least-squares fit are exact from the hat values (z − e/(1 − h); a row of
leverage 1 is predicted by the columns before the one that reaches it alone, :func:`.fitted.loo_predictions`);
they are bounded as predictions are, back-transformed and scored by their mean relative error (mean absolute
error when the response has zeros or negative values), so scores of different response transforms compare.
"""

from __future__ import annotations

import math

import numpy as np

from ..fitted import _FINITE_Z, inverse_transform, loo_predictions, ordered_basis
from .ols import OLSState, adj_r2, llf, r2

Mark = tuple[int, int, int]  # (terms, model columns, rank of Q) after an accepted term

__all__ = ["criterion_score", "information", "loo_errors", "loo_path", "prune"]


def information(criterion: str, rss: float, n: int, rank: int) -> float:
    """AIC (``criterion="aic"``) or BIC of a least-squares fit with *rank* columns and residual sum *rss*.

    Returns
    -------
    float
        −2 log L + penalty × rank (penalty 2 for AIC, log n for BIC).
    """
    pen = 2.0 if criterion == "aic" else math.log(n)
    return -2.0 * llf(rss, n) + pen * rank


def criterion_score(criterion: str, rss: float, st: OLSState, rank: int, n: int, added: int) -> float:
    """A candidate model's score: its adjusted R², AIC or BIC, or the p-value of the partial F-test of its
    *added* columns against the current model *st* (``ftest``).

    Parameters
    ----------
    criterion : {"adjr2", "aic", "bic", "ftest"}
    rss : float
        The candidate model's residual sum of squares.
    st : OLSState
        The current model.
    rank : int
        The candidate model's columns (intercept included).
    n : int
        Rows.
    added : int
        The columns the candidate adds.

    Returns
    -------
    float
        Higher is better for adjusted R², lower for the others.

    References
    ----------
    Stargazer §5.2 (adjusted R²); Lee & Brooks eq. 10 (the partial F-test).
    """
    if criterion == "adjr2":
        return adj_r2(rss, st.tss, n, rank)
    if criterion in ("aic", "bic"):
        return information(criterion, rss, n, rank)
    from scipy import stats

    dof = n - rank
    if rss <= 0:
        return 0.0
    f = ((st.rss - rss) / added) / (rss / dof)
    return float(stats.f.sf(f, added, dof))


def _bounds(z: np.ndarray, transform: str, bound_margin: float | None) -> tuple[float, float]:
    """The range leave-one-out predictions are clipped to: the training range widened by the bound margin
    (1e6 times it when the bound is off), within the transform's finite values."""
    lo_z, hi_z = float(z.min()), float(z.max())
    w = (hi_z - lo_z) * (bound_margin if bound_margin is not None else 1e6)
    lo, hi = _FINITE_Z[transform]
    return max(lo, lo_z - w), min(hi, hi_z + w)


def loo_errors(A: np.ndarray, working: np.ndarray, y: np.ndarray, transform: str, z: np.ndarray,
               bound_margin: float | None) -> np.ndarray:
    """Leave-one-out errors of least squares on *working* with the columns *A*.

    Parameters
    ----------
    A : ndarray of shape (n, k)
        The design on the training rows.
    working : ndarray of shape (n,)
        The response the columns are fitted to (the data, or a robust fit's pseudo-observations).
    y : ndarray of shape (n,)
        The response on its own scale, which the back-transformed predictions are compared with.
    transform : str
        The response transform (``none``, ``log`` or ``sqrt``).
    z : ndarray of shape (n,)
        The transformed response, whose range bounds the predictions.
    bound_margin : float or None
        The share of the range predictions may go beyond it.

    Returns
    -------
    ndarray of shape (n,)
        Relative errors when every ``y`` is positive, else absolute errors.
    """
    zl = loo_predictions(ordered_basis(A), working)
    lo, hi = _bounds(z, transform, bound_margin)
    zl = np.clip(zl, lo, hi)
    err = np.abs(inverse_transform(zl, transform) - y)
    return err / y if np.all(y > 0) else err


def loo_path(st: OLSState, z: np.ndarray, y: np.ndarray, marks: list[Mark], floor: int, transform: str,
             bound_margin: float | None) -> list[tuple[Mark, float, float]]:
    """(mark, leave-one-out error, RSS) for every prefix of the selection path with more than *floor* terms.

    A mark is (terms, columns, rank of Q) after an accepted term; the prefix's fit is the first ``rank``
    columns of the search's orthonormal basis, so no prefix is refitted.

    Parameters
    ----------
    st : OLSState
        The search's state after its last accepted term.
    z, y : ndarray
        The response on the search's scale and on its own.
    marks : list of Mark
    floor : int
        Prefixes with at most this many terms are not scored (the forced terms).
    transform : str
    bound_margin : float or None

    Returns
    -------
    list of (Mark, float, float)
    """
    q = st.q
    c = q.T @ z
    lo, hi = _bounds(z, transform, bound_margin)
    relative = bool(np.all(y > 0))
    out = []
    for mark in marks:
        r = mark[2]
        if mark[0] <= floor:
            continue
        e = z - q[:, :r] @ c[:r]
        zl = np.clip(loo_predictions(q[:, :r], z, c[:r]), lo, hi)
        err = np.abs(inverse_transform(zl, transform) - y)
        out.append((mark, float(np.mean(err / y if relative else err)), float(e @ e)))
    return out


def prune(path: list[tuple[Mark, float, float]], terms: list[str], columns: list, tss: float,
          n: int) -> tuple[float | None, tuple | None]:
    """The prune step: keep the prefix of the selection path with the lowest leave-one-out error.

    Every accepted term is a point on the path; *path* (:func:`loo_path`) scores every prefix with at least one
    searched term (forced terms always stay). Terms after the best prefix are dropped (*terms* and *columns*
    are shortened in place). The F-test asks whether a term is real; this asks whether the rows at hand
    estimate it well enough to predict better with it than without (BFS on the built-in simulator: 155 columns
    from 300 rows pass p < 0.001, and the prefix of 109 predicts better).

    Returns
    -------
    loo_error : float or None
        The kept prefix's score (None when the path is empty).
    row : tuple or None
        The trace row's fields (scores, chosen, accepted, gain, terms, R², adjusted R²) when the path has
        two prefixes or more.
    """
    if not path:
        return None, None
    best = min(err for _, err, _ in path)
    if len(path) < 2:
        return best, None
    scores = {f"through {terms[m[0] - 1]}": err for m, err, _ in path}
    keep, err, rss = min(path, key=lambda p: p[1])
    label = f"through {terms[keep[0] - 1]}"
    pruned = keep[0] < len(terms)
    if pruned:
        del terms[keep[0]:]
        del columns[keep[1]:]
    return best, (scores, label, pruned, err, list(terms), r2(rss, tss), adj_r2(rss, tss, n, keep[2]))
