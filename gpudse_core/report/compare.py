"""Runs side by side: two or more fitted models — versions of one workspace or of others (two
kernels such as BFS and AES, or stepwise and EBM) — overlaid as a design review compares them.

A *run* (:class:`~gpudse_core.report.comparison.Run`) is a model version with what the overlays need,
taken once by :func:`snapshot` and stored with the :class:`~gpudse_core.report.comparison.Comparison`
(an analysis of the workspace), so a reload or a report draws the same runs even
after the other workspace has moved on:

* its headline (:mod:`gpudse_core.model.headline`): the out-of-sample error, or that it interpolates;
* the relative errors for its error CDF (Lee & Brooks Figs. 9, 12): the validation's at its largest
  training size when a validation of that model version is kept, else the leave-one-out errors;
* accuracy against sample size (Stargazer Fig. 5): the validation's median and maximum per N;
* each term's R² contribution (Stargazer Fig. 3) and a response curve along one parameter with the
  others at the middle design (Stargazer Fig. 7).

:func:`headline_table`, :func:`cdf_overlay`, :func:`trend_overlay`, :func:`contributions_overlay`
and :func:`curve_overlay` draw them; the Accuracy page and the workspace report show the same.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import GpudseError
from .comparison import Comparison, Run

MAX_RUNS = 6  # overlays stay readable: a colour and a marker each


class CompareError(GpudseError):
    """Runs that cannot be compared (fewer than two, or a model version no longer kept)."""


def _validation_for(ws: Any, model_version: int) -> Any:
    """The latest kept validation computed from *model_version* of the workspace's model, or None."""
    try:
        rows = [v for v in ws.history("validation") if not v.removed and not v.partial
                and (ref := v.inputs.get("model")) is not None and ref.version == model_version]
    except GpudseError:
        return None
    from gpudse_core.workspace.results import Damaged

    for info in reversed(rows):
        try:
            value = ws.get("validation", info.version).value
        except GpudseError:
            continue
        if not isinstance(value, Damaged):
            return value
    return None


