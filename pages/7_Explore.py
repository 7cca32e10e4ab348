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
from dashboard import state as ui_state
from dashboard import work as ui_work
from gpudse_core import GpudseError
from gpudse_core.csvout import frame_text
from gpudse_core.explore.results import ScanResult
from gpudse_core.explore.scan import sensitivity
from gpudse_core.fmt import fmt_value
from gpudse_core.report import figures, recommendation
from gpudse_core.workspace.stages import title

w = ui.page("Explore")
st.title("Explore the design space")


def simulated_best(space, model) -> None:
    """The latest "Simulate these": each chosen design's prediction beside its simulation, the model
    and best designs it checked (which it leaves current), and "Add these to the results and refit"
    as its own step (shown also once the scan and the model are out of date)."""
    ui_jobs.job_panel(w, "campaign", "Simulating the chosen designs", rerun=ui_jobs.LATER,
                      rerun_label="Simulate the rows chosen below again")
    adding = ui_jobs.job_panel(w, "add_check", "Adding the checked designs to the results, refitting and rescanning")
    running = ui_jobs.active(w, "campaign") is not None
    sv = None if running else ui.analysis("check")  # the stored check, bound to the model and scan it checked
    try:
        check = sv.value if sv is not None and sv.value is not None else ui_work.latest_simulated_best(w)
    except GpudseError as e:  # a campaign record that cannot be read: named, the rest of the page works
        st.error(ui.plain(e), icon=":material/report:")
        check = None
    if check is not None:
        unit = ui.response_unit(model.response)
        table = check.table
        params = [p for p in space.parameter_names if p in table.columns]
        scan = w.get("scan").value
        used = [p for p in (scan.used if isinstance(scan, ScanResult) else []) if p in params]
        params = used + [p for p in params if p not in used]  # the parameters that tell the rows apart first
        failed_designs(space, table.assign(group=table["group"] + 1), used or params)
        cols = ["group", "predicted", "lower", "upper", "simulated", "error", "in interval", *params]
        table = table[[c for c in cols if c in table.columns]].rename(columns={"group": "row"})
        table["row"] = table["row"] + 1
        # a prediction equal to the simulation up to floating-point rounding has no error to show
        table["error"] = table["error"].mask(table["error"].abs() < 1e-9, 0.0)
        # the interval in one column, as in the best designs above: the parameters stay in view at 1280 px
        interval = "95 % interval" + (f" ({unit})" if unit else "")
        lo, hi = pd.to_numeric(table.pop("lower"), errors="coerce"), pd.to_numeric(table.pop("upper"), errors="coerce")
        if (lo.notna() & hi.notna()).any():  # no column of dashes when the model gave no interval at all
            table.insert(2, interval, [f"{ui.fmt_num(a)} – {ui.fmt_num(b)}" if pd.notna(a) and pd.notna(b)
                                       else ui.fmt_num(None) for a, b in zip(lo, hi)])
        st.markdown(f"**Predicted vs simulated** ({ui.plain(check.campaign)}: {ui.fmt_count(check.simulated)} of "
                    f"{ui.fmt_count(len(table), 'designs')} simulated"
                    + (f", {ui.fmt_count(check.inside)} inside the interval)" if check.judged else ")"))
        ui.table(table, units=ui.units(space) | {c: unit for c in ("predicted", "simulated")},
                 kinds={"error": "error", "row": "count"})
        if sv is not None and sv.value is not None:
            check_binding(sv, adding)


def check_binding(sv, adding: bool) -> None:
    """What the stored check checked (model and best-designs versions) and, while it is current, the
    separate step that adds its designs to the results; once it is not, why, and what is stale now."""
    check = sv.value
    versions = ui.plain(f"model version {check.model_version}, best designs version {check.scan_version}")
    if not sv.ok:
        st.caption(f":material/history: This check was made with {versions}: {ui.plain(sv.status.reason)}.")
        done = ui_jobs.last(w, "add_check")
        stale = [title(s) for s, status in w.overview().items() if s != "check" and not status.ok]
        if done is not None and done.state == "finished" and (done.finished or 0) >= sv.created:
            st.info(f"The checked designs were added to the results (version {w.get('results').version}), the "
                    f"model refitted (version {w.get('model').version}) and the best designs found again"
                    + (f"; out of date now: {ui.plain(', '.join(stale))} (recompute on their pages)." if stale
                       else "."), icon=":material/info:")
        return
    st.caption(f":material/verified: Checks {versions}: the results are unchanged, so the model, the best "
               f"designs and the analyses computed from them stay current.")
    if not check.simulated or adding:
        return
    busy = any(ui_jobs.active(w, kind) is not None for kind in ("fit", "scan"))
    if st.button("Add these to the results and refit", icon=":material/playlist_add:", key="add_check",
                 disabled=not w.writable or busy,
                 help=f"appends the {check.simulated:d} simulated designs to the results (a new version), fits the "
                      f"model again with its settings and finds the best designs again; the validation and the "
                      f"true error are then out of date until recomputed") and ui.guarded(
            lambda: ui_work.start_add_check(w)):
        st.rerun()


