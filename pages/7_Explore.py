"""Explore page: predict every point of the space, the best designs, a Pareto front against a cost, and
one-at-a-time sensitivity from a chosen design.

The whole-space scan is the workspace's ``scan`` analysis, run as a job (progress, Stop) from the
current model and space; after a new model or space it is shown as out of date with Recompute,
never as the current best designs."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
import ui_jobs
from gpudse_core.explore.scan import sensitivity

w = ui.page("Explore")
st.title("Explore the design space")
space_sv, model_sv = ui.need("space", "model")
space, model = space_sv.value, model_sv.value
c1, c2, c3 = st.columns(3)
goal = c1.radio("Best designs have the", ["lowest prediction", "highest prediction"],
                help=f"{model.response}: lower is better for runtimes, higher for IPC")
k = c2.slider("How many best designs", 5, 100, ui_jobs.EXAMPLE_SCAN["k"])
numeric = [p.name for p in space.parameters if p.kind == "numeric"]
cost_name = c3.selectbox("Cost for the Pareto front", ["levels"] + numeric, format_func=lambda c: {
    "levels": "sum of parameter levels (a hardware budget)"}.get(c, space.parameter(c).display if c in numeric else c))
request = {"k": int(k), "maximize": goal.startswith("highest"), "cost": cost_name}

running = ui_jobs.job_panel(w, "scan", "Predicting every design")
sv = w.get("scan")


def compute(req: dict = request) -> None:
    ui_jobs.start_scan(w, req)


label = f"Predict all {ui.fmt_count(space.size)} design points"
if sv.value is None:
    if not running and st.button(label, type="primary", disabled=not w.writable):
        if ui.guarded(compute):
            st.rerun()
elif ui.analysis_banner(sv, lambda: compute(dict(sv.value.get("request", request))), key="fix_scan"):
    value = sv.value
    scan, req = value["scan"], value.get("request", {})
    if req != request and not running:
        c1, c2 = st.columns([4, 1], vertical_alignment="center")
        c1.info(f"Shown: the scan for {ui_jobs.describe_scan(req)}. The settings above ask for "
                f"{ui_jobs.describe_scan(request)}.", icon=":material/info:")
        if c2.button("Recompute for these settings", disabled=not w.writable):
            if ui.guarded(compute):
                st.rerun()
    goal_word = "highest" if req.get("maximize") else "lowest"
    st.markdown(f"**The {len(scan.best)} {goal_word} predicted {model.response} of "
                f"{ui.fmt_count(scan.points)} designs** (model version {model_sv.version})")
    st.dataframe(scan.best, width="stretch", hide_index=True)
    if len(scan.pareto):
        cost_label = ("sum of parameter levels" if req.get("cost") == "levels"
                      else space.parameter(req["cost"]).display if req.get("cost") in space.parameter_names
                      else str(req.get("cost")))
        fig = go.Figure()
        cloud = value.get("cloud")
        if cloud is not None and len(cloud):
            fig.add_trace(go.Scattergl(x=cloud.cost, y=cloud.predicted, mode="markers",
                                       name=f"{ui.fmt_count(len(cloud))} designs at random",
                                       marker=dict(size=3, color="rgba(120,120,120,0.25)")))
        fig.add_trace(go.Scatter(x=scan.pareto.cost, y=scan.pareto.predicted, mode="lines+markers",
                                 name="Pareto front", line=dict(color="#e45756", width=3)))
        fig.update_layout(xaxis_title=cost_label, yaxis_title=f"predicted {model.response}", height=420,
                          margin=dict(t=20))
        st.plotly_chart(fig, width="stretch")

st.subheader("One parameter at a time")
base = ui.base_point(space, "ex")
sens = sensitivity(model, base, space)
ref = float(model.predict(pd.DataFrame([base]))[0])
st.metric(f"Predicted {model.response} at this design", ui.fmt_num(ref))
span = sens.groupby("parameter").change.agg(["min", "max"]).reindex(space.parameter_names)
fig = go.Figure([go.Bar(y=span.index, x=100 * span["max"], orientation="h", name="largest increase"),
                 go.Bar(y=span.index, x=100 * span["min"], orientation="h", name="largest decrease")])
fig.update_layout(barmode="overlay", xaxis_title=f"change of predicted {model.response} (%) moving one parameter",
                  height=380, margin=dict(t=20))
st.plotly_chart(fig, width="stretch")
