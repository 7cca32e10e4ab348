"""Stepwise fit page: Stargazer Algorithm 1 with its trace built row by row (Table 1), then the per-term R²
contributions (Fig. 3), the equation, Lee & Brooks' ANOVA (Table 5) and the model as JSON.

The model is the workspace's model stage: a fit stores a new version computed from the current
results, or, when its settings and data equal a kept version's, makes that version current again
(gpudse_core.workspace.fits); when the results change, the page says so and offers the refit instead of showing the old
model as current."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from dashboard import work as ui_work
from dashboard import replay as ui_replay
from gpudse_core import GpudseError
from gpudse_core.choices import FIT_TRANSFORMS, ROBUST_FITS, THRESHOLD_RULES
from gpudse_core.model.headline import fit_r2
from gpudse_core.model.inference import anova, coefficient_table
from gpudse_core.model.registry import fit_model, model_kind, model_to_dict
from gpudse_core.model.splines import PLACEMENTS
from gpudse_core.model.stepwise import (
    CRITERIA,
    INTERACTION_FORMS,
    PAPER_SETTINGS,
    TRANSFORMS,
    StepwiseRegression,
    saturation_warning,
)
from gpudse_core.report import figures

w = ui.page("Stepwise fit")
st.title("Fit a model")
space_sv, results_sv = ui.need("space", "results")
space, res = space_sv.value, results_sv.value
results = res.table
numeric = [c for c in results.columns if results[c].dtype.kind in "if" and c not in space.parameter_names]
params_all = [p for p in space.parameter_names if p in results.columns]
model_sv = w.get("model")
current = model_sv.value
kind_now = model_kind(current) if current is not None else "stepwise"
prev = current if current is not None and hasattr(current, "trace") else None
defaults = {**StepwiseRegression().get_params(), **((prev.settings or {}) if prev is not None else {})}
is_paper = bool(defaults.get("reference"))  # the previous model is Stargazer as written
KINDS = {"stepwise": "Stepwise (Stargazer Algorithm 1)", "auto": "Chosen by cross-validation (auto)",
         "ebm": "Explainable boosting machine (EBM)", "forest": "Random forest", "boosting": "Gradient boosting",
         "hybrid": "Stepwise + boosting on its residuals (hybrid)"}
kind = st.selectbox("Model", list(KINDS), index=list(KINDS).index(kind_now) if kind_now in KINDS else 0,
                    format_func=KINDS.get, help="Stepwise: the papers' interpretable model, traced step by step. "
                    "The others are beyond the papers; auto picks one by K-fold cross-validation on the results.")
running = ui_jobs.job_panel(w, "fit", "Fitting the model", rerun=ui_jobs.LATER if kind != "stepwise" else None,
                            rerun_label=f"Fit the {KINDS[kind].lower()} again with the settings below")
if kind == "stepwise" and ui_jobs.last(w, "fit") is not None and ui_jobs.last(w, "fit").state == "interrupted":
    st.caption("The interrupted fit was of a learner: choose it under Model to fit it again.")


def pick(options, value):
    options = list(options)
    return options.index(value) if value in options else 0


if kind != "stepwise":
    with st.form("fit_learner"):
        c1, c2, c3 = st.columns(3)
        response = c1.selectbox("Response", numeric, index=pick(numeric, res.response))
        transform = c2.selectbox("Transform", TRANSFORMS, index=pick(TRANSFORMS, "log"), help=ui.help_for("transform"))
        folds = c3.slider("Folds (auto)", 2, 10, 5, disabled=kind != "auto")
        params = st.multiselect("Parameters", params_all, default=params_all)
        go_learner = st.form_submit_button("Fit", type="primary", disabled=running or not w.writable)
    if (go_learner or (ui_jobs.rerun_wanted(w, "fit") and not running)) and ui.guarded(
            lambda: ui_work.start_fit(w, kind, response, params, transform, folds)):
        st.rerun()
else:
    go_learner = False
    preset = st.radio("Settings", ["Robust defaults", "Stargazer as written"], index=1 if is_paper else 0,
                      horizontal=True, help="Stargazer as written: the authors' released implementation (Stargazer "
                                            "1.0) exactly: R's natural splines on its own knots, pairwise "
                                            "interactions, adjusted R² against R² with θ = φ = 0 relative to R², the "
                                            "raw response (docs/models.md 'Stargazer as written'). Robust "
                                            "defaults: F-tests, knots at distinct values on a log2 "
                                            "scale where the values are powers of two, three-way terms, a revisit "
                                            "pass.")
    paper = preset.startswith("Stargazer")
    base = {**StepwiseRegression().get_params(), **PAPER_SETTINGS} if paper else (
        defaults if not is_paper else StepwiseRegression().get_params())
    # outside the form: the inputs below depend on it (a gain is compared only under the adjusted-R² rule)
    criterion = st.selectbox("Criterion", CRITERIA, index=pick(CRITERIA, base["criterion"]), disabled=paper,
                             help="Stargazer 1.0 fixes this" if paper else ui.help_for("criterion"),
                             key=f"criterion_{preset}")

go_fit = False
trace_box = st.empty()
if kind == "stepwise":
    with st.form("fit"):
        c1, c2, c3, c4 = st.columns(4)
        response = c1.selectbox("Response", numeric,
                                index=pick(numeric, prev.response if prev is not None and prev.response in numeric
                                           else res.response))
        fixed = "Stargazer 1.0 fixes this" if paper else None  # the paper model's own knots, splines, search
        tf_options = [t for t in FIT_TRANSFORMS if t != "auto"] if paper else FIT_TRANSFORMS
        transform = c1.selectbox("Transform", tf_options,
                                 index=pick(tf_options, base["response_transform"]), help=ui.help_for("transform"))
        if criterion == "adjr2":  # only the adjusted-R² rule measures a gain against the current model
            compare = c2.selectbox("Gain measured against", ["r2", "adj_r2"],
                                   index=pick(["r2", "adj_r2"], base["compare"]),
                                   format_func=lambda v: {"r2": "R² (Algorithm 1)", "adj_r2": "adjusted R²"}[v],
                                   disabled=paper, help=fixed)
        else:
            compare = base["compare"]
        theta = c3.number_input("θ (add a parameter)", value=float(base["theta"]), step=0.001, format="%.4f",
                                help=ui.help_for("theta"))
        phi = c3.number_input("φ (add an interaction)", value=float(base["phi"]), step=0.001, format="%.4f",
                              help=ui.help_for("phi"))
        rule = c3.selectbox("Thresholds", THRESHOLD_RULES, index=pick(THRESHOLD_RULES, base["threshold_rule"]),
                            help="relative: θ and φ are shares of the model's R² (Stargazer 1.0, θ = φ = 0); "
                                 "absolute: the paper text's reading (θ = φ = 0.01). Adjusted-R² criterion only.")
        knots = c4.slider("Knots per spline (k)", 3, 7, int(base["knots"]) if isinstance(base["knots"], int) else 4,
                          help=fixed or ui.help_for("knots"), disabled=paper)
        placement = c4.selectbox("Knot placement", PLACEMENTS, index=pick(PLACEMENTS, base["knot_placement"]),
                                 help=fixed or "even: Stargazer; quantile: Lee & Brooks (rms); distinct: quantiles of "
                                               "the distinct values", disabled=paper)
        interactions = c4.selectbox("Interactions", INTERACTION_FORMS,
                                    index=pick(INTERACTION_FORMS, base["interactions"]),
                                    disabled=paper, help=fixed)
        max_order = c2.selectbox("Largest interaction", [2, 3], index=pick([2, 3], base["max_order"]),
                                 format_func=lambda v: {2: "pairs (Algorithm 1)", 3: "pairs and three-way"}[v],
                                 disabled=paper, help=fixed)
        robust = c2.selectbox("Fit", ROBUST_FITS, index=pick(ROBUST_FITS, base.get("robust", "huber")),
                              format_func=lambda v: {"huber": "robust (Huber)", "none": "least squares"}[v],
                              disabled=paper, help=fixed or ui.help_for("robust fit"))
        cells = c4.checkbox("Level cells", value=bool(base.get("cells", True)) and not paper, disabled=paper,
                            help=fixed or ui.help_for("level cells"))
        row_guard = c4.checkbox("One-row guard", value=bool(base.get("row_guard", True)) and not paper,
                                disabled=paper, help=fixed or ui.help_for("one-row guard"))
        count_pairs = c4.checkbox("Count pairs", value=bool(base.get("count_pairs", True)) and not paper,
                                  disabled=paper, help=fixed or ui.help_for("count pairs"))
        blend = c2.checkbox("Forest blend", value=base.get("blend", "forest") != "off" and not paper, disabled=paper,
                            help=fixed or ui.help_for("forest blend"))
        params = st.multiselect("Parameters", params_all, default=params_all)
        app_col = res.app_column
        per_app = bool(app_col) and st.checkbox(f"Also fit one model per {ui.plain(app_col)} (a bar each in the "
                                                f"contribution chart, Stargazer Fig. 3)", value=True)
        go_fit = st.form_submit_button("Fit", type="primary", disabled=running or not w.writable)

    if go_fit:
        settings = {**base, "theta": theta, "phi": phi, "threshold_rule": rule, "response_transform": transform}
        if not paper:
            settings.update(criterion=criterion, compare=compare, knots=knots, knot_placement=placement,
                            interactions=interactions, max_order=max_order, robust=robust, cells=cells,
                            row_guard=row_guard, count_pairs=count_pairs, blend="forest" if blend else "off")
        rows = []

        def show(step) -> None:
            rows.append(step.to_dict())
            ui.trace_table(rows, params, trace_box, settings=settings, current=len(rows), follow=True)

        try:
            outcome = ui.fit_model(settings, params, callback=show, response=response)
        except GpudseError as e:
            st.error(f"{ui.plain(e)}. The previous model is kept.")
        else:
            new = outcome.stored
            if outcome.reused:  # the same data and settings as a kept version: it and its analyses are current
                ui.flash("info", f"{outcome.message()}.")
            elif per_app:
                notes: list[str] = []
                by_app = {}
                kind, transform, kw = ui.fit_request(settings)
                for app, part in results.groupby(app_col):
                    try:  # a parameter constant within one application is left out of its model
                        by_app[str(app)] = fit_model(kind, part, response, params, transform=transform,
                                                     stepwise_kw=kw, derived=space.derived_map() or None)
                    except GpudseError as e:
                        notes.append(f"{app_col} {app}: {e}")
                for n in notes:
                    ui.flash("warning", n)
                if by_app:
                    ui.guarded(lambda: w.put_analysis("app_models", by_app, inputs=[results_sv, new],
                                                      origin=f"one model per {app_col}"))
            st.rerun()  # every part of the page (and the sidebar) from the new version


model_sv = w.get("model")
if model_sv.value is None:
    if not running:
        st.info("No model yet: press Fit.", icon=":material/info:")
    st.stop()
if not model_sv.ok:
    if not running:
        ui.banner(model_sv.status, key="fix_model")
    st.stop()
model = model_sv.value
data = w.input_of(model_sv, "results").value.table
st.caption(f"Model version {model_sv.version}: {ui.plain(model_sv.origin)}.")

if not hasattr(model, "trace"):  # a learner (forest, boosting, hybrid, EBM), possibly chosen by auto
    pred = model.predict(data)
    obs = data[model.response].to_numpy(dtype=float)
    head = ui.headline(w, model_sv)
    m = st.columns(4)
    m[0].metric(head.label if head is not None and head.value is not None else "Out-of-sample error",
                ui.fmt_pct(head.value) if head is not None and head.value is not None else "–",
                help="the validation's median error of this model at its largest training size" if head is not None
                and head.value is not None else "not measured yet: validate on the Accuracy page")
    m[1].metric("Model", KINDS.get(model_kind(model), model_kind(model)))
    m[2].metric("Training rows", ui.fmt_count(len(data)))
    m[3].metric("Median relative error on them", ui.fmt_pct(float(np.median(np.abs(pred - obs) / np.abs(obs)))),
                help="on the rows it was fitted on: optimistic; the Accuracy page measures it on held-out points")
    sel = getattr(model, "selection", None)
    if sel:
        st.markdown(f"**Chosen by {ui.plain(sel.get('method', 'cross-validation'))}: {ui.plain(sel.get('chosen'))}** — "
                    f"{ui.plain(sel.get('reason'))}")
        ui.table(pd.DataFrame(sel.get("table", [])))
    ui.chart(figures.predicted_vs_observed(model, data))
    st.download_button("Model (JSON)", lambda: json.dumps(model_to_dict(model), default=str), file_name="model.json",
                       mime="application/json", icon=":material/download:")
    st.stop()

if not go_fit:
    ui.trace_table(model.trace, [p for p in params_all if p in results.columns], trace_box,
                   settings=model.settings or {})
    st.caption("Stargazer Table 1: a row per step; beside the term, the statistic the criterion decided by, the "
               "threshold it was held to (θ a parameter, φ a pair, φ₃ a three-way term) and the model's R² and "
               "adjusted R² after the step; then a column per candidate with its R² (first row) or adjusted R² "
               "(later rows) with it added — **bold on green**: the term that entered (+), red: the best "
               "candidate, rejected (✗).")
with st.expander("Replay the fit row by row (Stargazer Table 1)", icon=":material/slideshow:",
                 expanded=st.session_state.setdefault("_replay_linked", ui_replay.linked())):  # ?row= opens it
    if not ui.presenting():
        st.caption("Each row of the trace in turn, with the rule that accepted or rejected its term, for watching "
                   "the model grow in a lecture.")
    ui_replay.replay(model, [p for p in params_all if p in results.columns], f"replay_{model_sv.digest[:12]}")
head = ui.headline(w, model_sv)
interpolates = head is not None and head.interpolates
m = st.columns(4)
if head is not None and head.value is not None:  # the headline: an out-of-sample error, labelled as such
    m[0].metric(head.label, ui.fmt_pct(head.value), help=f"{head.detail}; "
                "each row predicted by the fit without it (exact for least squares); the Accuracy page "
                "measures the error on held-out points" if head.source == "leave-one-out" else head.detail)
else:
    m[0].metric("Out-of-sample error", "interpolates" if interpolates else "–",
                help="see the note below" if interpolates else "validate on the Accuracy page")
if interpolates:
    m[1].metric("Training rows", ui.fmt_count(model.n))
else:
    r2 = fit_r2(model, data)  # the data's R², on the scale the model fits; a Huber fit's pseudo-observations' in help
    m[1].metric(f"R² of {ui.plain(r2.scale)}", ui.fmt_r2(r2.r2), help=ui.plain(r2.text()))
m[2].metric("Terms", len(model.terms))
m[3].metric("Coefficients", len(model.coefficients))
if interpolates:
    st.warning(ui.plain(head.note), icon=":material/warning:")
saturated = None if interpolates else saturation_warning(len(model.coefficients), model.n, model.r2)
if saturated:
    st.warning(saturated, icon=":material/warning:")
for note in getattr(model, "notes", []) or []:
    if note != saturated:
        st.caption(f":material/info: {ui.plain(note)}")

apps_sv = ui.analysis("app_models")  # an AppModels, or None (a damaged one is named)
by_app = apps_sv.value.models if apps_sv.ok and apps_sv.value is not None else None
c1, c2 = st.columns([1, 1])
ui.chart(figures.contributions(model, by_app or None), c1, narrow=True)
with c2:
    st.markdown("**Terms in the order they were added**")
    st.markdown(" + ".join(ui.plain(t) for t in model.terms))  # terms name the user's parameters
    st.caption(ui.help_for("contribution"))
with st.expander("The fitted equation", expanded=False):
    st.code(model.equation(digits=5), language=None, wrap_lines=True)
try:
    st.markdown("**ANOVA: F-tests pooling every term that involves a predictor (Lee & Brooks Table 5, rms::anova)**")
    if interpolates:
        st.caption("Not shown: as the note above says, the F statistics of this fit would not be tests.")
    else:
        ui.table(anova(model, data), units=ui.anova_units(model))
    with st.expander("Coefficients with t-tests"):
        ui.table(coefficient_table(model, data))
except GpudseError as e:
    st.warning(f"Statistics unavailable: {ui.plain(e)}")
st.download_button("Model (JSON)", model.to_json, file_name="model.json", mime="application/json",
                   icon=":material/download:")
