"""Accuracy page: sample-train-test validation (Stargazer §7.3, Figs. 5–6; Lee & Brooks Table 6, error CDFs),
model diagnostics (predicted vs observed, residuals, Q-Q, variable clustering) and, with the built-in
simulator, the true error over the entire space."""

from __future__ import annotations

import numpy as np
import plotly.figure_factory as ff
import plotly.graph_objects as go
import streamlit as st

import ui
from gpudse_core import GpudseError
from gpudse_core.report import figures
from gpudse_core.model.inference import qq_points, residual_table, variable_clusters
from gpudse_core.model.validation import MODELS, Cancelled, ecdf, validate

ui.page("Accuracy")
st.title("Accuracy")
model = st.session_state.get("model")
results = st.session_state.get("results")
if model is None or results is None:
    st.info("Fit a model first.")
    st.page_link("pages/4_Stepwise_fit.py", label="Stepwise fit →", icon=":material/stacked_line_chart:")
    st.stop()
space = st.session_state.space
data = st.session_state.get("model_data", results)
params = [p for p in space.parameter_names if p in data.columns]

tab_val, tab_diag, tab_true = st.tabs(["Validation", "Diagnostics", "True error over the space"])
with tab_val:
    n = len(data)
    with st.form("validate"):
        c1, c2, c3 = st.columns(3)
        test_size = c1.number_input("Test points per repeat", 10, max(10, n - 20), min(100, max(10, n // 3)))
        max_train = max(20, n - int(test_size))
        sizes = c1.multiselect("Training sizes N", [s for s in (20, 30, 60, 90, 120, 150, 200, 250, 300, 400, 600)
                                                   if s <= max_train], default=[s for s in (30, 60, 120)
                                                                                if s <= max_train][:3] or [20])
        repeats = c2.slider("Repeats", 1, 10, 3)
        models = c2.multiselect("Models", [m for m in MODELS if m != "application"],
                                default=["stepwise", "fixed", "boosting"])
        go_val = c3.form_submit_button("Validate", type="primary")
        c3.caption("Stop to cancel: the page keeps your other work.")
    if go_val:
        bar = st.progress(0.0)
        try:
            res = validate(data[params + [model.response]], model.response, params, train_sizes=sizes,
                           test_size=int(test_size), repeats=repeats, models=models, transform=model.transform,
                           progress=lambda d, t, msg: bar.progress(d / t, text=f"{d}/{t} fits ({msg})"))
            st.session_state.validation = res
        except (GpudseError, Cancelled) as e:
            st.error(str(e))
    res = st.session_state.get("validation")
    if res is not None:
        table = res.summary()
        st.markdown("**Relative error (%), pooled over repeats (Lee & Brooks Table 6; Stargazer §7.3)**")
        shown = table.copy()
        for c in ("mean", "median", "p75", "p98", "max", "min", "q1", "q3"):
            shown[c] = 100 * shown[c]
        st.dataframe(shown.style.format({c: "{:.2f}" for c in ("mean", "median", "p75", "p98", "max", "min", "q1",
                                                                 "q3")}), width="stretch", hide_index=True)
        c1, c2 = st.columns(2)
        c1.plotly_chart(figures.error_cdf(res), width="stretch")
        c2.plotly_chart(figures.error_trend(res), width="stretch")
        if {"stepwise", "fixed"} <= set(res.models):
            bars = go.Figure([go.Bar(x=[str(n) for n in res.train_sizes],
                                     y=[100 * table[(table.model == m) & (table.train_size == n)]["mean"].iloc[0]
                                        for n in res.train_sizes], name=m) for m in ("stepwise", "fixed")])
            bars.update_layout(barmode="group", xaxis_title="training points N", yaxis_title="mean relative error (%)",
                               height=320, title="Automated vs fixed three-factor model (Stargazer Fig. 6)",
                               margin=dict(t=50))
            st.plotly_chart(bars, width="stretch")

with tab_diag:
    try:
        resid = residual_table(model, data)
    except GpudseError as e:
        st.error(str(e))
        st.stop()
    c1, c2 = st.columns(2)
    c1.plotly_chart(figures.predicted_vs_observed(model, data), width="stretch")
    rvf = go.Figure(go.Scatter(x=resid.fitted, y=resid.residual, mode="markers", marker=dict(size=5)))
    rvf.update_layout(xaxis_title=f"fitted ({model.transform} scale)", yaxis_title="residual", height=360,
                      title="Residuals vs fitted (Lee & Brooks §2.5)", margin=dict(t=50))
    c2.plotly_chart(rvf, width="stretch")
    c1, c2 = st.columns(2)
    qq = qq_points(resid.residual.to_numpy())
    qfig = go.Figure([go.Scatter(x=qq.theoretical, y=qq["sample"], mode="markers", marker=dict(size=5), name="residuals")])
    q1, q3 = np.quantile(qq["sample"], [0.25, 0.75])
    t1, t3 = np.quantile(qq.theoretical, [0.25, 0.75])
    slope = (q3 - q1) / (t3 - t1)
    qfig.add_trace(go.Scatter(x=qq.theoretical, y=q1 + slope * (qq.theoretical - t1), mode="lines", name="quartile line"))
    qfig.update_layout(xaxis_title="normal quantiles", yaxis_title="residual quantiles", height=360,
                       title="Normal Q-Q (Lee & Brooks Fig. 8)", margin=dict(t=50))
    c1.plotly_chart(qfig, width="stretch")
    pick = c2.selectbox("Residuals against", [p for p in model.bases])
    rvp = go.Figure(go.Box(x=resid[pick].astype(str), y=resid.residual))
    rvp.update_layout(xaxis_title=pick, yaxis_title="residual", height=320, margin=dict(t=20))
    c2.plotly_chart(rvp, width="stretch")
    if len(params) >= 2:
        vc = variable_clusters(data, params)
        dend = ff.create_dendrogram(np.zeros((len(params), 1)), labels=vc.labels,
                                    linkagefun=lambda _: vc.linkage, distfun=lambda x: np.zeros(1))
        dend.update_layout(height=340, yaxis_title="1 − Spearman ρ²",
                           title="Variable clustering (Lee & Brooks Fig. 1; Hmisc varclus)", margin=dict(t=50))
        st.plotly_chart(dend, width="stretch")

with tab_true:
    origin = st.session_state.get("results_origin", "")
    if "built-in simulator" not in origin and "analytical" not in origin:
        st.info("The true error over the entire space is available when the results come from the built-in simulator.")
    else:
        from gpudse_core.sim.simulator import KERNELS, whole_space_errors

        kernel = next((k for k in KERNELS if k in origin), None) or st.selectbox("Application", list(KERNELS))
        if st.button(f"Compute the error at all {space.size:,} points", type="primary"):
            with st.spinner("Predicting and simulating the entire space…"):
                errs = whole_space_errors(model, space, kernel)
            st.session_state.true_errors = errs
        errs = st.session_state.get("true_errors")
        if errs is not None:
            m = st.columns(4)
            m[0].metric("Points", f"{errs.size:,}")
            m[1].metric("Mean error", f"{100 * errs.mean():.2f} %")
            m[2].metric("Median error", f"{100 * np.median(errs):.2f} %")
            m[3].metric("Max error", f"{100 * errs.max():.1f} %")
            x, y = ecdf(100 * errs[:: max(1, errs.size // 20000)])
            fig = go.Figure(go.Scatter(x=x, y=y, mode="lines"))
            fig.update_layout(xaxis_title="relative error (%)", yaxis_title="fraction of the space", height=360,
                              title="True error over the entire space", margin=dict(t=50))
            st.plotly_chart(fig, width="stretch")
