"""Stepwise fit page: Stargazer Algorithm 1 with its trace built row by row (Table 1), then the per-term R²
contributions (Fig. 3), the equation, Lee & Brooks' ANOVA (Table 5) and the model as JSON."""

from __future__ import annotations

import streamlit as st

import ui
from gpudse_core import GpudseError
from gpudse_core.report import figures
from gpudse_core.model.inference import anova, coefficient_table
from gpudse_core.model.stepwise import CRITERIA, INTERACTION_FORMS, TRANSFORMS, StepwiseRegression

ui.page("Stepwise fit")
st.title("Stepwise regression (Stargazer Algorithm 1)")
results = st.session_state.get("results")
if results is None:
    st.info("Simulate or upload results first.")
    st.page_link("pages/3_Simulations.py", label="Simulations →", icon=":material/memory:")
    st.stop()
space = st.session_state.space
numeric = [c for c in results.columns if results[c].dtype.kind in "if" and c not in space.parameter_names]
params_all = [p for p in space.parameter_names if p in results.columns]

with st.form("fit"):
    c1, c2, c3, c4 = st.columns(4)
    default_resp = st.session_state.get("results_response", numeric[0] if numeric else None)
    response = c1.selectbox("Response", numeric, index=numeric.index(default_resp) if default_resp in numeric else 0)
    transform = c1.selectbox("Transform", TRANSFORMS, index=TRANSFORMS.index("log"),
                             help="log or sqrt stabilise the variance (Lee & Brooks); predictions are back-transformed")
    criterion = c2.selectbox("Criterion", CRITERIA, help="adjr2: Stargazer's adjusted R²")
    compare = c2.selectbox("Gain measured against", ["r2", "adj_r2"], format_func=lambda v: {
        "r2": "current R² (Algorithm 1)", "adj_r2": "current adjusted R²"}[v])
    theta = c3.number_input("θ (add a parameter)", value=0.01, step=0.001, format="%.4f")
    phi = c3.number_input("φ (add an interaction)", value=0.01, step=0.001, format="%.4f")
    knots = c4.slider("Knots per spline (k)", 3, 7, 4)
    placement = c4.selectbox("Knot placement", ["even", "quantile"], help="even: Stargazer; quantile: Lee & Brooks")
    interactions = c4.selectbox("Interactions", INTERACTION_FORMS, index=INTERACTION_FORMS.index("restricted"))
    params = st.multiselect("Parameters", params_all, default=params_all)
    app_col = ui.application_column(results, space)
    per_app = bool(app_col) and st.checkbox(f"Also fit one model per {app_col} (a bar each in the contribution "
                                            f"chart, Stargazer Fig. 3)", value=True)
    go_fit = st.form_submit_button("Fit", type="primary")

trace_box = st.empty()
if go_fit:
    est = StepwiseRegression(response=response, params=params, theta=theta, phi=phi, criterion=criterion,
                             compare=compare, knots=knots, knot_placement=placement, interactions=interactions,
                             response_transform=transform)
    rows = []
    try:
        for step in est.iter_fit(results[params + [response]]):
            rows.append(step.to_dict())
            trace_box.dataframe(ui.trace_table(rows, params), width="stretch")
    except GpudseError as e:
        st.error(f"{e}. The previous model is kept.")
    else:
        st.session_state.model = est.model_
        st.session_state.model_data = results
        st.session_state.models_by_app = None
        if per_app:
            by_app = {}
            for app, part in results.groupby(app_col):
                try:
                    by_app[str(app)] = StepwiseRegression(**{**est.get_params(), "params": [
                        p for p in params if part[p].nunique() > 1]}).fit(part[params + [response]]).model_
                except GpudseError as e:
                    st.warning(f"{app_col} {app}: {e}")
            st.session_state.models_by_app = by_app

model = st.session_state.get("model")
if model is None:
    st.info("Press Fit to run the stepwise search.")
    st.stop()
if not go_fit:
    trace_box.dataframe(ui.trace_table(model.trace, list(model.settings.get("params") or params_all)),
                        width="stretch")
data = st.session_state.get("model_data", results)
m = st.columns(4)
m[0].metric("R²", f"{model.r2:.4f}")
m[1].metric("Adjusted R²", f"{model.adj_r2:.4f}")
m[2].metric("Terms", len(model.terms))
m[3].metric("Coefficients", len(model.coefficients))

fig = figures.contributions(model, st.session_state.get("models_by_app") or None)
c1, c2 = st.columns([1, 2])
c1.plotly_chart(fig, width="stretch")
with c2:
    st.markdown("**The fitted equation**")
    st.code(model.equation(digits=5), language=None, wrap_lines=True)
try:
    table = anova(model, data)
    st.markdown("**ANOVA: F-tests pooling every term that involves a predictor (Lee & Brooks Table 5, rms::anova)**")
    st.dataframe(table.style.format({"partial_ss": "{:.4g}", "ms": "{:.4g}", "F": "{:.2f}", "P": "{:.4f}"}),
                 width="stretch", hide_index=True)
    with st.expander("Coefficients with t-tests"):
        st.dataframe(coefficient_table(model, data), width="stretch", hide_index=True)
except GpudseError as e:
    st.warning(f"Statistics unavailable: {e}")
st.download_button("Model (JSON)", model.to_json(), file_name="model.json", mime="application/json")
