"""The HTML report of a workspace: only what is current, with stale analyses left out and listed.

:func:`workspace_report` draws from :func:`gpudse_core.workspace.report_contents` — the current
stages, the results version the model was fitted on, and the current analyses — and writes one
standalone page with :func:`gpudse_core.report.project.html_report`. The dashboard's Home page and
``gpudse workspace report`` call it, so both export the same thing.
"""

from __future__ import annotations

from typing import Any

ANALYSIS_TITLES = {"validation": "Validation: relative error (%), pooled over repeats",
                   "scan": "Best designs (whole-space scan)", "true_error": "True error over the entire space"}
ERROR_COLUMNS = ("mean", "median", "p75", "p90", "p98", "max", "min", "q1", "q3")  # relative errors: shown in %


def workspace_report(ws: Any, *, include_stale: bool = False) -> str:
    """The report's HTML (see the module docstring). Raises the workspace's error when it has no
    current design space."""
    import pandas as pd

    from ..workspace import report_contents
    from . import figures
    from .project import html_report

    rc = report_contents(ws, include_stale=include_stale)
    proj = rc.project
    figs: list[Any] = []
    tables: dict[str, pd.DataFrame] = {}
    model, data = proj.model, rc.model_data
    if model is not None and data is not None and hasattr(model, "terms"):
        figs.append(figures.contributions(model))
        used = [p for p in proj.space.parameter_names if p in getattr(model, "bases", {})]
        if used:
            from ..explore.scan import response_curve

            base = {p.name: p.values[len(p.values) // 2] for p in proj.space.parameters}
            first = used[0]
            label = proj.space.parameter(first).display
            figs.append(figures.response_curve(response_curve(model, data, first, base, proj.space), first, label,
                                               model.response, data, parameter=proj.space.parameter(first)))
        figs.append(figures.predicted_vs_observed(model, data))
        from ..errors import GpudseError
        from ..model.inference import anova

        try:
            tables["ANOVA (Lee & Brooks Table 5)"] = anova(model, data)
        except GpudseError:
            pass
    kinds: dict[str, dict[str, str]] = {}
    for name, sv in sorted(rc.analyses.items()):
        title = ANALYSIS_TITLES.get(name, name) + rc.label(name)[len(name):]  # "(partial: …)", "— out of date: …"
        value = sv.value
        if name == "validation":
            figs += [figures.error_cdf(value), figures.error_trend(value)]
            tables[title] = value.summary().drop(columns=["p75"], errors="ignore").rename(
                columns={"train_size": "N"})  # as the Accuracy page shows it (p75 is q3)
            kinds[title] = {c: "fraction" for c in ERROR_COLUMNS}
        elif name == "scan" and isinstance(value, dict) and "best" in value:
            tables[title] = best_designs_table(value, proj.space)
        elif name == "true_error" and isinstance(value, dict):
            tables[title] = pd.DataFrame([{k: value[k] for k in ("kernel", "points", "mean", "median", "p98", "max")}])
            kinds[title] = {c: "fraction" for c in ERROR_COLUMNS}
    if rc.left_out:
        from ..workspace.stages import title as stage_title

        tables["Left out of this report"] = pd.DataFrame(
            [{"part": stage_title(k), "why": v} for k, v in sorted(rc.left_out.items())])
    return html_report(proj, figs, tables, title=f"gpudse — {ws.name}", table_kinds=kinds)


def best_designs_table(scan: dict, space: Any) -> Any:
    """The scan's best designs as the report shows them: one row per group the model cannot tell apart
    (the prediction, its interval, how many designs the row stands for, the used parameters' values
    and ``any`` or the values of the others; units in the headers), as the Explore page shows them.
    A scan stored before the rows were grouped is shown with its columns formatted and without the
    raw ``bounded`` and ``design_index`` columns."""
    shown = scan.get("shown")
    if shown is not None:
        return shown
    from .fmt import format_table, space_units

    best = scan["best"].drop(columns=[c for c in ("bounded", "design_index") if c in scan["best"].columns])
    return format_table(best, space_units(space))

