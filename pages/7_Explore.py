"""Explore page: predict every point of the space, the best designs, a Pareto front against a cost, and
one-at-a-time sensitivity from a chosen design.

The whole-space scan is the workspace's ``scan`` analysis, run as a job (progress, Stop) from the
current model and space; after a new model or space it is shown as out of date with Recompute,
never as the current best designs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from dashboard import work as ui_work
from gpudse_core.explore.scan import sensitivity
from gpudse_core.report import figures

w = ui.page("Explore")
st.title("Explore the design space")
space_sv, model_sv = ui.need("space", "model")
space, model = space_sv.value, model_sv.value
c1, c2, c3 = st.columns(3)
goal = c1.radio("Best designs have the", ["lowest prediction", "highest prediction"],
                help=f"{ui.plain(model.response)}: lower is better for runtimes, higher for IPC")
k = c2.slider("How many best designs", 5, 100, ui_work.EXAMPLE_SCAN["k"])
numeric = [p.name for p in space.parameters if p.kind == "numeric"]
cost_name = c3.selectbox("Cost for the Pareto front", ["levels"] + numeric, format_func=lambda c: {
    "levels": "sum of levels (a budget)"}.get(c, space.parameter(c).display if c in numeric else c))
request = {"k": int(k), "maximize": goal.startswith("highest"), "cost": cost_name}

running = ui_jobs.job_panel(w, "scan", "The scan of the design space")
sv = w.get("scan")
if sv.value is not None and "best" not in sv.value:  # stored by an earlier version of this page
    sv = w.get("no-scan")


def compute(req: dict = request) -> None:
    ui_work.start_scan(w, req)


label = f"Find the best of all {ui.fmt_count(space.size)} designs"
if sv.value is None or (running and not sv.ok):  # nothing yet, or an out-of-date scan being replaced
    if not running and st.button(label, type="primary", disabled=not w.writable) and ui.guarded(compute):
        st.rerun()
elif ui.analysis_banner(sv, lambda: compute(dict(sv.value.get("request", request))), key="fix_scan"):
    value = sv.value
    req = value.get("request", {})
    if req != request and not running:
        c1, c2 = st.columns([4, 1], vertical_alignment="center")
        c1.info(f"Shown: the scan for {ui_work.describe_scan(req)}. The settings above ask for "
                f"{ui_work.describe_scan(request)}.", icon=":material/info:")
        if c2.button("Recompute for these settings", disabled=not w.writable) and ui.guarded(compute):
            st.rerun()
    goal_word = "highest" if req.get("maximize") else "lowest"
    designs = value["feasible"] if value.get("feasible") is not None else value["space_size"]
    best = value["best"]
    how = {"exact": "cells of the parameters the model uses enumerated",
           "stream": "designs streamed through the model", "predict": "designs predicted one by one"}
    st.markdown(f"**The {len(best)} {goal_word} predicted {ui.plain(model.response)} of {ui.fmt_count(designs)} designs** "
                f"(model version {model_sv.version}; exact: {ui.fmt_count(value['evaluated'])} "
                f"{how.get(value['method'], value['method'] + ' scan')})")
    for note in value.get("notes", []):
        st.caption(f":material/info: {ui.plain(note)}")
    best = best[["predicted"] + [c for c in best.columns if c != "predicted"]]
    ui.table(best, units=ui.units(space) | {"predicted": ui.response_unit(model.response)})
    front = value.get("pareto")
    if front is not None and len(front):
        cost_label = ("sum of parameter levels" if req.get("cost") == "levels"
                      else space.parameter(req["cost"]).display if req.get("cost") in space.parameter_names
                      else str(req.get("cost")))
        ui.chart(figures.pareto(front, cost_label, model.response, value.get("cloud")))
        st.caption(ui.help_for("pareto"))

st.subheader("One parameter at a time")
base = ui.base_point(space, "ex")
sens = sensitivity(model, base, space)
ref = float(model.predict(pd.DataFrame([base]))[0])
st.metric(f"Predicted {ui.plain(model.response)} at this design", ui.fmt_num(ref, ui.response_unit(model.response)))
span = sens.groupby("parameter").change.agg(["min", "max"]).reindex(space.parameter_names)
span.index = [space.parameter(p).display for p in span.index]  # the names the sliders above use
ui.chart(figures.sensitivity(span, model.response))
st.caption(ui.help_for("sensitivity"))
