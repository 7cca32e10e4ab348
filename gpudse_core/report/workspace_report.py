"""The HTML report of a workspace for a design review: what produced the results, every current
analysis in the dashboard's page order, and nothing stale (left out and listed).

:func:`workspace_report` draws from :func:`gpudse_core.workspace.report_contents` — the current
stages, the results version the model was fitted on, and the current analyses — and writes one
standalone page with :func:`gpudse_core.report.html.html_report`. The title names the workspace
and what produced its results (application, simulator, measurement noise, sample size); a line
under it gives the gpudse version, the date and the version of every stage. The model is headed by
its out-of-sample error (:mod:`gpudse_core.model.headline`), never by R², and a fit that interpolates
says so instead of showing F-tests and residual plots of numerical noise. Then, as the pages show
them: the fit (Stargazer Fig. 3, a response curve, Lee & Brooks' ANOVA), accuracy (validation
tables, error CDFs, Stargazer Figs. 5-6, diagnostics, the true error over the space), exploration
(best designs, Pareto front, one-at-a-time sensitivity), the search study (its settings, best design
and history), every "Simulate these" check (predicted, interval, simulated), ray tracing (the
heatmap), and runs side by side with their settings. After the model, a table gives every setting that
produced the numbers (:mod:`gpudse_core.report.record`). The dashboard's Home page and ``gpudse
workspace report`` call it, so both export the same.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

ANALYSIS_TITLES = {"validation": "Validation: relative error (%), pooled over repeats",
                   "scan": "Best designs (whole-space scan)", "true_error": "True error over the entire space",
                   "heatmap": "Ray tracing: the per-pixel cost heatmap (Zatel)",
                   "comparison": "Runs side by side", "app_models": "One model per application"}
ERROR_COLUMNS = ("mean", "median", "p75", "p90", "p98", "max", "min", "q1", "q3")  # relative errors: shown in %
ORDER = ("app_models", "validation", "true_error", "scan", "heatmap", "comparison")  # the pages' order


def report_title(ws: Any, rc: Any) -> str:
    """``gpudse — NAME: BFS on the built-in simulator, 1 % noise, 300 results``."""
    from ..workspace.provenance import results_provenance

    sv = _results_sv(ws, rc)
    prov = results_provenance(ws, sv) if sv is not None else None
    return f"gpudse — {ws.name}" + (f": {prov.describe()}" if prov is not None else "")


def _results_sv(ws: Any, rc: Any) -> Any:
    """The results the report speaks about: those the model was fitted on, else the current ones."""
    model_sv = ws.get("model")
    if rc.project.model is not None and "results" in model_sv.inputs:
        return ws.input_of(model_sv, "results")
    sv = ws.get("results")
    return sv if sv.value is not None and (sv.ok or rc.project.results is not None) else None


def _subtitle(ws: Any, rc: Any) -> str:
    from .. import __version__
    from ..workspace.stages import title as stage_title

    versions = [f"{stage_title(s)} v{ws.get(s).version}" for s in ("space", "samples", "results", "model")
                if ws.get(s).value is not None and s not in rc.left_out]
    versions += [f"{stage_title(n)} v{sv.version}" for n, sv in sorted(rc.analyses.items())]
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"gpudse {__version__} · made {when} · " + ", ".join(versions)


def _typed(rc: Any, stage: str) -> Any:
    """The analysis *stage* of the report when it holds its registered class (a damaged one is
    already listed under "Left out"), else None."""
    from ..workspace.results import result_class

    sv = rc.analyses.get(stage)
    return sv if sv is not None and isinstance(sv.value, result_class(stage)) else None


def _validation_of(rc: Any, model_sv: Any) -> Any:
    sv = _typed(rc, "validation")
    if sv is None or not sv.ok:
        return None
    ref = sv.inputs.get("model")
    return sv.value if ref is not None and ref.version == model_sv.version else None


def _heatmap_figure(value: Any) -> Any:
    import numpy as np
    import plotly.graph_objects as go

    from . import style

    cost = np.asarray(value.cost, dtype=float)
    step = max(1, int(np.ceil(max(cost.shape) / 400)))  # at most 400 px a side in the page
    fig = go.Figure(go.Heatmap(z=cost[::step, ::step], colorscale=style.SEQUENTIAL, colorbar=dict(title="cost"),
                               hovertemplate="x %{x}, y %{y}: %{z:,.4~r}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", scaleanchor="x")
    fig.update_layout(height=520)
    return style.apply(fig, title_text=f"Per-pixel cost, {cost.shape[1]:,} × {cost.shape[0]:,} pixels",
                       source="Zatel Fig. 3")


def workspace_report(ws: Any, *, include_stale: bool = False) -> str:
    """The report's HTML (see the module docstring). Raises the workspace's error when it has no
    current design space."""
    import pandas as pd

    from .. import fmt
    from ..errors import GpudseError
    from ..model.headline import fit_headline, fit_r2
    from ..workspace import report_contents
    from . import figures
    from .html import html_report

    rc = report_contents(ws, include_stale=include_stale)
    proj = rc.project
    space = proj.space
    model, data = proj.model, rc.model_data
    model_sv = ws.get("model")
    sections: list[tuple[str, list]] = []
    headline = None
    interpolates = False
    r2 = None
    resp_unit = fmt.response_unit(model.response) if model is not None else None
    if model is not None and data is not None:
        try:
            from ..workspace.provenance import noise_free

            headline = fit_headline(model, data, _validation_of(rc, model_sv),
                                    noise_free=noise_free(ws, _results_sv(ws, rc)))
        except GpudseError:
            headline = None
        interpolates = headline is not None and headline.interpolates
        if hasattr(model, "terms"):
            try:
                r2 = fit_r2(model, data)
            except GpudseError:
                r2 = None
    model_sections = [settings_section(ws, rc)]
    if getattr(model, "trace", None):
        model_sections.append(trace_section(model, proj.space.parameter_names))
    if model is not None and data is not None and hasattr(model, "terms"):
        items: list = []
        apps = _typed(rc, "app_models")
        items.append(figures.contributions(model, apps.value.models if apps is not None and apps.ok else None))
        used = [p for p in space.parameter_names if p in getattr(model, "bases", {})]
        if used:
            from ..explore.scan import response_curve

            base = {p.name: p.values[len(p.values) // 2] for p in space.parameters}
            first = used[0]
            label = space.parameter(first).display
            items.append(figures.response_curve(response_curve(model, data, first, base, space), first, label,
                                                model.response, data, parameter=space.parameter(first)))
        from ..model.inference import anova

        if interpolates:
            items.append(("text", "The F-tests of Lee & Brooks Table 5 are not shown: as the note under Model "
                                  "says, they would not be tests here."))
        else:
            try:
                sq = fmt.squared_unit(resp_unit, model.transform)
                items.append(("ANOVA (Lee & Brooks Table 5)", anova(model, data),
                              {"partial_ss": sq, "ms": sq} if sq else {}))
            except GpudseError:
                pass
        sections.append(("The fit: contributions and a response curve" + ("" if interpolates else ", ANOVA"), items))
    kinds_err = {c: "fraction" for c in ERROR_COLUMNS}
    val_sv = _typed(rc, "validation")
    if val_sv is not None:
        value = val_sv.value
        title = ANALYSIS_TITLES["validation"] + rc.label("validation")[len("validation"):]
        items = [(title, value.summary().drop(columns=["p75"], errors="ignore").rename(columns={"train_size": "N"}),
                  {}, kinds_err), figures.error_cdf(value), figures.error_trend(value)]
        if {"stepwise", "fixed"} <= set(value.models):
            items.append(figures.error_by_size(value))  # Stargazer Fig. 6
        sections.append(("Accuracy: validation (Stargazer §7.3, Figs. 5–6; Lee & Brooks Table 6)", items))
    if model is not None and data is not None:
        items = [figures.predicted_vs_observed(model, data)]
        if interpolates:
            items.append(("text", "Residual plots are not shown: as the note under Model says, these residuals "
                                  "are not measurement noise."))
        elif hasattr(model, "bases"):
            from ..model.inference import qq_points, residual_table

            try:
                resid = residual_table(model, data)
                items += [figures.residuals_vs_fitted(resid, model.transform),
                          figures.qq_plot(qq_points(resid.residual.to_numpy()))]
            except GpudseError:
                pass
        sections.append(("Accuracy: diagnostics (Lee & Brooks §2.5)", items))
    true_sv = _typed(rc, "true_error")
    if true_sv is not None:
        import numpy as np

        value = true_sv.value
        title = ANALYSIS_TITLES["true_error"] + rc.label("true_error")[len("true_error"):]
        items = [(title, value.table(), {}, kinds_err)]
        if value.quantiles is not None:
            items.append(figures.space_error_cdf(np.asarray(value.quantiles), designs=value.points))
        sections.append(("Accuracy: the true error over the space (built-in simulator)", items))
    scan_sv = _typed(rc, "scan")
    if scan_sv is not None:
        sections.append(_scan_section(rc, scan_sv.value, model, space, headline, resp_unit))
    if model is not None and proj.model is not None and "model" not in rc.left_out:
        sections += _sensitivity_section(model, space)
    heat_sv = _typed(rc, "heatmap")
    if heat_sv is not None:
        sections.append((ANALYSIS_TITLES["heatmap"], [("text", f"In use: {heat_sv.origin}."),
                                                      _heatmap_figure(heat_sv.value)]))
    sections += _search_and_checks(ws, rc, model)
    cmp_sv = _typed(rc, "comparison")
    if cmp_sv is not None:
        from . import compare

        sections.append(("Runs side by side", compare.report_items(cmp_sv.value)))
    shown = {"validation", "true_error", "scan", "heatmap", "comparison", "app_models", "search"}
    others = [(n, sv) for n, sv in sorted(rc.analyses.items()) if n not in shown]
    if others:
        sections.append(("Other analyses in the workspace",
                         [pd.DataFrame([{"analysis": rc.label(n), "version": sv.version, "origin": sv.origin,
                                         # a typed analysis says what it holds (e.g. the search's SearchStudy)
                                         "holds": sv.value.describe() if hasattr(sv.value, "describe") else ""}
                                        for n, sv in others])]))
    tables: dict[str, pd.DataFrame] = {}
    if rc.left_out:
        from ..workspace.stages import title as stage_title

        sections.append(("Left out of this report", [pd.DataFrame(
            [{"part": stage_title(k), "why": v} for k, v in sorted(rc.left_out.items())])]))
    return html_report(proj, [], tables, title=report_title(ws, rc), subtitle=_subtitle(ws, rc),
                       headline=headline, fit_r2=r2, sections=sections, model_sections=model_sections)


def _scan_section(rc: Any, value: Any, model: Any, space: Any, headline: Any, resp_unit: str | None
                  ) -> tuple[str, list]:
    """Explore's best designs and Pareto front, with what the page says beside the rows (the review's
    record): the caution, the model's accuracy, the scan's notes and how to read them."""
    from . import figures, recommendation

    title = ANALYSIS_TITLES["scan"] + rc.label("scan")[len("scan"):]
    caution = recommendation.caution(value, model, list(space.parameter_names)) if model is not None else None
    items: list = [("warning", caution)] if caution else []
    items += [("text", t) for t in recommendation.lines(value, headline)]
    items.append((title, best_designs_table(value, space), {"predicted": resp_unit} if resp_unit else {}))
    front = value.pareto
    if front is not None and len(front) and "cost" in front.columns and model is not None:
        items.append(figures.pareto(front, recommendation.cost_label(value.cost, space), model.response,
                                    value.cloud))
        note = recommendation.cost_note(value.cost)
        if note:
            items.append(("text", note))
    return "Explore: the best designs and the Pareto front", items


def _sensitivity_section(model: Any, space: Any) -> list[tuple[str, list]]:
    """One parameter at a time from the middle design (none when the model cannot be read that way)."""
    from .. import fmt
    from ..errors import GpudseError
    from ..explore.scan import sensitivity
    from . import figures

    base = {p.name: p.values[len(p.values) // 2] for p in space.parameters}
    try:
        sens = sensitivity(model, base, space)
    except GpudseError:
        return []
    span = sens.groupby("parameter").change.agg(["min", "max"]).reindex(space.parameter_names)
    span.index = [space.parameter(p).display for p in span.index]
    where = ", ".join(f"{p.display} {fmt.fmt_value(base[p.name])}" for p in space.parameters)
    return [("Explore: one parameter at a time", [("text", f"From the middle design ({where})."),
                                                  figures.sensitivity(span, model.response)])]


def best_designs_table(scan: Any, space: Any) -> Any:
    """The scan's best designs as the report shows them: one row per group the model cannot tell apart
    (the prediction, its interval, how many designs the row stands for, the used parameters' values
    and ``any`` or the values of the others; units in the headers), as the Explore page shows them.
    A scan stored before the rows were grouped is shown with its columns formatted and without the
    raw ``bounded`` and ``design_index`` columns (*scan*: a ScanResult)."""
    if scan.shown is not None:
        from .recommendation import numbered

        return numbered(scan.shown)  # the row numbers the notes above it name
    from ..fmt import format_table, space_units

    best = scan.best.drop(columns=[c for c in ("bounded", "design_index") if c in scan.best.columns])
    return format_table(best, space_units(space))


def _search_and_checks(ws: Any, rc: Any, model: Any) -> list[tuple[str, list]]:
    """The search study (its settings, best design and history) and every "Simulate these" check
    (:mod:`gpudse_core.report.record`), as report sections."""
    from .record import check_items, checks, search_items

    sections: list[tuple[str, list]] = []
    search_sv = _typed(rc, "search")
    if search_sv is not None:
        study = search_sv.value
        running = any(j.kind == "search" for j in ws.jobs(active=True))
        state = "" if study.stopped else " (running)" if running else " (ended before it finished: interrupted)"
        sections.append((f"Search v{search_sv.version}: {study.source}{state}", search_items(study)))
    found = checks(ws)
    if found:
        sections.append(('"Simulate these": the best designs checked by simulation',
                         check_items(found, model.response if model is not None else "cycles")))
    return sections


def settings_section(ws: Any, rc: Any) -> str:
    """What produced the numbers (:func:`gpudse_core.report.record.settings_table`): the samples' method and
    seed, the simulator and its noise, the model's settings — as HTML placed after the model."""
    from .html import _report_table
    from .record import settings_table

    table = settings_table(ws, _results_sv(ws, rc), ws.get("model") if rc.project.model is not None else None,
                           rc.left_out)
    if table.empty:
        return ""
    return ("<h2>What produced these numbers</h2><p class='muted'>Every setting of the samples, the results and "
            "the model the report's figures come from, with the version of each.</p><div class='table'>"
            + _report_table(table) + "</div>")


def trace_section(model: Any, params: Any) -> str:
    """The stepwise trace as Stargazer Table 1 (the fit page's table: gpudse_core.report.trace)."""
    from . import trace

    table = trace.build(model.trace, [p for p in params if p in getattr(model, "params", params)])
    return ("<h2>The stepwise trace (Stargazer Table 1)</h2><p class='muted'>A row per step, a column per candidate "
            "with its R² (first row) or adjusted R² (later rows) with it added; bold on green: the term that entered, "
            "red: the best candidate, rejected; the statistic is the one the criterion decided by, "
            "the threshold the limit it was held to (θ a parameter, φ a pair, φ₃ a three-way term).</p>"
            f"<style>{trace.TABLE_CSS}</style><div style='--gtrace-h:none'>"
            + trace.html(table, getattr(model, "settings", None) or {})
            + "</div>")  # a page to read or print: every row, no inner scrolling
