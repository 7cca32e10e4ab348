"""The pipeline's long computations as workspace jobs: validation and whole-space scans.

Each takes its inputs from the workspace's *current* stages (refusing with the banner's reason when
one is stale or missing), runs as a background job with progress and Stop, and stores its result as
an analysis computed from exactly the versions it read. Campaigns are in :mod:`.campaigns`; ray
casting and anything else use :func:`~gpudse_core.workspace.jobs.start_job` with their own units.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .jobs import Job, JobContext, Stopped


def start_validation(ws: Any, *, train_sizes: Sequence[int], test_size: int, repeats: int = 5,
                     models: Sequence[str] = ("stepwise", "fixed"), seed: int = 0, name: str = "validation",
                     **kw: Any) -> Job:
    """Sample-train-test validation (:func:`gpudse_core.model.validation.validate`) of the current
    results with the current model's response and transform, stored as analysis *name*. The
    results' application column is passed on for the S+A model; *kw* goes to ``validate``."""
    from ..model.validation import Cancelled, validate

    space, results, model = ws.require("space", "results", "model")
    res = results.value
    params = [p for p in space.value.parameter_names if p in res.table.columns]
    app = res.app_column if "application" in models else None
    data = res.table[params + [res.response] + ([app] if app else [])]

    def work(ctx: JobContext) -> Any:
        try:
            return validate(data, res.response, params, train_sizes=train_sizes, test_size=test_size,
                            repeats=repeats, models=models, transform=getattr(model.value, "transform", "none"),
                            seed=seed, app_column=app, progress=ctx.progress, **kw)
        except Cancelled as e:  # validate() may carry what it finished (getattr: older versions do not)
            raise Stopped(partial=getattr(e, "partial", None)) from None

    return ws.start_job("validation", work, stage=name, inputs=[results, model])


def start_scan(ws: Any, *, cost: Callable[[Any], Any] | None = None, k: int = 20, maximize: bool = False,
               name: str = "scan") -> Job:
    """Predict every point of the current space with the current model (best designs, Pareto front),
    stored as analysis *name* (a :class:`~gpudse_core.explore.results.ScanResult`); a stopped scan keeps
    the points predicted so far, labelled partial."""
    from ..explore.results import ScanResult
    from ..explore.scan import predict_space

    space, model = ws.require("space", "model")
    request = {"k": int(k), "maximize": bool(maximize), "cost": None}  # a cost function has no name to show

    def work(ctx: JobContext) -> Any:
        def progress(done: int, total: int) -> bool:
            return ctx.progress(done, total, f"{done:,} of {total:,} designs")

        scan = predict_space(model.value, space.value, cost=cost, k=k, maximize=maximize, progress=progress)
        result = ScanResult.from_space_scan(scan, space_size=int(space.value.size), request=request)
        if not result.complete:  # stopped: the designs predicted so far, labelled partial
            raise Stopped(partial=result)
        return result

    return ws.start_job("scan", work, stage=name, inputs=[model, space])
