"""A check of the best designs by simulation ("Simulate these") as a typed result.

The Explore page's "Simulate these" runs designs chosen from the scan's best rows through a
simulator as a campaign whose spec records, per design, its parameters, the prediction and its
interval (:func:`gpudse_core.explore.designs.predicted_vs_simulated` puts the simulations beside
them). :class:`SimulatedCheck` is that comparison for one campaign, bound to the model and the scan
it checked: the workspace stores it as the ``check`` analysis computed from them
(:mod:`gpudse_core.workspace.checks`), so a check *confirms* a recommendation — the results, the
model, the best designs and every analysis stay current — and adding the simulated designs to the
results is a separate step. :func:`choose_designs` picks the designs to simulate from the chosen rows.
The campaign's record is read with each field checked: a damaged one raises
:class:`~gpudse_core.stored.StoredFormError` naming the campaign and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..stored import Fields, StoredFormError

EXPLORE_ORIGIN = "explore"  # the chosen_by of the campaigns "Simulate these" starts
ROW_FIELDS = ("predicted", "lower", "upper", "group")


@dataclass(frozen=True)
class SimulatedCheck:
    """Campaign *campaign*'s designs: ``table`` has per design its ``group`` (the best row it came
    from, 0-based), the parameters, ``predicted``, ``lower``, ``upper``, ``simulated``, ``error``
    (simulated / predicted − 1), ``in interval`` (yes, no, no interval, pending or failed) and
    ``why`` (a failed simulation's reason, else empty)."""

    STAGE: ClassVar[str] = "check"
    WHAT: ClassVar[str] = "simulated check"

    campaign: str
    backend: str | None
    scan_version: int | None
    table: Any  # pandas.DataFrame
    model_version: int | None = None  # the model version whose predictions were checked
    response: str = ""

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
                   scan_version=f.integer("scan_version", None), table=shown,
                   model_version=f.integer("model_version", None), response=str(response))

    def describe(self) -> str:
        """One line for a listing: how many designs, how many inside their interval."""
        inside = f", {self.inside} of {self.judged} inside the interval" if self.judged else ""
        failed = f", {len(self.failed)} failed" if len(self.failed) else ""
        return f"{self.simulated} of {len(self.table)} designs simulated{inside}{failed}"

    # ---- stored form (the workspace's ``check`` analysis) ------------------------------------------
    def to_stored(self) -> dict:
        return {"campaign": self.campaign, "backend": self.backend, "scan_version": self.scan_version,
                "model_version": self.model_version, "response": self.response, "table": self.table}

    @classmethod
    def from_stored(cls, stored: Any) -> SimulatedCheck:
        """The check from its stored record; a damaged one raises
        :class:`~gpudse_core.stored.StoredFormError` naming the field."""
        if isinstance(stored, cls):
            return stored
        f = Fields(stored, cls.WHAT)
        table = f.table("table")
        missing = [c for c in ("group", "predicted", "lower", "upper", "simulated", "error", "in interval", "why")
                   if c not in table.columns]
        if missing:
            raise f.error("table", f"lacks the column(s) {', '.join(missing)}")
        return cls(campaign=f.text("campaign"), backend=f.text("backend", None),
                   scan_version=f.integer("scan_version", None), table=table,
                   model_version=f.integer("model_version", None), response=f.text("response", ""))


def choose_designs(space: Any, used: list[str], rows: Any, every: bool = False, per_row: int = 1) -> Any:
    """The designs to simulate for the chosen best-design *rows* (a scan's ``best`` rows): each row's
    shown design, or with *every* up to *per_row* designs of each row's group
    (:func:`gpudse_core.explore.designs.group_designs`); a table of the parameters, ``predicted``,
    ``lower``, ``upper`` (the row's) and ``group`` (the chosen row it came from, 0-based)."""
    from .. import limits
    from ..errors import GpudseError
    from .designs import group_designs

    rows = rows.reset_index(drop=True)
    if every:
        limits.check("simulate_chosen", int(per_row), "designs per row to simulate", "choose fewer")
        listed = group_designs(space, used, rows, int(per_row))
        chosen = listed.join(rows[["predicted", "lower", "upper"]], on="group")
    else:
        chosen = rows.assign(group=range(len(rows)))
    limits.check("simulate_chosen", len(chosen), "designs chosen to simulate", "choose fewer rows or fewer "
                 "designs per row")
    if not len(chosen):
        raise GpudseError("choose at least one row to simulate")
    return chosen[[*space.parameter_names, "predicted", "lower", "upper", "group"]].reset_index(drop=True)


__all__ = ["EXPLORE_ORIGIN", "SimulatedCheck", "StoredFormError", "choose_designs"]