def failed_designs(space, table, used) -> None:
    """One clear message for the chosen designs the simulator failed on (named by the parameters in
    *used*): which, why, and that they are recorded (a scan leaves out every row holding one)."""
    failed = table[table["in interval"] == "failed"]
    if not len(failed):
        return

    def value(p: str, v) -> str:
        unit = space.parameter(p).unit
        return f"{space.parameter(p).display} = {fmt_value(v)}" + (f" {unit}" if unit else "")

    which = "; ".join(f"row {r['group']}: " + ", ".join(value(p, r[p]) for p in used)
                      for r in failed.to_dict(orient="records"))
    why = next((y for y in failed["why"] if y), "")
    st.error(f"{ui.fmt_count(len(failed))} of {ui.fmt_count(len(table), 'designs')} failed to simulate "
             f"({ui.plain(which)})"
             + (f": {ui.plain(why)}" if why else "") + ". The failure is recorded in this workspace: rows holding a "
             "failed design will not be recommended again (from the next scan of the best designs on).",
             icon=":material/error:")
    sv = w.get("scan")  # a current scan made before the failure still shows its row: offer the next scan
    if sv.ok and isinstance(sv.value, ScanResult) and set(used) <= set(sv.value.best.columns):
        shown = {tuple(_key(v) for v in r) for r in sv.value.best[used].itertuples(index=False)}
        if any(tuple(_key(r[p]) for p in used) in shown for r in failed.to_dict(orient="records")) and st.button(
                "Recompute the best designs without them", icon=":material/refresh:", disabled=not w.writable,
                key="rescan_failed") and ui.guarded(lambda: ui_work.start_scan(w, ui_work.scan_request(
                    sv.value, ui_work.EXAMPLE_SCAN))):
            st.rerun()


