"""The best designs of a whole-space scan as a typed result: what the Explore page, the report and the
workspace share.

A :class:`ScanResult` holds the *k* best groups of designs a model cannot tell apart
(:func:`gpudse_core.explore.designs.best_designs`), how the space was scanned, the Pareto front
against a cost and a cloud of designs for the chart. It is the workspace's ``scan`` analysis
(:mod:`gpudse_core.workspace.results`): stored as plain fields (:meth:`ScanResult.to_stored`, the
same record the dashboard stored before the class existed), read back with every field checked
(:meth:`ScanResult.from_stored`), which also reads the :class:`~gpudse_core.explore.scan.SpaceScan`
that :func:`gpudse_core.workspace.start_scan` stored in earlier versions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..stored import Fields, StoredFormError

METHODS = {"exact": "cell evaluations over the parameters the model uses",
           "stream": "designs streamed through the model", "predict": "designs predicted one by one"}


@dataclass(frozen=True)
class ScanResult:
    """The best designs of a scan (Stargazer §7.4's use of the model: predict the whole space).

    ``best``: one row per design (or group) with ``predicted``; ``shown``: the same rows as the
    pages show them (one per group, intervals, ``any``), None for a scan stored before grouping;
    ``request``: ``k``, ``maximize`` and ``cost`` (``"levels"``, a parameter, or None when the cost
    was not one the dashboard can name).
    """

    STAGE: ClassVar[str] = "scan"
    WHAT: ClassVar[str] = "best designs"

    best: Any  # pandas.DataFrame
    shown: Any = None  # pandas.DataFrame | None
    used: list[str] = field(default_factory=list)
    level: float | None = None
    left_out: int = 0
    pareto: Any = None  # pandas.DataFrame | None
    space_size: int | None = None
    feasible: int | None = None
    evaluated: int | None = None
    method: str = "predict"
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    cloud: Any = None  # pandas.DataFrame | None: predicted and cost of random designs
    request: dict = field(default_factory=dict)

    @property
    def designs(self) -> int | None:
        """How many designs the scan chose from: the feasible ones, else the whole space."""
        return self.feasible if self.feasible is not None else self.space_size

    @property
    def cost(self) -> str | None:
        cost = self.request.get("cost")
        return cost if isinstance(cost, str) else None

    @property
    def maximize(self) -> bool:
        return bool(self.request.get("maximize", False))

    def how(self) -> str:
        """How the scan was exact, in words (``cell evaluations over the parameters the model uses``): what
        ``evaluated`` counts is work, which sums the two scans of a front and its best designs, so it may
        exceed the designs of the space."""
        return METHODS.get(self.method, f"{self.method} scan")

    def describe(self) -> str:
        """One line for a listing (``gpudse workspace show``)."""
        from ..fmt import fmt_count

        goal = "highest" if self.maximize else "lowest"
        of = f" of {fmt_count(self.designs, 'designs')}" if self.designs is not None else ""
        rows = "rows" if self.shown is not None else "designs"
        return f"the {fmt_count(len(self.best))} {goal}-predicted {rows}{of}" + ("" if self.complete else " (partial)")

    # ---- stored form ---------------------------------------------------------------------------
    def to_stored(self) -> dict:
        return {"best": self.best, "shown": self.shown, "used": list(self.used), "level": self.level,
                "left_out": int(self.left_out), "pareto": self.pareto, "space_size": self.space_size,
                "feasible": self.feasible, "evaluated": self.evaluated, "method": self.method,
                "complete": bool(self.complete), "notes": list(self.notes), "cloud": self.cloud,
                "request": dict(self.request)}

    @classmethod
    def from_stored(cls, stored: Any) -> ScanResult:
        """The result from its stored record (or an earlier version's :class:`SpaceScan`); a damaged
        record raises :class:`~gpudse_core.stored.StoredFormError` naming the field."""
        if isinstance(stored, cls):
            return stored
        from .scan import SpaceScan

        if isinstance(stored, SpaceScan):
            return cls.from_space_scan(stored)
        f = Fields(stored, cls.WHAT)
        request = f.mapping("request", {})
        for key, ok in (("k", lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0),
                        ("maximize", lambda v: isinstance(v, bool)),
                        ("cost", lambda v: v is None or isinstance(v, str))):
            if key in request and not ok(request[key]):
                raise f.error("request", f"has {key} = {request[key]!r}")
        best = f.table("best")
        if "predicted" not in best.columns:
            raise f.error("best", "has no 'predicted' column")
        level = f.number("level", None)
        if level is not None and not 0 < level < 1:
            raise f.error("level", f"is {level!r}, not a probability between 0 and 1")
        return cls(best=best, shown=f.table("shown", None), used=f.texts("used", []), level=level,
                   left_out=f.integer("left_out", 0), pareto=f.table("pareto", None),
                   space_size=f.integer("space_size", None), feasible=f.integer("feasible", None),
                   evaluated=f.integer("evaluated", None), method=f.text("method", "predict"),
                   complete=f.flag("complete", True), notes=f.texts("notes", []), cloud=f.table("cloud", None),
                   request=request)

    @classmethod
    def from_space_scan(cls, scan: Any, *, space_size: int | None = None, request: dict | None = None) -> ScanResult:
        """The result of :func:`gpudse_core.explore.scan.predict_space` (one row per design)."""
        import pandas as pd

        if not isinstance(scan.best, pd.DataFrame) or "predicted" not in scan.best.columns:
            raise StoredFormError("the stored best designs are damaged: its table of designs has no 'predicted' "
                                  "column; compute it again")
        points = int(scan.points)
        return cls(best=scan.best, pareto=scan.pareto if isinstance(scan.pareto, pd.DataFrame) else None,
                   space_size=space_size, evaluated=points, method="predict",
                   complete=space_size is None or points >= space_size, request=dict(request or {}))
