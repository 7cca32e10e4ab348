"""Plotly figures shared by the dashboard pages and the standalone HTML report (one implementation).

Every builder returns a figure styled by :mod:`gpudse_core.report.style` (template and colours carried
inside the figure), with numbers in hover texts and tick labels written by :mod:`gpudse_core.fmt`,
so a chart looks the same on a page (``st.plotly_chart(fig, theme=None)``) and in the report.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import fmt
from ..model.stepwise import StepwiseModel
from ..model.validation import ValidationResult, ecdf
from . import style

LOG_ERRORS_ABOVE = 1000.0  # an error CDF switches to a log axis when some error exceeds this (per cent)


def _finite(a: Any) -> np.ndarray:
    v = np.asarray(a, dtype=float)
    return v[np.isfinite(v)]


LEGEND_BESIDE_CHARS = 32  # Fig. 3's legend beside the bars while its longest line has at most this many characters


def contributions(model: StepwiseModel, models: dict[str, StepwiseModel] | None = None) -> go.Figure:
    """Stargazer Fig. 3: each term's R² gain in selection order, one stacked bar per model/application;
    a term keeps its colour across bars and has one legend entry."""
    models = models or {model.response: model}
    fig = go.Figure()
    for name, m in models.items():
        for term, gain in m.contributions():
            # level cells are one bar named by its cells, one cell a line so the legend stays narrow
            fig.add_trace(go.Bar(x=[name], y=[gain], name=term.replace(", [", ",<br>["), legendgroup=term,
                                 hovertemplate=f"{term}: {fmt.fmt_r2(gain)}<extra>{name}</extra>"))
    names = list(dict.fromkeys(t.name for t in fig.data))
    lines = sum(1 + str(n).count("<br>") for n in names)
    longest = max((len(line) for n in names for line in str(n).split("<br>")), default=0)
    fig.update_layout(barmode="stack", yaxis_title="contribution to R²", yaxis_range=[0, 1],
                      legend_title_text="term (in order)", xaxis_type="category")
    if longest <= LEGEND_BESIDE_CHARS:  # beside the bars, tall enough to list every term (24 px an entry)
        fig.update_layout(height=max(400, min(1100, 220 + 24 * len(names))))
    else:  # long names beside the bars took a half-page column's width and were drawn over them (a 14-term fit
        # on a convolution table at 1280 px): below them, one term a line, the figure grown by the legend's lines
        fig.update_layout(height=min(1500, 480 + 24 * lines),
                          legend=dict(orientation="v", yanchor="top", y=-0.12, xanchor="left", x=0))
    return style.apply(fig, title_text="Each term's contribution to R²", source="Stargazer Fig. 3")


def _legal_points(curve: pd.DataFrame, param: str, parameter: Any, legal: pd.DataFrame | None) -> pd.DataFrame | None:
    """The curve at the legal values: *legal* if given (exact), else read off the fine curve (numeric)."""
    if legal is not None:
        return legal
    if parameter is None:
        return None
    xs = curve[param]
    if getattr(parameter, "kind", "numeric") == "categorical" or xs.dtype.kind not in "iuf":
        return None  # a categorical curve is already evaluated at its levels
    x = xs.to_numpy(dtype=float)
    vals = np.array([float(v) for v in parameter.values])
    vals = vals[(vals >= x.min() - 1e-9) & (vals <= x.max() + 1e-9)]
    return pd.DataFrame({param: vals, "predicted": np.interp(vals, x, curve.predicted.to_numpy(dtype=float))})


def _curve_traces(fig: go.Figure, curve: pd.DataFrame, param: str, label: str, response: str, *, name: str,
                  colour: str, parameter: Any = None, legal: pd.DataFrame | None = None, band: bool = True,
                  unit: str | None = None, symbol: str = "circle") -> None:
    categorical = curve[param].dtype.kind not in "iuf" or getattr(parameter, "kind", "") == "categorical"
    if categorical:
        x = [str(v) for v in curve[param]]
        err = dict(type="data", symmetric=False, array=(curve.upper - curve.predicted).tolist(),
                   arrayminus=(curve.predicted - curve.lower).tolist(), color=style.rgba(colour, 0.6)) if band else None
        text = [f"{label} = {a}<br>{response} = {fmt.fmt_number(b, unit)}" for a, b in zip(x, curve.predicted)]
        fig.add_trace(go.Scatter(x=x, y=curve.predicted, mode="markers", name=name, legendgroup=name, error_y=err,
                                 text=text, hovertemplate="%{text}<extra></extra>",
                                 marker=dict(color=colour, size=11, symbol=symbol,
                                             line=dict(color="white", width=1.5))))
        return
    x = list(curve[param])
    if band:
        fig.add_trace(go.Scatter(x=x + x[::-1], y=list(curve.upper) + list(curve.lower)[::-1], fill="toself",
                                 fillcolor=style.rgba(colour, 0.18), line=dict(width=0), name=f"{name}: 95% band",
                                 legendgroup=f"{name} band", hoverinfo="skip"))
    at = _legal_points(curve, param, parameter, legal)
    fig.add_trace(style.model_line(x, curve.predicted, name=name, color_=colour, between_legal=at is not None,
                                   group=name))
    if at is not None:
        fig.add_trace(style.legal_values_trace(at[param], at.predicted, name=f"{name} at legal values",
                                               color_=colour, group=name, showlegend=False, x_label=label,
                                               y_label=response, unit=unit, symbol_=symbol))


def response_curve(curve: pd.DataFrame, param: str, label: str, response: str,
                   data: pd.DataFrame | None = None, *, parameter: Any = None, legal: pd.DataFrame | None = None,
                   unit: str | None = None) -> go.Figure:
    """Stargazer Fig. 7: the model along *param* (others held fixed) with its 95 % band and the training
    points. With *parameter* (the space's ``Parameter``) the axis is the parameter's (log2 for powers of two,
    ticked at the legal values), the legal values are marked and the line between them is dashed; *legal*
    is the curve evaluated exactly at the legal values (else they are read off the fine curve)."""
    fig = go.Figure()
    if data is not None and response in data and param in data:
        x = data[param].astype(str) if curve[param].dtype.kind not in "iuf" else data[param]
        fig.add_trace(go.Scatter(x=x, y=data[response], mode="markers", name="training points",
                                 marker=dict(size=5, color=style.rgba(style.PALETTE[1], 0.45)),
                                 hovertemplate=f"{label} = %{{x}}<br>{response} = %{{y:,.4~r}}<extra></extra>"))
    _curve_traces(fig, curve, param, label, response, name="model", colour=style.PALETTE[0], parameter=parameter,
                  legal=legal, unit=unit)
    if parameter is not None:
        fig.update_xaxes(**style.axis_for(parameter, label))
    fig.update_layout(xaxis_title=label, yaxis_title=response, height=440, hovermode="closest")
    return style.apply(fig, title_text="Response curve: the other parameters held fixed", source="Stargazer Fig. 7")


def response_curves(curves: Mapping[str, pd.DataFrame], param: str, label: str, response: str, *,
                    parameter: Any = None, legal: Mapping[str, pd.DataFrame] | None = None,
                    unit: str | None = None, band: bool = False) -> go.Figure:
    """One curve per model (e.g. per application), each in its own colour, legal values marked."""
    fig = go.Figure()
    for i, (name, curve) in enumerate(curves.items()):
        _curve_traces(fig, curve, param, label, response, name=str(name), colour=style.color(i), parameter=parameter,
                      legal=(legal or {}).get(name), band=band, unit=unit, symbol=style.symbol(i))
    if parameter is not None:
        fig.update_xaxes(**style.axis_for(parameter, label))
    fig.update_layout(xaxis_title=label, yaxis_title=response, height=460)
    return style.apply(fig, title_text="Response curves per application", source="Stargazer Fig. 7")


def interaction_heatmap(xs: Sequence[Any], ys: Sequence[Any], z: Any, x_param: Any, y_param: Any,
                        response: str, legal_only: bool = False) -> go.Figure:
    """The model over two parameters (the others held fixed), ticked at the legal values. *legal_only*:
    the grid holds the legal values only (``interaction_grid(..., legal_only=True)``): one equal cell per
    design, so no colour fills the gaps between legal values where no design exists."""
    xs, ys = np.asarray(xs), np.asarray(ys)
    if legal_only:
        fig = go.Figure(go.Heatmap(x=[fmt.fmt_value(v) for v in xs], y=[fmt.fmt_value(v) for v in ys], z=z,
                                   colorscale=style.SEQUENTIAL, colorbar=dict(title=dict(text=response)),
                                   xgap=1, ygap=1, hovertemplate="%{x}, %{y}: %{z:,.4~r}<extra></extra>"))
        fig.update_xaxes(type="category", title_text=style.label(x_param))
        fig.update_yaxes(type="category", title_text=style.label(y_param))
        fig.update_layout(height=460)
        return style.apply(fig, title_text=f"Predicted {response} over two parameters, at their legal values")
    fig = go.Figure(go.Heatmap(x=[str(v) for v in xs] if xs.dtype == object else xs,
                               y=[str(v) for v in ys] if ys.dtype == object else ys, z=z,
                               colorscale=style.SEQUENTIAL, colorbar=dict(title=dict(text=response)),
                               hovertemplate="%{x}, %{y}: %{z:,.4~r}<extra></extra>"))
    for axis, p in (("x", x_param), ("y", y_param)):
        spec = style.axis_for(p)
        if spec.get("type") == "log":  # cells sit on a linear grid: keep it linear, ticked at the legal values
            spec = {k: v for k, v in spec.items() if k != "range"} | dict(type="linear")
        (fig.update_xaxes if axis == "x" else fig.update_yaxes)(**spec)
    fig.update_layout(height=460)
    return style.apply(fig, title_text=f"Predicted {response} over two parameters")


def _sizes_with_errors(res: ValidationResult) -> list[int]:
    """The training sizes some model has errors for (all of them, unless the run was stopped)."""
    return [n for n in res.train_sizes if any(n in res.errors.get(m, {}) for m in res.models)]


def error_cdf(res: ValidationResult, n: int | None = None) -> go.Figure:
    """Lee & Brooks Figs. 9, 12: the empirical CDF of relative errors at one training size, per model."""
    n = n or max(_sizes_with_errors(res), default=max(res.train_sizes))  # a stopped run: the largest N done
    fig = go.Figure()
    top = 0.0
    for m in res.models:
        e = res.errors.get(m, {}).get(n)
        if e is None:
            continue
        e = np.asarray(e, dtype=float)
        bad = int(np.sum(~np.isfinite(e)))
        x, y = ecdf(100 * _finite(e))
        y = y * (x.size / max(e.size, 1))  # non-finite errors stay in the denominator: the curve ends lower
        top = max(top, float(x.max()) if x.size else 0.0)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=m + (f" ({bad} not finite)" if bad else ""),
                                 legendgroup=m, line=dict(shape="hv"),
                                 hovertemplate="%{y:.0%} of predictions within %{x:,.3~r} %<extra>" + m + "</extra>"))
    if top > LOG_ERRORS_ABOVE:
        vals = [v for tr in fig.data for v in tr.x]
        fig.update_xaxes(**style.log_axis(vals, "relative error (%)", unit="%"))
    fig.update_layout(xaxis_title="relative error (%)", yaxis_title="fraction of predictions", height=400,
                      yaxis_range=[0, 1.02], yaxis_tickformat=".0%")
    return style.apply(fig, title_text=f"Error CDF at N = {fmt.fmt_count(n)}", source="Lee & Brooks Figs. 9, 12")


def error_trend(res: ValidationResult) -> go.Figure:
    """Stargazer Fig. 5: mean (solid) and maximum (dotted) relative error against the training size."""
    table = res.summary()
    fig = go.Figure()
    values = []
    for m in res.models:
        sub = table[table.model == m] if len(table) else table
        if not len(sub):
            continue
        for stat, dash, symbol in (("mean", "solid", "circle"), ("max", "dot", "x")):
            y = 100 * sub[stat].to_numpy(dtype=float)
            values += list(y)
            # markers on both: with one training size (a stopped run) a line alone would not show
            fig.add_trace(go.Scatter(x=sub.train_size, y=y, mode="lines+markers", name=f"{m} {stat}", legendgroup=m,
                                     showlegend=True, line=dict(dash=dash), marker=dict(symbol=symbol),
                                     hovertemplate=f"{m} {stat} at N = %{{x}}: %{{y:,.3~r}} %<extra></extra>"))
    fig.update_yaxes(**style.log_axis(values, "relative error (%, log scale)", unit="%"))
    fig.update_layout(xaxis_title="training points N", height=400, xaxis_tickmode="array",
                      xaxis_tickvals=_sizes_with_errors(res) or list(res.train_sizes))
    # both lines of a model share its colour (legend group); both keep their legend entries
    return style.apply(fig, title_text="Mean and maximum error against training size", source="Stargazer Fig. 5",
                       one_entry_per_group=False)


def error_by_size(res: ValidationResult, models: Sequence[str] = ("stepwise", "fixed")) -> go.Figure:
    """Stargazer Fig. 6: mean relative error per training size, grouped bars per model. A size without a
    finite mean is labelled "–" in its slot (not an unexplained gap)."""
    table = res.summary()
    done = _sizes_with_errors(res) or list(res.train_sizes)  # a stopped run: no empty slots for sizes not reached
    sizes = [str(n) for n in done]
    fig = go.Figure()
    for m in models:
        y, text = [], []
        for n in done:
            row = table[(table.model == m) & (table.train_size == n)] if len(table) else table
            v = float(row["mean"].iloc[0]) * 100 if len(row) else math.nan
            ok = math.isfinite(v)
            y.append(v if ok else 0.0)
            text.append(fmt.fmt_percent(v, fraction=False) if ok else fmt.missing())
        fig.add_trace(go.Bar(x=sizes, y=y, name=m, text=text, textposition="outside", cliponaxis=False,
                             hovertemplate=f"{m}, N = %{{x}}: %{{text}}<extra></extra>"))
    fig.update_layout(barmode="group", xaxis_title="training points N", yaxis_title="mean relative error (%)",
                      height=360, xaxis_type="category", uniformtext=dict(minsize=10, mode="hide"))
    return style.apply(fig, title_text="Automated against fixed three-factor model", source="Stargazer Fig. 6")


def predicted_vs_observed(model: StepwiseModel, data: pd.DataFrame) -> go.Figure:
    obs = data[model.response].to_numpy(dtype=float)
    pred = model.predict(data)
    lo, hi = float(np.nanmin(obs)), float(np.nanmax(obs))
    fig = go.Figure([go.Scatter(x=obs, y=pred, mode="markers", name="points",
                                marker=dict(size=6, color=style.rgba(style.PALETTE[0], 0.6)),
                                hovertemplate="observed %{x:,.4~r}<br>predicted %{y:,.4~r}<extra></extra>"),
                     go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x",
                                line=dict(color=style.GREY, dash="dash", width=1.5))])
    fig.update_layout(xaxis_title=f"observed {model.response}", yaxis_title=f"predicted {model.response}", height=380)
    return style.apply(fig, title_text="Predicted against observed (training data)")


def residuals_vs_fitted(resid: pd.DataFrame, transform: str = "none") -> go.Figure:
    """Lee & Brooks §2.5: residuals against fitted values (transformed scale)."""
    fig = go.Figure([go.Scatter(x=resid.fitted, y=resid.residual, mode="markers", name="residuals",
                                marker=dict(size=6, color=style.rgba(style.PALETTE[0], 0.6))),
                     go.Scatter(x=[float(resid.fitted.min()), float(resid.fitted.max())], y=[0, 0], mode="lines",
                                name="zero", line=dict(color=style.GREY, dash="dash", width=1.5))])
    fig.update_layout(xaxis_title=f"fitted ({transform} scale)", yaxis_title="residual", height=380, showlegend=False)
    return style.apply(fig, title_text="Residuals against fitted values", source="Lee & Brooks §2.5")


def qq_plot(qq: pd.DataFrame) -> go.Figure:
    """Lee & Brooks Fig. 8: residual quantiles against normal quantiles, with the line through the quartiles."""
    q1, q3 = np.quantile(qq["sample"], [0.25, 0.75])
    t1, t3 = np.quantile(qq.theoretical, [0.25, 0.75])
    slope = (q3 - q1) / (t3 - t1) if t3 != t1 else 0.0
    fig = go.Figure([go.Scatter(x=qq.theoretical, y=qq["sample"], mode="markers", name="residuals",
                                marker=dict(size=6, color=style.rgba(style.PALETTE[0], 0.7))),
                     go.Scatter(x=qq.theoretical, y=q1 + slope * (qq.theoretical - t1), mode="lines",
                                name="quartile line", line=dict(color=style.PALETTE[2], width=2))])
    fig.update_layout(xaxis_title="normal quantiles", yaxis_title="residual quantiles", height=380)
    return style.apply(fig, title_text="Normal Q-Q plot of the residuals", source="Lee & Brooks Fig. 8")


def residuals_by(resid: pd.DataFrame, param: str, parameter: Any = None) -> go.Figure:
    """Residuals per value of one parameter (boxes, in the parameter's value order)."""
    order = [str(v) for v in parameter.values] if parameter is not None else sorted(resid[param].astype(str).unique())
    fig = go.Figure(go.Box(x=resid[param].astype(str), y=resid.residual, name="residuals", showlegend=False))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order,
                     title_text=style.label(parameter) if parameter is not None else param)
    fig.update_layout(yaxis_title="residual", height=360)
    return style.apply(fig, title_text=f"Residuals by {param}", source="Lee & Brooks §2.5")


def dendrogram(vc: Any) -> go.Figure:
    """Lee & Brooks Fig. 1 (Hmisc varclus): the complete-linkage tree on 1 − Spearman ρ², every leaf labelled."""
    from scipy.cluster.hierarchy import dendrogram as scipy_dendrogram

    d = scipy_dendrogram(np.asarray(vc.linkage), labels=list(vc.labels), no_plot=True)
    fig = go.Figure()
    for xs, ys in zip(d["icoord"], d["dcoord"]):
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=style.PALETTE[0], width=2),
                                 hoverinfo="skip", showlegend=False, name="tree"))
    leaves = list(d["ivl"])
    fig.update_xaxes(tickmode="array", tickvals=[5 + 10 * i for i in range(len(leaves))], ticktext=leaves,
                     range=[0, 10 * len(leaves)], showgrid=False, tickangle=0 if len(leaves) <= 10 else -45)
    fig.update_layout(yaxis_title="1 − Spearman ρ²", yaxis_rangemode="tozero", height=380, showlegend=False)
    return style.apply(fig, title_text="Variable clustering", source="Lee & Brooks Fig. 1 (Hmisc varclus)")