def _key(v):
    """A parameter value compared across tables (16 and 16.0 alike)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


if w.ready("space", "model") is not None and w.get("space").value is not None and w.get("model").value is not None:
    simulated_best(w.get("space").value, w.get("model").value)  # the check stays in view while a refit is due
space_sv, model_sv = ui.need("space", "model")
space, model = space_sv.value, model_sv.value
c1, c2, c3 = st.columns(3)  # the settings live in the address too (?goal=, ?top=, ?cost=): a copied link keeps them
goal = c1.radio("Best designs have the", ["lowest prediction", "highest prediction"],
                help=f"{ui.plain(model.response)}: lower is better for runtimes, higher for IPC",
                **ui_state.bound("goal"))
k = c2.slider("How many best designs", 5, 100,
              **ui_state.bound("top", "value", ui_work.EXAMPLE_SCAN["k"], lo=5, hi=100))
numeric = [p.name for p in space.parameters if p.kind == "numeric"]
cost_name = c3.selectbox("Cost for the Pareto front", ["levels"] + numeric, format_func=lambda c: {
    "levels": "sum of levels (a budget)"}.get(c, space.parameter(c).display if c in numeric else c),
    **ui_state.bound("cost"))
request = {"k": int(k), "maximize": goal.startswith("highest"), "cost": cost_name}



def compute(req: dict = request) -> None:
    ui_work.start_scan(w, req)


running = ui_jobs.job_panel(w, "scan", "The scan of the design space", rerun=compute)
sv = ui.analysis("scan")  # a ScanResult, or None (a damaged one is named, and can be computed again)


def simulate_these(value: ScanResult) -> None:
    """Run chosen rows through the simulator the results came from; predicted beside simulated."""
    best = value.best
    with st.container(border=True):
        st.markdown("**Simulate these** — check the predictions with the simulator; the check is kept beside the "
                    "best designs and the results are unchanged (adding the designs to them is a separate step)")
        builtin = ui_work.results_backend(w)
        external = ui_work.external_backends()
        kinds = ([f"built-in ({builtin.kernel}, noise σ {builtin.noise:g}), as the results"] if builtin else []) + \
            ([f"external: {p.name}" for p in external])
        backend = builtin
        if kinds:
            kind = st.radio("Simulator", kinds, horizontal=True, key="sim_backend")
            if kind.startswith("external: "):
                from gpudse_core.sim.campaign import CommandBackend

                try:
                    backend = CommandBackend.from_file(external[kinds.index(kind) - (1 if builtin else 0)])
                except GpudseError as e:
                    st.error(ui.plain(e))
                    backend = None
        unit = ui.response_unit(model.response)
        names = [f"{i + 1}: {ui.fmt_num(v, unit)}" for i, v in enumerate(best.predicted)]
        rows = st.multiselect("Rows", list(range(len(best))), default=list(range(min(5, len(best)))),
                              format_func=lambda i: names[i], key="sim_rows")  # the whole width: every tag in view
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        how = c1.radio("Designs", ["one per row (its shown design)", "every design of each row, up to"],
                       key="sim_how", horizontal=True)
        per_row = c2.number_input("designs per row", 1, ui_work.simulate_limit(), 5, key="sim_per_row",
                                  disabled=how.startswith("one"), label_visibility="collapsed")
        if not kinds:
            st.info("The results did not come from the built-in simulator and no external simulator is configured "
                    "on this server, so there is none to run here; simulate the designs elsewhere and upload their "
                    "results.", icon=":material/info:")
        busy = ui_jobs.active(w, "campaign") is not None
        if backend is not None:
            pressed = st.button("Simulate these", type="primary", icon=":material/play_arrow:",
                                disabled=busy or not rows or not w.writable)
            if (pressed or (ui_jobs.rerun_wanted(w, "campaign") and rows and not busy)) and ui.guarded(
                    lambda: ui_work.start_simulate_best(w, backend, best.iloc[rows], not how.startswith("one"),
                                                        int(per_row))):
                st.rerun()


checked = False  # the latest "Simulate these" is shown below its button, or else further down
label = f"Find the best of all {ui.fmt_count(space.size)} designs"
if sv.value is None or (running and not sv.ok):  # nothing yet, or an out-of-date scan being replaced
    if not running and st.button(label, type="primary", disabled=not w.writable) and ui.guarded(compute):
        st.rerun()
elif ui.analysis_banner(sv, lambda: compute(ui_work.scan_request(sv.value, request)), key="fix_scan"):
    value = sv.value
    req = value.request
    if req != request and not running:
        c1, c2 = st.columns([4, 1], vertical_alignment="center")
        c1.info(f"Shown: the scan for {ui.plain(ui_work.describe_scan(req))}. The settings above ask for "
                f"{ui.plain(ui_work.describe_scan(request))}.", icon=":material/info:")
        if c2.button("Recompute for these settings", disabled=not w.writable) and ui.guarded(compute):
            st.rerun()
    goal_word = "highest" if value.maximize else "lowest"
    designs = value.designs if value.designs is not None else space.size
    best = value.best
    evaluated = value.evaluated if value.evaluated is not None else len(best)
    st.markdown(f"**The {len(best)} {goal_word} predicted {ui.plain(model.response)} of "
                f"{ui.fmt_count(designs)} designs** "
                f"(model version {model_sv.version}; exact: {ui.fmt_count(evaluated)} {ui.plain(value.how())})")
    # what a review needs beside the rows, as the report says it: accuracy out of sample, the scan's notes
    # (calibrated or not, extrapolated, held at a bound, failed rows left out), how to read the rows
    caution = recommendation.caution(value, model, list(space.parameter_names))
    if caution:
        st.warning(ui.plain(caution), icon=":material/warning:")
    said = recommendation.accuracy(ui.headline(w, model_sv))
    if said:
        st.markdown(ui.plain(said))
    for note in recommendation.notes(value):
        st.caption(f":material/info: {ui.plain(note)}")
    shown = value.shown
    if shown is not None:  # one row per group of designs the model cannot tell apart
        st.caption(ui.plain(recommendation.reading(value)))
        ui.table(recommendation.numbered(shown), kinds={"row": "count"})
        st.download_button("The shown designs (CSV)", lambda: frame_text(recommendation.shown_designs(
            value, list(space.parameter_names))), file_name="best-designs.csv", mime="text/csv",
            icon=":material/download:", help="one design per row — the one Simulate these runs — with its prediction "
                                             "and interval: to simulate elsewhere and upload the results")
    else:  # stored by an earlier version: one row per design
        best = best[["predicted"] + [c for c in best.columns if c != "predicted"]]
        ui.table(best, units=ui.units(space) | {"predicted": ui.response_unit(model.response)})
    if shown is not None and len(best):
        simulate_these(value)
        simulated_best(space, model)  # the outcome right below its button, before the chart
        checked = True
    front = value.pareto
    if front is not None and len(front) and "cost" in front.columns:
        ui.chart(figures.pareto(front, recommendation.cost_label(value.cost, space), model.response, value.cloud))
        cost_note = recommendation.cost_note(value.cost)
        st.caption(ui.help_for("pareto") + (" " + ui.plain(cost_note) if cost_note else ""))

if not checked:
    simulated_best(space, model)

st.subheader("One parameter at a time")
base = ui.base_point(space, "ex")
sens = sensitivity(model, base, space)
at = model.predict_details(pd.DataFrame([base]))
ref = float(at["predicted"].iloc[0])
st.metric(f"Predicted {ui.plain(model.response)} at this design", ui.fmt_num(ref, ui.response_unit(model.response)))
if str(at["extrapolation"].iloc[0]):  # outside what the training rows cover: the model extrapolates, say so
    st.caption(f"Outside the training data: {ui.plain(str(at['extrapolation'].iloc[0]))}"
               + (" (the prediction is bounded)." if bool(at["bounded"].iloc[0]) else "."))
span = sens.groupby("parameter").change.agg(["min", "max"]).reindex(space.parameter_names)
span.index = [space.parameter(p).display for p in span.index]  # the names the sliders above use
ui.chart(figures.sensitivity(span, model.response))
st.caption(ui.help_for("sensitivity"))
