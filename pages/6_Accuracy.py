"""Accuracy page: sample-train-test validation (Stargazer §7.3, Figs. 5–6; Lee & Brooks Table 6, error CDFs),
model diagnostics (predicted vs observed, residuals, Q-Q, variable clustering) and, with the built-in
simulator, the true error over the entire space."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from dashboard import work as ui_work
from dashboard import compare as ui_compare
from dashboard import state as ui_state
from gpudse_core import GpudseError
from gpudse_core.model.inference import qq_points, residual_table, variable_clusters
from gpudse_core.model.metrics import STATS
from gpudse_core.model.validation import MODELS
from gpudse_core.report import figures

w = ui.page("Accuracy")
st.title("Accuracy")
space_sv, results_sv, model_sv = ui.need("space", "results", "model")
space, model = space_sv.value, model_sv.value
fitted_on = w.input_of(model_sv, "results")
data = fitted_on.value.table
params = [p for p in space.parameter_names if p in data.columns]
st.caption(f"Model version {model_sv.version} ({ui.plain(model_sv.origin)}), fitted on "
           f"{ui.fmt_count(len(data), 'results')} ({ui.plain(fitted_on.origin)}).")

tab_val, tab_diag, tab_true, tab_cmp = st.tabs(["Validation", "Diagnostics", "True error over the space",
                                                "Runs side by side"], **ui_state.bound("tab"))  # ?tab= in links
with tab_val:
    st.caption("Sample-train-test (Stargazer §7.3, Lee & Brooks §5): for each training size N, draw N training "
               "points and a disjoint test set from the results, fit each model on the training points and "
               "measure its relative error on the test points; repeat and pool.")
    n = len(data)
    dflt = ui_work.EXAMPLE_VALIDATION
    # after a reload the form shows what the table below was computed with (a current validation only: an
    # out-of-date one was computed from other results, whose size its test set may not fit)
    done = ui.analysis("validation").value if w.get("validation").ok else None
    if done is not None and hasattr(done, "repeats"):
        dflt = {**dflt, "train_sizes": list(done.train_sizes), "test_size": int(done.test_size),
                "repeats": int(done.repeats),
                "models": [m for m in done.models if m in MODELS and m != "application"] or dflt["models"]}

    def rerun_validation() -> None:  # an interrupted validation, again, with the settings the form shows
        ss = st.session_state
        ui_work.start_validation_job(w, {"train_sizes": sorted(int(s) for s in ss["val_sizes"]),
                                         "test_size": int(ss["val_test_size"]), "repeats": int(ss["val_repeats"]),
                                         "models": list(ss["val_models"])})

    running = ui_jobs.job_panel(w, "validation", "Validation", rerun=rerun_validation,
                                rerun_label="Validate again with the settings below")
    with st.form("validate"):
        c1, c2, c3 = st.columns(3)
        test_size = c1.number_input("Test points per repeat", 10, max(10, n - 20),
                                    min(dflt["test_size"], max(10, (n - 20) if done is not None else n // 3)),
                                    key="val_test_size")
        max_train = max(20, n - int(test_size))
        options = [s for s in (20, 30, 60, 90, 120, 150, 200, 250, 300, 400, 600) if s <= max_train]
        sizes = c1.multiselect("Training sizes N", options, default=[s for s in dflt["train_sizes"] if s in options]
                               or options[:1], key="val_sizes")
        repeats = c2.slider("Repeats", 1, 10, min(10, max(1, dflt["repeats"])), key="val_repeats")
        models = c2.multiselect("Models", [m for m in MODELS if m != "application"], default=dflt["models"],
                                key="val_models",
                                help="stepwise: Algorithm 1; fixed: Stargazer §7.4's three-factor model; "
                                     "regional: Lee & Brooks' S+R; forest, boosting, hybrid: beyond the papers. "
                                     + ui.help_for("sample-train-test"))
        go_val = c3.form_submit_button("Validate", type="primary", disabled=running or not w.writable)
        c3.caption("Runs in the background: a progress bar and Stop appear above; what was done is kept.")
    if go_val:
        request = {"train_sizes": sorted(int(s) for s in sizes), "test_size": int(test_size),
                   "repeats": int(repeats), "models": list(models)}
        if ui.guarded(lambda: ui_work.start_validation_job(w, request)):
            st.rerun()
    sv = ui.analysis("validation")  # a ValidationResult, or None (a damaged one is named)

    def recompute() -> None:
        old = sv.value
        ui_work.start_validation_job(w, {"train_sizes": list(old.train_sizes), "test_size": int(old.test_size),
                                         "repeats": int(old.repeats), "models": list(old.models)})

    if sv.value is None or (running and not sv.ok):  # nothing yet, or an out-of-date one being replaced
        if not running:
            st.info("No validation yet: choose the sizes and press Validate.", icon=":material/info:")
    elif ui.analysis_banner(sv, recompute, key="fix_validation"):
        res = sv.value
        table = res.summary().drop(columns=["p75"], errors="ignore")  # the same as q3: one column fewer to scroll
        repeats = "the repeats finished before Stop" if sv.partial else f"{res.repeats} repeats"
        st.markdown(f"**Relative error (%), pooled over {repeats}, {ui.fmt_count(res.test_size, 'test points')} "
                    "each (Lee & Brooks Table 6; Stargazer §7.3)**")
        pct = {c: "error" for c in STATS if c in table}  # below 0.0001 %: "< 0.0001 %", not 4.5 × 10⁻¹³ %
        ui.table(table.rename(columns={"train_size": "N"}), kinds=pct,  # no header cut to "extr…" at 1280 px
                 column_config={c: st.column_config.TextColumn(c, width="medium")
                                for c in ("extrapolated", "bounded", "nonfinite") if c in table})
        for note in res.notes:
            st.caption(f":material/info: {ui.plain(note)}")
        c1, c2 = st.columns(2)
        ui.chart(figures.error_cdf(res), c1, narrow=True)
        ui.chart(figures.error_trend(res), c2, narrow=True)
        if {"stepwise", "fixed"} <= set(res.models):
            ui.chart(figures.error_by_size(res))

with tab_diag:
    resid = None
    if not hasattr(model, "bases"):  # a learner: no coefficients, so no residual statistics of Lee & Brooks
        ui.chart(figures.predicted_vs_observed(model, data))
        st.caption("Residual plots, Q-Q and ANOVA are for the stepwise model; fit one on the Stepwise fit page.")
    else:
        head = ui.headline(w, model_sv)
        if head is not None and head.interpolates:  # residuals of an interpolating fit are numerical noise
            st.info(ui.plain(head.note), icon=":material/info:")
        else:
            try:
                resid = residual_table(model, data)
            except GpudseError as e:
                st.error(ui.plain(e))
    if resid is not None:
        c1, c2 = st.columns(2)
        ui.chart(figures.predicted_vs_observed(model, data), c1, narrow=True)
        ui.chart(figures.residuals_vs_fitted(resid, model.transform), c2, narrow=True)
        c1, c2 = st.columns(2)
        ui.chart(figures.qq_plot(qq_points(resid.residual.to_numpy())), c1, narrow=True)
        pick = c2.selectbox("Residuals against", [p for p in model.bases])
        ui.chart(figures.residuals_by(resid, pick, space.parameter(pick) if pick in space.parameter_names else None),
                 c2, narrow=True)
        if len(params) >= 2:
            ui.chart(figures.dendrogram(variable_clusters(data, params)))
            st.caption(ui.help_for("varclus"))

with tab_true:
    kernel = ui_work.results_kernel(w, fitted_on)
    if kernel is None:
        st.info("The true error over the entire space is available when the results come from the built-in "
                "simulator with one application (a campaign on the Simulations page, or the built-in example): "
                "it simulates every design point and compares the model's prediction.", icon=":material/info:")
    else:
        running = ui_jobs.job_panel(w, "true_error", "Simulating the whole space",
                                    rerun=lambda: ui_work.start_true_error(w, kernel), rerun_label="Run it again")
        sv = ui.analysis("true_error")  # a TrueError, or None (a damaged one is named)
        label = f"Compute the error at all {ui.fmt_count(space.size)} points ({kernel})"

        def compute() -> None:
            ui_work.start_true_error(w, kernel)

        if sv.value is not None and sv.value.kernel != kernel:
            # computed against another application: not an answer for these results, and said so
            st.warning(f"The true error computed earlier was against {ui.plain(sv.value.kernel)}; these results come "
                       f"from {ui.plain(kernel)}. Compute it again for them.", icon=":material/warning:")
            sv = None
        if sv is None or sv.value is None:
            if not running and st.button(label, type="primary", disabled=not w.writable) and ui.guarded(compute):
                st.rerun()
        elif ui.analysis_banner(sv, compute, key="fix_true_error"):
            errs = sv.value
            st.caption(f"Against the built-in simulator's **{ui.plain(errs.kernel)}** (the application the results "
                       f"were simulated with), at {ui.fmt_count(errs.points, 'design points')}.")
            m = st.columns(4)
            m[0].metric("Points", ui.fmt_count(errs.points))
            m[1].metric("Mean error", ui.fmt_pct(errs.mean))
            m[2].metric("Median error", ui.fmt_pct(errs.median))
            m[3].metric("Max error", ui.fmt_pct(errs.max))
            if errs.quantiles is not None:
                # the CDF through 1,001 quantiles, titled by the designs they summarise
                ui.chart(figures.space_error_cdf(np.asarray(errs.quantiles), designs=errs.points))

with tab_cmp:
    ui_compare.section(w, space)