def space_error_cdf(errors: Any, max_points: int = 20_000, designs: int | None = None) -> go.Figure:
    """The true relative error over a whole space (built-in simulator), as a CDF (subsampled for drawing).
    *errors* may be quantiles of the errors (a stored :class:`~gpudse_core.model.true_error.TrueError` keeps
    1,001): *designs*, how many designs they summarise, then titles the chart, not the quantiles' count."""
    e = _finite(errors)
    step = max(1, e.size // max_points)
    x, y = ecdf(100 * np.sort(e)[::step]) if e.size else (np.array([]), np.array([]))
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", name="error", line=dict(shape="hv"),
                               hovertemplate="%{y:.0%} of the space within %{x:,.3~r} %<extra></extra>"))
    if x.size and x.max() > LOG_ERRORS_ABOVE:
        fig.update_xaxes(**style.log_axis(x, "relative error (%)", unit="%"))
    fig.update_layout(xaxis_title="relative error (%)", yaxis_title="fraction of the space", height=380,
                      yaxis_tickformat=".0%", showlegend=False)
    return style.apply(fig, title_text=f"True error over all {fmt.fmt_count(designs or e.size)} designs")


def pareto(front: pd.DataFrame, cost: str, response: str, cloud: pd.DataFrame | None = None) -> go.Figure:
    """Designs not beaten on both predicted response and cost (the front), over a sample of all designs."""
    fig = go.Figure()
    if cloud is not None and len(cloud):
        fig.add_trace(go.Scattergl(x=cloud.cost, y=cloud.predicted, mode="markers", name="designs (sample)",
                                   marker=dict(size=3, color=style.rgba(style.GREY, 0.3))))
    fig.add_trace(go.Scatter(x=front.cost, y=front.predicted, mode="lines+markers", name="Pareto front",
                             line=dict(color=style.PALETTE[2], width=3, shape="hv"),
                             marker=dict(color=style.PALETTE[2], size=7)))
    fig.update_layout(xaxis_title=cost, yaxis_title=f"predicted {response}", height=440)
    return style.apply(fig, title_text=f"Pareto front: predicted {response} against {cost}")


