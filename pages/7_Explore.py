"""Explore page: predict every point of the space, the best designs, a Pareto front against a cost, and
one-at-a-time sensitivity from a chosen design."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from gpudse_core import GpudseError
from gpudse_core.explore.scan import predict_space, sensitivity

ui.page("Explore")
st.title("Explore the design space")
model = ui.require_model()
space = st.session_state.space
c1, c2, c3 = st.columns(3)
goal = c1.radio("Best designs have the", ["lowest prediction", "highest prediction"],
                help=f"{model.response}: lower is better for runtimes, higher for IPC")
k = c2.slider("How many best designs", 5, 100, 20)
cost_options = ["sum of parameter levels (a hardware budget)"] + [p.name for p in space.parameters if p.kind == "numeric"]
cost_name = c3.selectbox("Cost for the Pareto front", cost_options)
maximize = goal.startswith("highest")


def cost_fn(frame):
    if cost_name in frame.columns:
        return frame[cost_name].to_numpy(dtype=float)
    total = np.zeros(len(frame))
    for p in space.parameters:
        if p.kind == "numeric":
            pos = np.searchsorted(np.sort(np.asarray(p.values, dtype=float)), frame[p.name].to_numpy(dtype=float))
            total += pos / max(1, p.size - 1)
    return total


@st.cache_data(show_spinner=False, max_entries=4)
def scan_space(model_json: str, space_json: str, cost_name: str, k: int, maximize: bool):
    """Cached per model, space and request: a second visit (or a second person) gets it at once."""
    from gpudse_core.space.design import parse_space_text
    from gpudse_core.model.stepwise import StepwiseModel

    m = StepwiseModel.from_dict(json.loads(model_json))
    sp = parse_space_text(space_json, source="space", fmt="json")
    bar = st.progress(0.0)
    out = predict_space(m, sp, cost=cost_fn, k=k, maximize=maximize,
                        progress=lambda d, t: bar.progress(d / t, text=f"{d:,} of {t:,} points"))
    bar.empty()
    return out


if st.button(f"Predict all {space.size:,} design points", type="primary"):
    try:
        st.session_state.scan = scan_space(model.to_json(), space.to_json(), cost_name, k, maximize)
    except GpudseError as e:
        st.error(str(e))
scan = st.session_state.get("scan")
if scan is not None:
    st.markdown(f"**The {len(scan.best)} best of {scan.points:,} designs** ({model.response}, predicted)")
    st.dataframe(scan.best, width="stretch", hide_index=True)
    if len(scan.pareto):
        fig = go.Figure()
        if scan.predictions is not None:
            s = scan.predictions.sample(min(20_000, len(scan.predictions)), random_state=0)
            fig.add_trace(go.Scattergl(x=s.cost, y=s.predicted, mode="markers", name="designs (sample)",
                                       marker=dict(size=3, color="rgba(120,120,120,0.25)")))
        fig.add_trace(go.Scatter(x=scan.pareto.cost, y=scan.pareto.predicted, mode="lines+markers", name="Pareto front",
                                 line=dict(color="#e45756", width=3)))
        fig.update_layout(xaxis_title=cost_name, yaxis_title=f"predicted {model.response}", height=420,
                          margin=dict(t=20))
        st.plotly_chart(fig, width="stretch")

st.subheader("One parameter at a time")
base = ui.base_point(space, "ex")
sens = sensitivity(model, base, space)
ref = float(model.predict(pd.DataFrame([base]))[0])
st.metric(f"Predicted {model.response} at this design", f"{ref:,.4g}")
span = sens.groupby("parameter").change.agg(["min", "max"]).reindex(space.parameter_names)
fig = go.Figure([go.Bar(y=span.index, x=100 * span["max"], orientation="h", name="largest increase"),
                 go.Bar(y=span.index, x=100 * span["min"], orientation="h", name="largest decrease")])
fig.update_layout(barmode="overlay", xaxis_title=f"change of predicted {model.response} (%) moving one parameter",
                  height=380, margin=dict(t=20))
st.plotly_chart(fig, width="stretch")
