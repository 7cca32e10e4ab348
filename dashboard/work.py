"""What the dashboard's long work computes: validation, whole-space scans, the true error over the
space, fits chosen by cross-validation, ray casting — each started as a job of the page's workspace
(:mod:`gpudse_core.workspace.jobs`): in a background thread, its progress recorded in the workspace's
database from its first second, its result stored as an analysis computed from the stage versions it
read. :mod:`dashboard.jobs` shows a running job on a page.

The work functions here are also what builds the built-in example's analyses (:mod:`dashboard.state`),
so the example's Accuracy and Explore pages show exactly what the buttons compute.
"""

from __future__ import annotations

from typing import Any

from gpudse_core import GpudseError, fmt
from gpudse_core.workspace import JobContext, Stopped, start_validation

POLL_S = 0.5  # a running job's panel refreshes this often
CLOUD_POINTS = 20_000  # designs drawn at random to show behind the Pareto front

# the built-in example's analyses: the Accuracy form's and Explore page's defaults
EXAMPLE_VALIDATION = {"train_sizes": [30, 60, 120], "test_size": 100, "repeats": 3, "models": ["stepwise", "fixed"]}
EXAMPLE_SCAN = {"k": 20, "maximize": False, "cost": "levels"}


# ---- what each job computes ---------------------------------------------------------------------
def level_costs(space: Any) -> dict[str, list[float]]:
    """The Explore page's default cost, per value: for each numeric parameter, each value's position
    among its values (0 … 1); a design's cost is their sum, a stand-in for a hardware budget."""
    out = {}
    for p in space.parameters:
        if p.kind == "numeric":
            order = sorted(range(p.size), key=lambda i: float(p.values[i]))
            pos = [0.0] * p.size
            for rank, i in enumerate(order):
                pos[i] = rank / max(1, p.size - 1)
            out[p.name] = pos
    return out


def pareto_cost(space: Any, name: str) -> Any:
    """``levels`` (see :func:`level_costs`) or a numeric parameter's own value (an expression)."""
    if name == "levels":
        return level_costs(space)
    if name not in space.parameter_names:
        raise GpudseError(f"cost {name!r}: not a parameter of the design space {space.name!r}")
    return name


def scan_work(model: Any, space: Any, request: dict, ctx: JobContext | None = None, results: Any = None) -> Any:
    """The *k* best groups of designs the model cannot tell apart over the whole space, exactly, with
    prediction intervals and the designs already simulated in *results* marked
    (:func:`gpudse_core.explore.designs.best_designs`), the Pareto front against the cost, and a
    random cloud of designs for the chart. Stopped early, it keeps what the scan found so far
    (labelled partial). A :class:`~gpudse_core.explore.results.ScanResult`."""
    import numpy as np

    from gpudse_core.explore.designs import best_designs
    from gpudse_core.explore.results import ScanResult
    from gpudse_core.space.sampling import sample

    cost = pareto_cost(space, request["cost"])

    def progress(d: int, total: int) -> bool:
        return ctx is None or ctx.progress(d, total, f"{d:,} of {total:,} cells scanned")

    if ctx is not None:
        ctx.progress(0, None, "planning the scan")
    found = best_designs(model, space, top=int(request["k"]), maximize=bool(request["maximize"]), pareto=cost,
                         progress=progress, stop=None if ctx is None else ctx.stopped, workers=1, results=results,
                         exclude_simulated=bool(request.get("exclude_simulated", False)))
    res = found.result
    n = min(CLOUD_POINTS, space.feasible_size or space.size)
    pts = sample(space, n=n, seed=0).table()
    if isinstance(cost, dict):
        c = np.zeros(len(pts))
        for name, values in cost.items():
            p = space.parameter(name)
            index = {v: i for i, v in enumerate(p.values)}
            c += np.asarray(values)[[index[v] for v in pts[name]]]
    else:
        c = pts[cost].to_numpy(dtype=float)
    cloud = pts.assign(predicted=model.predict(pts), cost=c)[["predicted", "cost"]]
    unit = fmt.response_unit(model.response)
    value = ScanResult(best=found.rows, shown=found.display(space, model.response, unit), used=list(found.used),
                       level=found.level, left_out=int(found.left_out), pareto=res.pareto,
                       space_size=int(res.space_size), feasible=None if res.feasible is None else int(res.feasible),
                       evaluated=int(res.evaluated), method=res.method, complete=bool(res.complete),
                       notes=list(dict.fromkeys(found.notes)), cloud=cloud, request=dict(request))
    if ctx is not None and (ctx.stopped() or not res.complete):
        raise Stopped(partial=value)
    return value


