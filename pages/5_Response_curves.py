"""Response curves page: the model's spline along one parameter with a confidence band and the training
points (Stargazer Fig. 7), and a two-parameter interaction heatmap."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

import ui
from gpudse_core import GpudseError
from gpudse_core.report import figures
from gpudse_core.explore.scan import interaction_grid, response_curve

ui.page("Response curves")
st.title("Response curves")
model = ui.require_model()
space = st.session_state.space
data = st.session_state.get("model_data", st.session_state.get("results"))
used = [p for p in space.parameter_names if p in model.bases]
st.caption(f"Model of {model.response} ({' + '.join(model.terms)}). Parameters the model does not use have no "
           f"effect on its predictions.")
st.markdown("**Hold the other parameters at**")
base = ui.base_point(space, "rc")
c1, c2 = st.columns(2)
x = c1.selectbox("Curve along", used)
unit = space.parameter(x).unit
try:
    curve = response_curve(model, data, x, base, space, points=120)
except GpudseError as e:
    st.error(str(e))
    st.stop()
fig = figures.response_curve(curve, x, f"{space.parameter(x).display}" + (f" ({unit})" if unit else ""),
                             model.response, data)
by_app = st.session_state.get("models_by_app") or {}
if by_app and st.checkbox("Overlay one curve per application", value=True):
    from gpudse_core.explore.scan import response_curve as curve_of

    for name, m in by_app.items():
        if x in m.bases:
            part = data[data[ui.application_column(data, space)] == name] if ui.application_column(data, space) else data
            c = curve_of(m, part, x, base, space, points=120)
            fig.add_scatter(x=c[x], y=c.predicted, mode="lines", name=f"{name}", line=dict(dash="dash"))
st.plotly_chart(fig, width="stretch")

st.subheader("Interaction of two parameters")
c1, c2 = st.columns(2)
xa = c1.selectbox("x", used, index=0, key="ia_x")
ya = c2.selectbox("y", [p for p in used if p != xa] or used, key="ia_y")
if xa != ya:
    xs, ys, z = interaction_grid(model, xa, ya, base, space, points=40)
    heat = go.Figure(go.Heatmap(x=[str(v) for v in xs] if xs.dtype == object else xs,
                                y=[str(v) for v in ys] if ys.dtype == object else ys, z=z, colorscale="Turbo",
                                colorbar=dict(title=model.response)))
    heat.update_layout(xaxis_title=space.parameter(xa).display, yaxis_title=space.parameter(ya).display, height=430,
                       margin=dict(t=20))
    st.plotly_chart(heat, width="stretch")