def sensitivity(span: pd.DataFrame, response: str) -> go.Figure:
    """One parameter at a time: the largest increase and decrease of the prediction (fractions → %)."""
    fig = go.Figure([go.Bar(y=list(span.index), x=100 * span["max"], orientation="h", name="largest increase",
                            hovertemplate="%{y}: %{x:+,.3~r} %<extra></extra>"),
                     go.Bar(y=list(span.index), x=100 * span["min"], orientation="h", name="largest decrease",
                            hovertemplate="%{y}: %{x:+,.3~r} %<extra></extra>")])
    fig.update_layout(barmode="overlay", xaxis_title=f"change of predicted {response} (%)",
                      height=max(300, 34 * len(span) + 120), yaxis_autorange="reversed")
    return style.apply(fig, title_text="Moving one parameter from the chosen design")


def sample_counts(points: pd.DataFrame, params: Sequence[Any], cols: int = 4) -> go.Figure:
    """Points per value of each parameter against the uniform expectation (dashed), one panel each."""
    from plotly.subplots import make_subplots

    params = [p for p in params if p.name in points.columns]
    cols = max(1, min(cols, len(params)))
    rows = max(1, (len(params) + cols - 1) // cols)
    fig = make_subplots(rows=rows, cols=cols, vertical_spacing=min(0.25, 0.5 / rows) if rows > 1 else 0.2,
                        subplot_titles=[style.label(p) for p in params])
    n = len(points)
    for k, p in enumerate(params):
        r, c = k // cols + 1, k % cols + 1
        counts = points[p.name].value_counts().reindex(list(p.values), fill_value=0)
        labels = [fmt.fmt_value(v) for v in p.values]
        fig.add_trace(go.Bar(x=labels, y=counts.to_numpy(), name="points", legendgroup="points",
                             marker_color=style.PALETTE[0], showlegend=k == 0,
                             hovertemplate=f"{p.display} = %{{x}}: %{{y:,}} points<extra></extra>"), row=r, col=c)
        expected = n / p.size
        fig.add_trace(go.Scatter(x=labels, y=[expected] * len(labels), mode="lines", name="expected if uniform",
                                 legendgroup="expected", showlegend=k == 0,
                                 line=dict(color=style.PALETTE[2], dash="dash", width=2),
                                 hovertemplate=f"expected {fmt.fmt_number(expected, sig=3)} points<extra></extra>"),
                      row=r, col=c)
        fig.update_xaxes(type="category", row=r, col=c)
    fig.update_yaxes(title_text="points", col=1)
    # the legend shares the title's band at the top right, above the panels' titles
    fig.update_layout(height=250 * rows + 110, legend=dict(orientation="h", yref="container", y=1, yanchor="top",
                                                           x=1, xanchor="right"))
    fig.update_annotations(font_size=style.FONT_SIZE - 1)
    return style.apply(fig, title_text="Points per value against the uniform expectation")


def search_progress(values: Sequence[Any], rounds: Sequence[int], response: str, maximize: bool = False) -> go.Figure:
    """A sequential search's simulations in order (failed ones left out) and the best so far."""
    x = np.arange(1, len(values) + 1)
    v = np.array([np.nan if y is None else float(y) for y in values])
    best = (np.fmax if maximize else np.fmin).accumulate(np.where(np.isnan(v), -np.inf if maximize else np.inf, v))
    best = np.where(np.isfinite(best), best, np.nan)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=v, mode="markers", name="simulated", text=[f"round {r}" for r in rounds],
                             marker=dict(size=5)))
    fig.add_trace(go.Scatter(x=x, y=best, mode="lines", name="best so far", line=dict(shape="hv", width=3)))
    fig.update_layout(xaxis_title="simulations", yaxis_title=response)
    return style.apply(fig, title_text="Sequential search: every simulation and the best so far")