def true_error_work(model: Any, space: Any, kernel: str, ctx: JobContext | None = None) -> Any:
    """The model's relative error at every point of the space against the built-in simulator
    (summarised: statistics and 1,001 quantiles for the CDF), a
    :class:`~gpudse_core.model.true_error.TrueError`."""
    from gpudse_core.model.true_error import TrueError
    from gpudse_core.sim.simulator import whole_space_errors

    def progress(d: int, total: int) -> bool:
        return ctx is None or ctx.progress(d, total, f"{d:,} of {total:,} designs simulated and predicted")

    if ctx is not None:
        ctx.progress(0, space.size, "simulating the whole space")
    errs = whole_space_errors(model, space, kernel, progress=progress)
    value = TrueError.of(errs, kernel, space_points=int(space.size))
    if ctx is not None and ctx.stopped():
        raise Stopped(partial=value)
    return value


def raycast_work(size: int, spheres: int, boxes: int, seed: int, ctx: JobContext | None = None) -> Any:
    """Ray trace the built-in scene band by band: its per-pixel cost heatmap and the image (a
    :class:`~gpudse_core.raytrace.result.HeatmapResult`)."""
    import numpy as np

    from gpudse_core.raytrace.caster import procedural_scene, render
    from gpudse_core.raytrace.result import HeatmapResult

    def progress(d: int, total: int) -> bool:
        return ctx is None or ctx.progress(d, total, f"{d:,} of {total:,} rows traced")

    if ctx is not None:
        ctx.progress(0, size, "tracing rays")
    r = render(size, size, procedural_scene(spheres, boxes, seed), progress=progress)
    value = HeatmapResult(source=f"built-in ray caster, {size}×{size}, {spheres} spheres, {boxes} boxes, seed {seed}",
                          request={"size": size, "spheres": spheres, "boxes": boxes, "seed": seed},
                          cost=r.heatmap().cost, image=np.clip(r.image, 0, 1), rgb=None)
    if ctx is not None and ctx.stopped():
        raise Stopped(partial=value)
    return value


# ---- starting jobs -------------------------------------------------------------------------------
def start_scan(ws: Any, request: dict):
    from gpudse_core.explore.best import check_scan_work

    space, model = ws.require("space", "model")
    # a scan beyond its work budget is refused here, before a job starts (the last scan stays shown)
    check_scan_work(model.value, space.value, pareto=pareto_cost(space.value, request["cost"]))
    results = ws.get("results")
    table = with_failures(ws, results.value.table if results.value is not None else None,
                          list(space.value.parameter_names))
    inputs = [model, space] + ([results] if table is not None else [])  # simulated designs are marked
    return ws.start_job("scan", lambda ctx: scan_work(model.value, space.value, request, ctx, table), stage="scan",
                        inputs=inputs, origin=f"scan: {describe_scan(request)}")


def with_failures(ws: Any, table: Any, params: list[str]) -> Any:
    """The results *table* with the designs the workspace's campaigns failed to simulate added as
    ``failed`` rows, so that a scan never recommends them again."""
    import pandas as pd

    from gpudse_core.workspace.campaigns import failed_points

    failed = failed_points(ws, params)
    if failed is None:
        return table
    return failed if table is None else pd.concat([table, failed], ignore_index=True)



