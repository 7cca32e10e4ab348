"""Plotly figures shared by the dashboard pages and the standalone HTML report (one implementation)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..model.stepwise import StepwiseModel
from ..model.validation import ValidationResult, ecdf


def contributions(model: StepwiseModel, models: dict[str, StepwiseModel] | None = None) -> go.Figure:
    """Stargazer Fig. 3: each term's R² gain in selection order, one stacked bar per model/application."""
    models = models or {model.response: model}
    fig = go.Figure()
    for name, m in models.items():
        for term, gain in m.contributions():
            fig.add_trace(go.Bar(x=[name], y=[gain], name=term, legendgroup=term, showlegend=True,
                                 hovertemplate=f"{term}: %{{y:.3f}}<extra>{name}</extra>"))
    fig.update_layout(barmode="stack", yaxis_title="contribution to R²", yaxis_range=[0, 1], height=380,
                      title="Each term's contribution to R² in selection order (Stargazer Fig. 3)", margin=dict(t=50))
    return fig


def response_curve(curve: pd.DataFrame, param: str, label: str, response: str,
                   data: pd.DataFrame | None = None) -> go.Figure:
    fig = go.Figure()
    x = list(curve[param])
    fig.add_trace(go.Scatter(x=x + x[::-1], y=list(curve.upper) + list(curve.lower)[::-1], fill="toself",
                             fillcolor="rgba(76,120,168,0.2)", line=dict(width=0), name="95% band", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=curve[param], y=curve.predicted, mode="lines", name="model",
                             line=dict(color="#4c78a8", width=3)))
    if data is not None and response in data:
        fig.add_trace(go.Scatter(x=data[param], y=data[response], mode="markers", name="training points",
                                 marker=dict(size=5, color="rgba(228,87,86,0.45)")))
    fig.update_layout(xaxis_title=label, yaxis_title=response, height=430, margin=dict(t=40),
                      title="Response curve (Stargazer Fig. 7): the other parameters held fixed")
    return fig


def error_cdf(res: ValidationResult, n: int | None = None) -> go.Figure:
    n = n or max(res.train_sizes)
    fig = go.Figure()
    for m in res.models:
        x, y = ecdf(100 * res.errors[m][n])
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=m))
    fig.update_layout(xaxis_title="relative error (%)", yaxis_title="fraction of predictions", height=380,
                      title=f"Error CDF at N = {n} (Lee & Brooks Figs. 9, 12)", margin=dict(t=50))
    return fig


def error_trend(res: ValidationResult) -> go.Figure:
    table = res.summary()
    fig = go.Figure()
    for m in res.models:
        sub = table[table.model == m]
        fig.add_trace(go.Scatter(x=sub.train_size, y=100 * sub["mean"], mode="lines+markers", name=f"{m} mean"))
        fig.add_trace(go.Scatter(x=sub.train_size, y=100 * sub["max"], mode="lines", name=f"{m} max",
                                 line=dict(dash="dot")))
    fig.update_layout(xaxis_title="training points N", yaxis_title="relative error (%)", height=380,
                      yaxis_type="log", margin=dict(t=50),
                      title="Mean and max error vs training size (Stargazer Fig. 5; log scale)")
    return fig


def predicted_vs_observed(model: StepwiseModel, data: pd.DataFrame) -> go.Figure:
    obs = data[model.response].to_numpy(dtype=float)
    pred = model.predict(data)
    lo, hi = float(np.nanmin(obs)), float(np.nanmax(obs))
    fig = go.Figure([go.Scatter(x=obs, y=pred, mode="markers", marker=dict(size=5), name="points"),
                     go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x")])
    fig.update_layout(xaxis_title=f"observed {model.response}", yaxis_title=f"predicted {model.response}", height=360,
                      title="Predicted vs observed (training data)", margin=dict(t=50))
    return fig
