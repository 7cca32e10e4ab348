"""Candidate terms of the stepwise search: main effects, interactions of two or three parameters (Stargazer
Algorithm 1's P_i:P_k; Lee & Brooks's restricted interactions, rms' ``%ia%``) and the keys that name them.

A candidate is a tuple of parameter names, optionally ending with a marker: :data:`DOUBLY` for the doubly
non-linear remainder of an interaction (the adaptive form's ``a:b (full)``), :data:`WITH` for the look-ahead's
block of a parameter with one of its pairs and :data:`JOINT` for two count parameters with their pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

import numpy as np

from ..fitted import term_name
from ..splines import Basis

DOUBLY = "\x00full"  # marks a candidate key as the doubly non-linear remainder of an interaction term
WITH = "\x00with"  # marks (P, Q, WITH): parameter P and its pair P:Q as one look-ahead block
JOINT = "\x00joint"  # marks (P, Q, JOINT): two count parameters and their pair P:Q as one block (step 12)


def plain(key: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters of candidate *key* (without its :data:`DOUBLY` marker)."""
    return key[:-1] if key[-1] == DOUBLY else key


def label(key: tuple[str, ...]) -> str:
    """The name the trace gives candidate *key*: ``a:b``, ``a:b (full)`` or ``p + p:q`` (look-ahead)."""
    if key[-1] == WITH:
        return f"{key[0]} + {key[0]}:{key[1]}"
    if key[-1] == JOINT:
        return f"{key[0]} + {key[1]} + {key[0]}:{key[1]}"
    return term_name(key[:-1]) + " (full)" if key[-1] == DOUBLY else term_name(key)


def interaction_block(blocks: Sequence[np.ndarray], bases: Sequence[Basis], form: str) -> tuple[np.ndarray, list]:
    """Columns of the interaction of two or three bases and the index tuples they multiply.

    ``form="full"`` takes every product (a tensor spline); ``"restricted"`` (rms' %ia%) leaves out
    products with more than one non-linear factor (categorical columns count as linear);
    ``"doubly"`` is what full adds to restricted: the products with two or more non-linear factors.
    A power-of-two column (``pow2(x)``, :mod:`.encoding`) enters restricted products only, with the
    other factors' linear columns: in full and doubly parts its products fit single level
    combinations, and an unseen one was predicted 400× off on a held-out real data set (kmeans).

    Parameters
    ----------
    blocks : sequence of ndarray
        Each factor's basis columns on the rows.
    bases : sequence of Basis
        The factors' bases (which columns are linear, which is a power-of-two column).
    form : {"full", "restricted", "doubly"}

    Returns
    -------
    columns : ndarray of shape (n, m)
    index : list of tuple of int
        For each column, the basis-column index of every factor.

    References
    ----------
    Lee & Brooks §3 (restricted cubic splines and their interactions); Harrell, *Regression Modeling
    Strategies*, §2.7.2 (restricted interactions, rms' ``%ia%``); Stargazer §5.2 (P_i:P_k).
    """
    widths = [b.shape[1] for b in blocks]
    linear = [set(b.linear_columns) for b in bases]

    def nonlinear(ix: tuple[int, ...]) -> int:
        return sum(i not in lin for i, lin in zip(ix, linear))

    steps = [b.pow2_column for b in bases]
    idx = [ix for ix in product(*(range(w) for w in widths))
           if (form == "full" or (nonlinear(ix) <= 1) == (form == "restricted"))
           and not (form != "restricted" and any(i == s for i, s in zip(ix, steps)))]
    n = blocks[0].shape[0]
    if not idx:
        return np.zeros((n, 0)), []
    cols = np.empty((n, len(idx)))
    for c, ix in enumerate(idx):
        col = blocks[0][:, ix[0]].copy()
        for b, i in zip(blocks[1:], ix[1:]):
            col *= b[:, i]
        cols[:, c] = col
    return cols, idx


def design(cols: Mapping[str, np.ndarray], columns: list, n: int) -> np.ndarray:
    """The selected columns (intercept first) from the cached basis blocks *cols*, in selection order."""
    A = np.empty((n, len(columns) + 1))
    A[:, 0] = 1.0
    for c, (t, lab) in enumerate(columns):
        v = cols[t[0]][:, lab[0]].copy()
        for p, i in zip(t[1:], lab[1:]):
            v *= cols[p][:, i]
        A[:, c + 1] = v
    return A
