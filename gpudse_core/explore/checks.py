"""A check of the best designs by simulation ("Simulate these") as a typed result.

The Explore page's "Simulate these" runs designs chosen from the scan's best rows through a
simulator as a campaign whose spec records, per design, its parameters, the prediction and its
interval (:func:`gpudse_core.explore.designs.predicted_vs_simulated` puts the simulations beside
them). :class:`SimulatedCheck` is that comparison for one campaign; :func:`gpudse_core.workspace.campaigns.latest_check`
finds the workspace's latest. The campaign's record is read with each field checked: a damaged one raises
:class:`~gpudse_core.stored.StoredFormError` naming the campaign and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..stored import Fields, StoredFormError

EXPLORE_ORIGIN = "explore"  # the chosen_by of the campaigns "Simulate these" starts
ROW_FIELDS = ("predicted", "lower", "upper", "group")


@dataclass(frozen=True)
class SimulatedCheck:
    """Campaign *campaign*'s designs: ``table`` has per design its ``group`` (the best row it came
    from, 0-based), the parameters, ``predicted``, ``lower``, ``upper``, ``simulated``, ``error``
    (simulated / predicted − 1), ``in interval`` (yes, no, no interval, pending or failed) and
    ``why`` (a failed simulation's reason, else empty)."""

    campaign: str
    backend: str | None
    scan_version: int | None
    table: Any  # pandas.DataFrame

    @property
    def simulated(self) -> int:
        """Designs simulated so far."""
        return int(self.table["simulated"].notna().sum())

    @property
    def judged(self) -> int:
        """Designs whose simulation could be compared with an interval."""
        return int(self.table["in interval"].isin(["yes", "no"]).sum())

    @property
    def inside(self) -> int:
        return int((self.table["in interval"] == "yes").sum())

    @property
    def failed(self) -> Any:
        """The designs the simulator failed on (rows of ``table``)."""
        return self.table[self.table["in interval"] == "failed"]

    @classmethod
    def of(cls, name: str, spec: Any, table: Any, response: str) -> SimulatedCheck:
        """The check of campaign *name* from its *spec* (``rows``, ``scan_version``, ``backend``) and its
        points *table* (failed ones included, with ``status`` and ``error``)."""
        from .designs import predicted_vs_simulated

        f = Fields(spec, f"campaign {name!r}")
        rows = f.raw("rows")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            raise f.error("rows", "is not a list of the chosen designs")
        for i, r in enumerate(rows):
            for key in ROW_FIELDS:
                v = r.get(key)
                if key not in r or not (v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))):
                    raise f.error("rows", f"has design {i + 1} with {key} = {v!r}, not a number")
        shown = predicted_vs_simulated({"rows": rows}, table, response)
        errors = table["error"].tolist() if "error" in table.columns else []
        shown["why"] = [str(errors[i]) if i < len(errors) and s == "failed" and errors[i] else ""
                        for i, s in enumerate(shown["in interval"])]  # a failed design's reason
        backend = spec.get("backend")
        return cls(campaign=name, backend=backend if isinstance(backend, str) else None,
                   scan_version=f.integer("scan_version", None), table=shown)


__all__ = ["EXPLORE_ORIGIN", "SimulatedCheck", "StoredFormError"]
