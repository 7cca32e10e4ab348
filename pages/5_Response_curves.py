"""Response curves page: the model's spline along one parameter with a confidence band and the training
points (Stargazer Fig. 7), and a two-parameter interaction heatmap. Curves are drawn from the
workspace's current model and the results it was fitted on."""

from __future__ import annotations

import streamlit as st

from dashboard import frame as ui
from gpudse_core import GpudseError
from gpudse_core.explore.scan import interaction_grid, response_curve
from gpudse_core.explore.terms import model_parameters
from gpudse_core.model.learners import curve as learner_curve
from gpudse_core.model.registry import model_kind
from gpudse_core.report import figures

w = ui.page("Response curves")
st.title("Response curves")
space_sv, model_sv = ui.need("space", "model")
space, model = space_sv.value, model_sv.value
data = w.input_of(model_sv, "results").value.table
stepwise = hasattr(model, "bases")
reads = model_parameters(model)  # a derived quantity (total_cus) counts as the parameters it is computed from
used = [p for p in space.parameter_names if p in reads]
if not used:
    st.info(f"The model ({ui.plain(model_sv.origin)}) uses no parameter of the design space, so its prediction is the "
            "same everywhere: there is no curve to draw.", icon=":material/info:")
    st.stop()
st.caption(f"Model version {model_sv.version} of {ui.plain(model.response)} "
           f"({ui.plain(' + '.join(model.terms) if stepwise else model.summary())}). Parameters the model does not "
           "use have no "
           f"effect on its predictions.")
st.markdown("**Hold the other parameters at**")
base = ui.base_point(space, "rc")
c1, c2 = st.columns(2)
x = c1.selectbox("Curve along", used)
unit = space.parameter(x).unit
param = space.parameter(x)
label = ui.chart_text(f"{param.display}" + (f" ({unit})" if unit else ""))
try:
    if stepwise:
        curve = response_curve(model, data, x, base, space, points=120)
        fig = figures.response_curve(curve, x, label, model.response, data, parameter=param, unit=None)
    else:  # a learner: its prediction at the legal values (no confidence band)
        curve = learner_curve(model, x, list(param.values), base)
        fig = figures.response_curves({model_kind(model): curve}, x, label, model.response, parameter=param)
except GpudseError as e:
    st.error(ui.plain(e))
    st.stop()
apps_sv = ui.analysis("app_models")  # an AppModels, or None (a damaged one is named)
by_app = apps_sv.value.models if apps_sv.ok and apps_sv.value is not None else {}
app_col = w.input_of(model_sv, "results").value.app_column
if stepwise and by_app and app_col and st.checkbox("One curve per application instead (Stargazer Fig. 7)", value=False):
    curves = {}
    for name, m in by_app.items():
        if x in m.bases:
            part = data[data[app_col].astype(str) == name]
            try:
                curves[name] = response_curve(m, part, x, base, space, points=120)
            except GpudseError as e:
                st.caption(f"{ui.plain(name)}: {ui.plain(e)}")
    if curves:
        fig = figures.response_curves(curves, x, label, model.response, parameter=param)
ui.chart(fig)
has_line = any("lines" in (getattr(t, "mode", None) or "") for t in fig.data)
if stepwise and has_line:
    st.caption("Markers: the model at the parameter's legal values; the dashed line between them is the model where "
               "no design exists. " + ui.help_for("response-curve"))
elif stepwise:  # a categorical parameter (e.g. simd with three values): a level each, no line between
    st.caption(f"{ui.plain(param.display)} enters the model as categories (one coefficient per value), so the model "
               "has no "
               "curve between its values: a marker per value with its 95 % interval as a bar. "
               + ui.help_for("response-curve"))
else:  # a learner has no standard errors and no per-application models
    st.caption(f"The {model.summary()}'s prediction at the parameter's legal values, the others held as chosen "
               "above. A learner has no standard errors, so there is no confidence band; fit the stepwise model "
               "for the band and for one curve per application.")

st.subheader("Interaction of two parameters")
if len(used) < 2:
    st.info("The model uses one parameter only: there is no interaction to show.", icon=":material/info:")
    st.stop()
c1, c2 = st.columns(2)
xa = c1.selectbox("x", used, index=0, key="ia_x")
ya = c2.selectbox("y", [p for p in used if p != xa], key="ia_y")
xs, ys, z = interaction_grid(model, xa, ya, base, space, legal_only=True)  # one cell per design: no fill between
ui.chart(figures.interaction_heatmap(xs, ys, z, space.parameter(xa), space.parameter(ya), model.response,
                                     legal_only=True))
