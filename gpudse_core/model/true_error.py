"""The true error over the entire space as a typed result (Stargazer §7.3 measures it on a held-out
sample; with the built-in simulator every design of the space can be simulated and compared).

A :class:`TrueError` holds the model's relative error at every point of the space summarised: the
mean, median, 98th percentile and maximum, and 1,001 quantiles from which the error CDF is drawn.
It is the workspace's ``true_error`` analysis (:mod:`gpudse_core.workspace.results`), stored as
plain fields and read back with each one checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..stored import Fields

STATISTICS = ("mean", "median", "p98", "max")


@dataclass(frozen=True)
class TrueError:
    """The model's relative error at *points* designs against the built-in simulator's *kernel*."""

    STAGE: ClassVar[str] = "true_error"
    WHAT: ClassVar[str] = "true error"

    kernel: str
    points: int
    mean: float
    median: float
    p98: float
    max: float
    quantiles: Any = None  # numpy array of 1,001 quantiles (0 … 1), or None
    space_points: int | None = None

    @classmethod
    def of(cls, errors: Any, kernel: str, space_points: int | None = None) -> TrueError:
        """The summary of the relative *errors* (one per design)."""
        import numpy as np

        e = np.asarray(errors, dtype=float)
        return cls(kernel=kernel, points=int(e.size), mean=float(np.mean(e)), median=float(np.median(e)),
                   p98=float(np.quantile(e, 0.98)), max=float(np.max(e)),
                   quantiles=np.quantile(e, np.linspace(0, 1, 1001)), space_points=space_points)

    def describe(self) -> str:
        """One line for a listing (``gpudse workspace show``)."""
        from ..fmt import fmt_count, fmt_percent

        return (f"median {fmt_percent(self.median)}, 98th percentile {fmt_percent(self.p98)} over "
                f"{fmt_count(self.points, 'designs')} against {self.kernel}")

    def table(self) -> Any:
        """One row: kernel, points and the statistics (what the report shows)."""
        import pandas as pd

        return pd.DataFrame([{"kernel": self.kernel, "points": self.points,
                              **{k: getattr(self, k) for k in STATISTICS}}])

    def to_stored(self) -> dict:
        return {"kernel": self.kernel, "points": self.points, "space_points": self.space_points, "mean": self.mean,
                "median": self.median, "p98": self.p98, "max": self.max, "quantiles": self.quantiles}

    @classmethod
    def from_stored(cls, stored: Any) -> TrueError:
        if isinstance(stored, cls):
            return stored
        f = Fields(stored, cls.WHAT)
        return cls(kernel=f.text("kernel"), points=f.integer("points", minimum=1),
                   **{k: f.number(k) for k in STATISTICS}, quantiles=f.array("quantiles", None, ndim=1),
                   space_points=f.integer("space_points", None))