def results_backend(ws: Any) -> Any:
    """The built-in simulator the workspace's results came from (its kernel and noise), or None."""
    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace.provenance import results_provenance

    results = ws.get("results")
    kernel = results_kernel(ws, results)
    if kernel is None:
        return None
    prov = results_provenance(ws, results)  # the campaign's record, or the origin line the dashboard wrote
    noise = prov.noise if prov is not None and prov.noise is not None else 0.0
    return AnalyticalBackend(kernel, noise=noise, seed=0)


def simulate_limit() -> int:
    """Designs one "Simulate these" may run (limits.simulate_chosen)."""
    from gpudse_core import limits

    return int(limits.current().simulate_chosen)


def external_backends() -> list:
    """The external simulators described on this server (TOML/YAML files in GPUDSE_BACKENDS, or
    backends/ of the checkout), for the Simulations page and "Simulate these"."""
    import os
    from pathlib import Path

    folder = Path(os.environ.get("GPUDSE_BACKENDS", Path(__file__).resolve().parent.parent / "backends"))
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*") if p.suffix.lower() in (".toml", ".yaml", ".yml"))


def start_simulate_best(ws: Any, backend: Any, rows: Any, every: bool = False, per_row: int = 1) -> Any:
    """"Simulate these": the chosen best-design *rows* of the scan (a shown design each, or with *every*
    up to *per_row* designs of each row's group) run on *backend* as a check of the current model and
    scan (:func:`gpudse_core.workspace.checks.start_check`): the results are not changed, so the model,
    the best designs and the analyses stay current."""
    from gpudse_core.workspace.checks import start_check

    return start_check(ws, backend, rows, every, per_row)


def latest_simulated_best(ws: Any) -> Any:
    """The latest "Simulate these" as a :class:`~gpudse_core.explore.checks.SimulatedCheck`, or None."""
    from gpudse_core.workspace.checks import latest_check

    return latest_check(ws)


def start_add_check(ws: Any) -> Any:
    """"Add these to the results and refit": the current check's simulated designs appended to the
    results (a new version), the model fitted again with its own settings
    (:func:`gpudse_core.workspace.fits.refit_into`) and the best designs scanned again with the shown
    scan's settings, as one job (progress, Stop). Stopped or failed midway, what was done is kept and
    the pages say what is stale."""
    from gpudse_core.workspace.checks import STAGE, add_check_to_results
    from gpudse_core.workspace.fits import refit_into
    from gpudse_core.workspace.jobs import opener

    model, scan, check = ws.require("model", "scan", STAGE)  # refused with the banner's reason when stale
    request = scan_request(scan.value, EXAMPLE_SCAN)
    open_ws = opener(ws)
    n = check.value.simulated

    def work(ctx: JobContext) -> None:
        with open_ws(True) as own:
            ctx.progress(0, 3, f"adding {n:,} simulated designs to the results")
            results = add_check_to_results(own)
            if ctx.stopped():
                raise Stopped(partial=None)
            ctx.progress(1, 3, f"refitting on {len(results.value.table):,} results with the same settings")
            try:
                fitted = refit_into(own, results, model).stored
            except GpudseError as e:  # the designs are in: say so beside why the refit did not follow
                raise GpudseError(f"the {n:,} designs were added to the results (version {results.version}); {e}"
                                  ) from None
            if ctx.stopped():
                raise Stopped(partial=None)
            ctx.progress(2, 3, "scanning for the best designs")
            space = own.get("space")
            params = list(space.value.parameter_names)
            table = with_failures(own, results.value.table, params)
            try:
                value = scan_work(fitted.value, space.value, request, ctx, table)
            except Stopped as e:  # the designs scanned so far, labelled partial, as the scan's own Stop keeps
                if e.partial is not None:
                    own.put("scan", e.partial, inputs=[fitted, space, results], partial=True,
                            origin=f"scan: {describe_scan(request)}", note="stopped while scanning")
                raise
            own.put_analysis("scan", value, inputs=[fitted, space, results], origin=f"scan: {describe_scan(request)}")
            ctx.progress(3, 3, "added, refitted and scanned")

    return ws.start_job("add_check", work, origin=f"add check {check.value.campaign} to the results")