def _curve(model: Any, space: Any, param: str | None) -> pd.DataFrame | None:
    """The model's prediction at each legal value of *param*, the other parameters at the middle design."""
    if param is None or param not in space.parameter_names or param not in getattr(model, "parameters", []):
        return None
    p = space.parameter(param)
    base = {q.name: q.values[len(q.values) // 2] for q in space.parameters}
    frame = pd.DataFrame([{**base, param: v} for v in p.values])
    pred = np.asarray(model.predict(frame), dtype=float)
    return pd.DataFrame({"value": [str(v) for v in p.values], "x": np.arange(len(p.values)), "predicted": pred})


def snapshot(ws: Any, version: int | None = None, label: str | None = None, param: str | None = None) -> Run:
    """Run *version* of *ws*'s model (the current one by default) with what the overlays need."""
    from ..model.headline import fit_headline, fit_r2, loo_errors
    from ..workspace.provenance import noise_free, results_provenance
    from .record import model_settings

    model_sv = ws.get("model", version)
    model = model_sv.value
    if model is None:
        raise CompareError(f"workspace {ws.name!r} has no model to compare")
    try:
        data_sv = ws.input_of(model_sv, "results")
    except GpudseError as e:
        raise CompareError(f"workspace {ws.name!r}, model version {model_sv.version}: the results it was fitted on "
                           f"are not kept ({e}); fit it again") from None
    data = data_sv.value.table
    space = ws.input_of(data_sv, "space").value if "space" in data_sv.inputs else ws.get("space").value
    validation = _validation_for(ws, model_sv.version)
    prov = results_provenance(ws, data_sv)
    head = fit_headline(model, data, validation, noise_free=noise_free(ws, data_sv))
    kind = getattr(model, "kind", "stepwise")
    errors, source = None, None
    if validation is not None:
        errs = validation.errors.get(kind) or {}
        sizes = [n for n in errs if np.asarray(errs[n]).size]
        if sizes:
            errors, source = np.asarray(errs[max(sizes)], dtype=float), f"validation at N = {max(sizes):,}"
    if errors is None and hasattr(model, "bases") and head.source == "leave-one-out":
        errors, source = loo_errors(model, data), f"leave-one-out over {len(data):,} rows"
    trend = None
    if validation is not None:
        t = validation.summary()
        t = t[t.model == kind] if len(t) else t
        if len(t):
            trend = t[["train_size", "mean", "median", "max"]].reset_index(drop=True)
    contrib = (pd.DataFrame(model.contributions(), columns=["term", "gain"]) if hasattr(model, "contributions")
               else None)
    return Run(label=label or f"{ws.name} · model v{model_sv.version}", workspace=ws.name, workspace_id=ws.id,
               version=int(model_sv.version), kind=kind, origin=model_sv.origin,
               results=prov.describe() if prov is not None else "", kernel=prov.kernel if prov is not None else None,
               noise=prov.noise if prov is not None else None, rows=len(data), response=model.response,
               headline=head, r2=None if head.interpolates or not hasattr(model, "r2") else
               (fit_r2(model, data).r2 if hasattr(model, "bases") else model.r2),  # the data's, as the fit is quoted
               terms=len(getattr(model, "terms", []) or []) or None, errors=errors, errors_source=source,
               trend=trend, contributions=contrib, param=param, curve=_curve(model, space, param),
               settings=tuple(model_settings(model)))


def comparison(runs: Sequence[Run], param: str | None = None) -> Comparison:
    """The stored comparison: the runs (2 to MAX_RUNS) and the parameter of the response curves."""
    if len(runs) < 2:
        raise CompareError("pick at least two runs to compare")
    if len(runs) > MAX_RUNS:
        raise CompareError(f"{len(runs)} runs: compare at most {MAX_RUNS} at a time (one colour each)")
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):  # two runs with one name: number them so the legends tell them apart
        runs = [replace(r, label=f"{r.label} ({i + 1})") for i, r in enumerate(runs)]
    return Comparison(tuple(runs), param)


def headline_table(cmp: Comparison) -> pd.DataFrame:
    """One row per run: what produced it and its headline numbers, as display text (the formatter's)."""
    from ..fmt import fmt_count, fmt_percent, fmt_r2

    rows = []
    for r in cmp.runs:
        h = r.headline
        val = None
        if r.trend is not None and len(r.trend):
            val = float(r.trend.sort_values("train_size").iloc[-1]["median"])
        lost = h.value is None and h.interpolates
        rows.append({"run": r.label,
                     "out-of-sample error (median)": "interpolates" if lost else fmt_percent(h.value),
                     "measured by": "–" if lost else ({"leave-one-out": "leave-one-out", "validation": "validation "
                                                      + h.detail}.get(h.source, "not measured")),
                     "validation median, largest N": fmt_percent(val) if val is not None else "–",
                     "R² (training rows)": fmt_r2(r.r2) if r.r2 is not None else "–",
                     "model": r.kind, "terms": fmt_count(r.terms) if r.terms else "–",
                     "results": r.results})
    return pd.DataFrame(rows)


def _fig() -> Any:
    import plotly.graph_objects as go

    return go.Figure()


def cdf_overlay(cmp: Comparison) -> Any:
    """The runs' relative-error CDFs on one axis (Lee & Brooks Figs. 9, 12)."""
    import plotly.graph_objects as go

    from ..model.metrics import ecdf
    from . import style

    fig = _fig()
    top = 0.0
    for i, r in enumerate(cmp.runs):
        e = r.errors
        if e is None:
            continue
        e = np.asarray(e, dtype=float)
        fin = e[np.isfinite(e)]
        x, y = ecdf(100 * fin)
        y = y * (x.size / max(e.size, 1))
        top = max(top, float(x.max()) if x.size else 0.0)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=r.label,
                                 line=dict(shape="hv", color=style.color(i)),
                                 hovertemplate="%{y:.0%} within %{x:,.3~r} %<extra>" + r.label + "</extra>"))
    if top > 1000:
        fig.update_xaxes(**style.log_axis([v for tr in fig.data for v in tr.x], "relative error (%)", unit="%"))
    fig.update_layout(xaxis_title="relative error (%)", yaxis_title="fraction of predictions", height=420,
                      yaxis_range=[0, 1.02], yaxis_tickformat=".0%", legend=dict(orientation="h", y=-0.25))
    return style.apply(fig, title_text="Error CDFs of the runs", source="Lee & Brooks Figs. 9, 12",
                       one_entry_per_group=False)


def trend_overlay(cmp: Comparison) -> Any:
    """Median (solid) and maximum (dotted) validation error against training size, per run (Stargazer Fig. 5)."""
    import plotly.graph_objects as go

    from . import style

    fig = _fig()
    values: list[float] = []
    for i, r in enumerate(cmp.runs):
        t = r.trend
        if t is None or not len(t):
            continue
        for stat, dash in (("median", "solid"), ("max", "dot")):
            y = 100 * t[stat].to_numpy(dtype=float)
            values += [v for v in y if np.isfinite(v) and v > 0]
            fig.add_trace(go.Scatter(x=t.train_size, y=y, mode="lines+markers", name=f"{r.label} {stat}",
                                     line=dict(dash=dash, color=style.color(i)),
                                     marker=dict(symbol=style.symbol(i), color=style.color(i)),
                                     hovertemplate=f"{r.label} {stat} at N = %{{x}}: %{{y:,.3~r}} %<extra></extra>"))
    if values:
        fig.update_yaxes(**style.log_axis(values, "relative error (%, log scale)", unit="%"))
    fig.update_layout(xaxis_title="training points N", height=420, legend=dict(orientation="h", y=-0.25))
    return style.apply(fig, title_text="Accuracy against sample size", source="Stargazer Fig. 5",
                       one_entry_per_group=False)