def search_model_error(simulated: Sequence[int], errors: Sequence[float]) -> go.Figure:
    """A search's model error as it learns: the forest's mean relative out-of-bag error after each round."""
    fig = go.Figure(go.Scatter(x=list(simulated), y=[100 * e for e in errors], mode="lines+markers",
                               name="out-of-bag error", line=dict(color=style.PALETTE[1], width=2),
                               marker=dict(size=4)))
    fig.update_layout(xaxis_title="simulations", yaxis_title="mean relative error (%)", height=340, showlegend=False)
    return style.apply(fig, title_text="The model's estimated error (out of bag)")


def search_front(costs: Sequence[float], values: Sequence[float], front_costs: Sequence[float],
                 front_values: Sequence[float], cost: str, response: str) -> go.Figure:
    """A Pareto search's simulated designs (response against cost) and the front they form."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=list(costs), y=list(values), mode="markers", name="simulated",
                             marker=dict(size=5, color=style.rgba(style.GREY, 0.6))))
    fig.add_trace(go.Scatter(x=list(front_costs), y=list(front_values), mode="lines+markers", name="Pareto front",
                             line=dict(color=style.PALETTE[2], width=3, shape="hv"),
                             marker=dict(color=style.PALETTE[2], size=7)))
    from .plaintext import chart as plain

    fig.update_layout(xaxis_title=plain(f"cost: {cost}"), yaxis_title=response, height=440)
    return style.apply(fig, title_text=f"Pareto front: {response} against the cost")


def selected_pixels(plan: Any) -> go.Figure:
    """Zatel's selected pixels (paper 002, Fig. 3): the overlay image with a legend of what its colours
    mean — each colour cluster of the quantised heatmap (hottest first, with its coldness c), bright where
    a pixel is traced, dimmed where it is not."""
    import base64
    import io

    from PIL import Image

    from ..raytrace.zatel import DIM

    buf = io.BytesIO()
    Image.fromarray(plan.overlay()).save(buf, format="PNG", compress_level=1)
    fig = go.Figure(go.Image(source="data:image/png;base64," + base64.b64encode(buf.getvalue()).decode(),
                             hoverinfo="skip"))
    colours, cold = plan.cluster_colours(), plan.quant.coldness
    for i in np.argsort(cold, kind="stable"):  # hottest (most costly) first, as the page's caption
        r, g, b = (int(v) for v in colours[i])
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers",
                                 name=f"cluster, c = {fmt.fmt_number(cold[i], sig=3)}",
                                 marker=dict(symbol="square", size=14, color=f"rgb({r},{g},{b})")))
    grey = round(200 * DIM)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="dimmed colour: not traced",
                             marker=dict(symbol="square", size=14, color=f"rgb({grey},{grey},{grey})")))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x")
    # the legend under the image: the view is a quarter of the page, a legend beside it would squeeze it
    fig.update_layout(showlegend=True, legend=dict(orientation="h", x=0, xanchor="left", y=-0.02, yanchor="top",
                                                   title_text="bright = traced:", title_side="top"),
                      margin=dict(l=0, r=0, b=0), plot_bgcolor="white", height=520)
    return style.apply(fig, title_text="Selected pixels and colour clusters", source="Zatel Fig. 3")

