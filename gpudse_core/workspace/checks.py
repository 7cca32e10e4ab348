"""A "Simulate these" check in the workspace: it confirms a recommendation without invalidating it.

Checking the best designs by simulation must leave the review that recommended them in place. A
check (:func:`start_check`) runs the chosen designs as a campaign of the workspace (progress, Stop,
resumable) and stores the comparison — per design the prediction, its interval, the simulation, the
relative error and whether it fell inside the interval — as the ``check`` analysis, a
:class:`~gpudse_core.explore.checks.SimulatedCheck` computed from the model and the scan it checked.
The results stage is not touched, so the model, the best designs, the validation and the true error
stay current; the check itself turns stale once its model or scan is replaced.

Adding the simulated designs to the results is its own step (:func:`add_check_to_results`: a new
results version, after which what was fitted on the old results is stale until refitted; the
dashboard's "Add these to the results and refit" then refits with the same settings and rescans).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..errors import GpudseError
from .campaigns import append_campaign, campaign, campaign_table, start_campaign

STAGE = "check"


def start_check(ws: Any, backend: Any, rows: Any, every: bool = False, per_row: int = 1) -> Any:
    """Simulate the chosen best-design *rows* of the current scan (a shown design each, or with
    *every* up to *per_row* designs of each row's group) on *backend* as a background job; when it
    ends (or is stopped: partial) the comparison is stored as the ``check`` analysis computed from the
    current model and scan. The results are not changed. Refused, with the banner's reason, when the
    model or the scan is not current (a check of an out-of-date recommendation confirms nothing)."""
    from ..explore.checks import EXPLORE_ORIGIN, choose_designs

    space, model, scan = ws.require("space", "model", "scan")
    chosen = choose_designs(space.value, list(scan.value.used), rows, every, per_row)
    params = list(space.value.parameter_names)
    records = [{k: _plain(v) for k, v in r.items()} for r in chosen.to_dict(orient="records")]
    extra = {"chosen_by": EXPLORE_ORIGIN, "scan_version": int(scan.version), "model_version": int(model.version),
             "response": str(model.value.response), "rows": records}
    digest = hashlib.sha256(json.dumps(extra, sort_keys=True, default=str).encode()).hexdigest()[:8]
    response = str(model.value.response)
    return start_campaign(ws, backend, name=f"explore {digest}", points=chosen[params], extra=extra,
                          origin=EXPLORE_ORIGIN, stage=STAGE, inputs=[model, scan],
                          result=lambda own, name: check_of(own, name, response))


def _plain(v: Any) -> Any:
    """A table cell as JSON data (NumPy scalars as Python numbers, NaN as None)."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and v != v else v


def check_of(ws: Any, name: str, response: str | None = None) -> Any:
    """Campaign *name*'s check as it stands (simulated, pending and failed designs): a
    :class:`~gpudse_core.explore.checks.SimulatedCheck`. *response*: the modelled column (default: the
    one the campaign recorded, else the current model's)."""
    from ..explore.checks import SimulatedCheck

    info = campaign(ws, name)
    spec = info.spec if isinstance(info.spec, dict) else {}
    if response is None:
        model = ws.get("model").value
        recorded = spec.get("response")
        response = recorded if isinstance(recorded, str) else model.response if model is not None else "cycles"
    return SimulatedCheck.of(name, info.spec, campaign_table(ws, name, include_failed=True), response)


def latest_check(ws: Any) -> Any:
    """The workspace's latest "Simulate these" (its newest campaign chosen from the Explore page) as it
    stands in the campaign's store — live while it runs — or None when there is none."""
    from ..explore.checks import EXPLORE_ORIGIN

    for c in ws.campaigns():  # newest first
        if isinstance(c.spec, dict) and c.spec.get("chosen_by") == EXPLORE_ORIGIN:
            return check_of(ws, c.name)
    return None


def add_check_to_results(ws: Any) -> Any:
    """Append the simulated designs of the current ``check`` to the results (a new version; the failed
    and pending ones are left out). Refused when the check is missing or no longer current — the model
    it checked was replaced, or its designs were added already — so designs are never added twice.
    Returns the new results' StageValue; the model and what was computed from it are then stale."""
    sv = ws.get(STAGE)
    if sv.value is None:
        raise GpudseError("there is no check to add: simulate some of the best designs first")
    if not sv.ok:
        raise GpudseError(f"the check of campaign {sv.value.campaign!r} is out of date ({sv.status.reason}); its "
                          f"designs were added already or the model it checked was replaced: simulate again")
    if not sv.value.simulated:
        raise GpudseError(f"the check of campaign {sv.value.campaign!r} has no simulated design to add")
    return append_campaign(ws, sv.value.campaign)


__all__ = ["STAGE", "add_check_to_results", "check_of", "latest_check", "start_check"]