def contributions_overlay(cmp: Comparison) -> Any:
    """Each run's per-term R² gains as one stacked bar (Stargazer Fig. 3); a term keeps its colour."""
    import plotly.graph_objects as go

    from .. import fmt
    from . import style

    fig = _fig()
    colours: dict[str, str] = {}
    for r in cmp.runs:
        c = r.contributions
        if c is None or not len(c):
            continue
        for term, gain in zip(c.term, c.gain):
            colour = colours.setdefault(term, style.color(len(colours)))
            fig.add_trace(go.Bar(x=[r.label], y=[gain], name=term, legendgroup=term, marker_color=colour,
                                 hovertemplate=f"{term}: {fmt.fmt_r2(gain)}<extra>{r.label}</extra>"))
    fig.update_layout(barmode="stack", yaxis_title="contribution to R²", yaxis_range=[0, 1], xaxis_type="category",
                      height=max(420, min(1000, 220 + 22 * len(colours))), legend_title_text="term")
    return style.apply(fig, title_text="Each term's contribution to R², per run", source="Stargazer Fig. 3")


def curve_overlay(cmp: Comparison) -> Any:
    """The runs' predictions along one parameter, the others at the middle design (Stargazer Fig. 7)."""
    import plotly.graph_objects as go

    from .. import fmt
    from . import style

    fig = _fig()
    param = cmp.param
    ticks: list[str] = []
    response = None
    for i, r in enumerate(cmp.runs):
        c = r.curve
        if c is None or not len(c):
            continue
        response = response or r.response
        ticks = ticks if len(ticks) >= len(c) else list(c.value)
        fig.add_trace(go.Scatter(x=c.x, y=c.predicted, mode="lines+markers", name=r.label,
                                 line=dict(color=style.color(i), dash=("solid", "dash", "dot", "dashdot")[i % 4]),
                                 marker=dict(symbol=style.symbol(i), size=8, color=style.color(i)),
                                 customdata=c.value,
                                 hovertemplate=f"{param} = %{{customdata}}: %{{y:,.4~r}}<extra>{r.label}</extra>"))
    unit = fmt.response_unit(response) if response else None
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(ticks))), ticktext=ticks, title=str(param))
    fig.update_layout(yaxis_title=f"predicted {response}" + (f" ({unit})" if unit and unit != response else ""),
                      height=420, legend=dict(orientation="h", y=-0.25))
    return style.apply(fig, title_text=f"Response along {param}, the others at the middle design",
                       source="Stargazer Fig. 7")


def figures(cmp: Comparison) -> list:
    """Every overlay that has something to draw, in the page's order."""
    out = []
    if any(r.errors is not None for r in cmp.runs):
        out.append(cdf_overlay(cmp))
    if any(r.trend is not None for r in cmp.runs):
        out.append(trend_overlay(cmp))
    if any(r.contributions is not None for r in cmp.runs):
        out.append(contributions_overlay(cmp))
    if cmp.param and any(r.curve is not None for r in cmp.runs):
        out.append(curve_overlay(cmp))
    return out


def notes(cmp: Comparison) -> list[str]:
    """What a reader should know about the runs: where a curve is missing and why."""
    drawn = [f"{r.label} from {r.errors_source}" for r in cmp.runs if r.errors is not None]
    out = [f"Error CDFs: {'; '.join(drawn)}."] if drawn else []
    for r in cmp.runs:
        if r.headline.interpolates:
            out.append(f"{r.label}: {r.headline.note}")
        if r.trend is None:
            out.append(f"{r.label}: no validation of this model version is kept, so it has no accuracy-against-"
                       "sample-size curve" + ("" if r.errors is not None else " and no error CDF"))
    return out


def report_items(cmp: Comparison) -> list:
    """The report's section: the headline table, the notes and the overlays."""
    from .record import runs_settings_table

    items: list = [("Headline numbers of each run", headline_table(cmp)),
                   ("What produced each run: its results and the model's settings", runs_settings_table(cmp))]
    items += [("text", n) for n in notes(cmp)]
    return items + figures(cmp)
