"""gpudse dashboard — entry point and home page. Run: streamlit run app.py

The other pages live in ``pages/`` (Streamlit's multipage layout). Every page is thin: it reads
widgets, calls ``gpudse_core`` and draws with Plotly. This page says what the tool does, where the
user is in the workflow, and offers the built-in example the dashboard opens on.
"""

from __future__ import annotations

import streamlit as st

import ui
from gpudse_core import GpudseError

ui.page("Home")

st.title("gpudse — GPU design space exploration")
st.markdown(
    """
GPU simulators are five to six orders of magnitude slower than hardware, and a design space of ten
parameters has a million points. gpudse samples a few hundred design points uniformly at random,
simulates them in parallel, and fits a regression model that predicts every other point
(**Stargazer**: forward-stepwise natural cubic splines with pairwise interactions; **Lee & Brooks**:
restricted cubic splines, F-tests, residual checks, error CDFs). For ray-tracing workloads it picks
representative pixels from a per-pixel cost heatmap (**Zatel**).
"""
)

st.subheader("Where you are")
cols = st.columns(len(ui.STAGES))
for col, stage in zip(cols, ui.workflow()):
    with col.container(border=True):
        st.markdown(f"{stage.icon} **{stage.title}**")
        st.caption(stage.status)
        if stage.page:
            st.page_link(stage.page, label="Open", icon=":material/arrow_forward:")

st.subheader("Built-in example")
st.write(
    "The dashboard opened on the Stargazer design space (Table 2: 10 parameters, 933,120 designs, "
    f"Table 3 as the fixed baseline) with {ui.EXAMPLE_SAMPLES} points sampled uniformly at random "
    f"(seed {ui.EXAMPLE_SEED}), as in the paper's experiments, simulated with the built-in analytical model of "
    f"{ui.EXAMPLE_KERNEL} (1 % measurement noise) and fitted with Stargazer's stepwise regression. Every page "
    "works on it; replace any step with your own."
)
if st.button("Reset to the built-in example", type="primary", icon=":material/restart_alt:"):
    ui.load_example()
    st.rerun()

st.subheader("Projects and reports")
c1, c2, c3 = st.columns(3)
with c1:
    st.download_button("Save the project (zip)", ui.project_zip(), file_name="gpudse-project.zip",
                       mime="application/zip", icon=":material/download:",
                       help="the space, samples, results, model and settings")
with c2:
    up = st.file_uploader("Load a project", type=["zip"], key="project_upload")
    if up is not None and st.button("Load this project", icon=":material/upload:"):
        try:
            ui.load_project_zip(up.getvalue(), up.name)
        except GpudseError as e:
            st.error(f"{e}. Your current work is unchanged.")
        else:
            st.success(f"Loaded {up.name}.")
            st.rerun()
with c3:
    if st.button("Prepare an HTML report", icon=":material/description:",
                 help="one file with the tables and interactive charts; opens without a server"):
        st.session_state.report_html = ui.report_html()
    if st.session_state.get("report_html"):
        st.download_button("Download the report", st.session_state.report_html, file_name="gpudse-report.html",
                           mime="text/html")
