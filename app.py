"""gpudse dashboard — entry point and home page. Run: streamlit run app.py

The other pages live in ``pages/`` (Streamlit's multipage layout). Every page is thin: it reads
widgets, calls ``gpudse_core`` and draws with Plotly. This page says what the tool does, where the
user is in the workflow, and offers the built-in example the dashboard opens on.
"""

from __future__ import annotations

import streamlit as st

import ui

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
    f"(seed {ui.EXAMPLE_SEED}), as in the paper's experiments."
)
if st.button("Reset to the built-in example", type="primary", icon=":material/restart_alt:"):
    ui.load_example()
    st.rerun()