def start_true_error(ws: Any, kernel: str):
    space, results, model = ws.require("space", "results", "model")
    return ws.start_job("true_error", lambda ctx: true_error_work(model.value, space.value, kernel, ctx),
                        stage="true_error", inputs=[results, model, space], origin=f"true error against {kernel}")


def start_raycast(ws: Any, size: int, spheres: int, boxes: int, seed: int):
    return ws.start_job("raycast", lambda ctx: raycast_work(size, spheres, boxes, seed, ctx), stage="heatmap",
                        inputs=[], origin="built-in ray caster")


def start_fit(ws: Any, kind: str, response: str, params: list[str], transform: str, folds: int = 5):
    """A learner (or the model auto chooses) fitted on the current results, as the model stage."""
    from gpudse_core.model.registry import fit_model

    (results,) = ws.require("results")
    table = results.value.table[list(params) + [response]]
    space = ws.get("space").value
    derived = space.derived_map() if space is not None else {}  # the space's derived quantities: predictors too

    def work(ctx: JobContext) -> Any:
        ctx.progress(0, None, f"fitting {kind}")
        model = fit_model(kind, table, response, list(params), transform=transform, folds=folds,
                          progress=lambda d, t, m: ctx.progress(d, t, m), derived=derived or None)
        if ctx.stopped():
            raise Stopped(partial=None)
        return model

    return ws.start_job("fit", work, stage="model", inputs=[results], origin=f"{kind}, {transform} response")


def start_validation_job(ws: Any, request: dict):
    return start_validation(ws, **request)


def describe_scan(request: dict) -> str:
    goal = "highest" if request.get("maximize") else "lowest"
    cost = "the sum of parameter levels" if request.get("cost") == "levels" else request.get("cost")
    k = request.get("k")
    return f"{k if k else 'the'} {goal} predictions" + (f", Pareto front against {cost}" if cost else "")


def scan_request(scan: Any, default: dict) -> dict:
    """The request to compute *scan* again: its own settings, *default* for those it does not name (a
    scan the core's :func:`gpudse_core.workspace.start_scan` made has a cost the page cannot name)."""
    return {**default, **{k: v for k, v in scan.request.items() if v is not None and k in default}}


# ---- the example's analyses (computed in this process, no job) -----------------------------------
def example_analyses(ws: Any) -> None:
    """Compute the built-in example's validation, scan and true error into *ws* (synchronously)."""
    from gpudse_core.model.validation import validate

    space, results, model = ws.require("space", "results", "model")
    res = results.value
    params = [p for p in space.value.parameter_names if p in res.table.columns]
    val = validate(res.table[params + [res.response]], res.response, params,
                   transform=getattr(model.value, "transform", "none"), **EXAMPLE_VALIDATION)
    scan = scan_work(model.value, space.value, EXAMPLE_SCAN, results=res.table)
    kernel = results_kernel(ws, results)
    true = true_error_work(model.value, space.value, kernel) if kernel else None
    with ws.batch():
        ws.put_analysis("validation", val, inputs=[results, model], origin="validation")
        ws.put_analysis("scan", scan, inputs=[model, space, results], origin=f"scan: {describe_scan(EXAMPLE_SCAN)}")
        if true is not None:
            ws.put_analysis("true_error", true, inputs=[results, model, space], origin=f"true error against {kernel}")


# ---- which kernel the results came from ----------------------------------------------------------
def results_kernel(ws: Any, results: Any) -> str | None:
    """The built-in simulator's kernel the results were simulated with, or None (uploads, external
    simulators, several applications): :func:`gpudse_core.workspace.provenance.results_kernel`."""
    from gpudse_core.workspace.provenance import results_kernel as kernel_of

    return kernel_of(ws, results)
