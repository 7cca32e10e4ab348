"""Relative prediction errors and their summaries (Stargazer §7.3, Fig. 5; Lee & Brooks §5, Table 6,
Figs. 9 and 12).

One place says how an error is measured and summarised, for validation, cross-validated model
choice and the pages: the relative error |ŷ − y| / |y|; Stargazer's mean, median, 75th and 98th
percentile and true maximum, and the 90th percentile between them; Lee & Brooks Table 6's minimum and quartiles; the
empirical CDF.
:class:`Cancelled` is what a long computation raises when its progress callback asks it to stop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import GpudseError

STATS = ("mean", "median", "p75", "p90", "p98", "max", "min", "q1", "q3")


class Cancelled(GpudseError):
    """The progress callback asked to stop; ``partial`` is the result of the fits finished before
    (each model's errors pooled over the repeats it finished), or None when none had finished."""

    def __init__(self, message: str = "validation cancelled", partial: Any = None):
        super().__init__(message)
        self.partial = partial


def relative_errors(y_true: Any, y_pred: Any) -> np.ndarray:
    t = np.asarray(y_true, dtype=float)
    p = np.asarray(y_pred, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(p - t) / np.abs(t)


def summarize(errors: Any) -> dict[str, float]:
    """Stargazer's mean/median/p75/p98/max (and p90) and Lee & Brooks Table 6's min/q1/q3 (fractions, not %),
    over *every* error: a non-finite one (NaN counts as infinitely wrong) is kept, so it makes the
    mean and the maximum infinite, and is counted in ``nonfinite``."""
    e = np.asarray(errors, dtype=float).ravel()
    nonfinite = int(np.count_nonzero(~np.isfinite(e)))
    if e.size == 0:
        return {**{k: float("nan") for k in STATS}, "count": 0, "nonfinite": 0}
    e = np.sort(np.where(np.isnan(e), np.inf, e))
    q = _quantiles(e, [0.0, 0.25, 0.5, 0.75, 0.98, 1.0, 0.9])
    with np.errstate(over="ignore"):
        mean = float(e.mean()) if nonfinite == 0 else float("inf")
    return {"mean": mean, "median": q[2], "p75": q[3], "p90": q[6], "p98": q[4], "max": q[5], "min": q[0], "q1": q[1],
            "q3": q[3], "count": int(e.size), "nonfinite": nonfinite}


def _quantiles(e: np.ndarray, ps: Sequence[float]) -> list[float]:
    """NumPy's default (linear) quantiles of sorted *e*, where +inf entries stay +inf (NumPy's own
    interpolation gives NaN between two infinities)."""
    out = []
    for p in ps:
        h = (e.size - 1) * p
        lo = int(math.floor(h))
        hi = min(lo + 1, e.size - 1)
        frac = h - lo
        if frac == 0.0 or e[lo] == e[hi]:
            out.append(float(e[lo]))
        elif not np.isfinite(e[hi]):
            out.append(float("inf"))
        else:
            out.append(float(e[lo] + (e[hi] - e[lo]) * frac))
    return out


def ecdf(errors: Any) -> tuple[np.ndarray, np.ndarray]:
    """Sorted errors and the fraction of predictions at or below each (Lee & Brooks Fig. 9)."""
    e = np.sort(np.asarray(errors, dtype=float))
    return e, np.arange(1, e.size + 1) / e.size
