"""gpudse dashboard — entry point and home page. Run: streamlit run app.py

The other pages live in ``pages/`` (Streamlit's multipage layout). Every page is thin: it reads
widgets, calls ``gpudse_core`` and draws with Plotly; pipeline data come from the session's workspace
(``ui_state``). This page says what the tool does and where the workspace is in the workflow, and
manages workspaces (this browser's list, rename, delete, copies, sharing), projects and reports.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import streamlit as st

# The first paint: the frame and the title are drawn before the dashboard's own modules (and
# through them pandas, Plotly and the core) are imported, which on a cold server takes ~0.3 s.
st.set_page_config(page_title="Home · gpudse",
                   page_icon=str(Path(__file__).parent / "dashboard" / "assets" / "gpudse.png"),
                   layout="wide",  # the same frame as ui.configure("Home"), presentation mode (?present=1) too
                   initial_sidebar_state="collapsed" if st.query_params.get("present") == "1" else "auto")
st.title("gpudse — GPU design space exploration")  # drawn before the workspace opens: the first paint
st.markdown(
    """
GPU simulators are five to six orders of magnitude slower than hardware, and a design space of ten
parameters has a million points. gpudse samples a few hundred design points uniformly at random,
simulates them in parallel, and fits a regression model that predicts every other point
(**Stargazer**: forward-stepwise natural cubic splines with pairwise interactions, three-way ones too by default;
**Lee & Brooks**:
restricted cubic splines, F-tests, residual checks, error CDFs). For ray-tracing workloads it picks
representative pixels from a per-pixel cost heatmap (**Zatel**).
"""
)
# the first visit to a server builds the example (sampled, simulated, fitted, validated, scanned): ~12 s
# on two busy cores, with a spinner that says so rather than a bare title
with st.spinner("Opening the workspace… (the first visit to this server builds the built-in example: "
                "about 10–15 s)"):
    from dashboard import frame as ui  # noqa: E402  (after the first paint, above)
    from dashboard import state as ui_state  # noqa: E402
    from gpudse_core import GpudseError  # noqa: E402
    from gpudse_core.workspace.workspace import DEFAULT_NAME  # noqa: E402

    w = ui.page("Home")

st.subheader("Where you are")
overview = w.overview()
steps = [("space", "Design space"), ("samples", "Sampling"), ("results", "Simulations"), ("model", "Stepwise fit"),
         ("validation", "Accuracy"), ("scan", "Explore")]
cols = st.columns(len(steps))
for col, (stage, title) in zip(cols, steps):
    status = overview.get(stage)
    state = status.state if status is not None else "missing"
    with col.container(border=True, height="stretch"):
        st.markdown(f"{ui.STATE_ICON[state]} **{title}**")
        if stage in ui.PIPELINE:
            st.caption(ui.stage_summary(w, stage))
        elif state == "current":
            st.caption("computed" + (" (partial)" if status.partial else ""))
        else:
            st.caption("not computed yet" if state == "missing" else "")
        if status is not None and state == "stale":
            st.caption(f"Out of date: {ui.plain(status.reason)}.")
        ui.link(title, label="Open", icon=":material/arrow_forward:")
head = ui.headline(w) if overview["model"].ok else None
if head is not None:  # the model's headline: an out-of-sample error, or that it interpolates (never R²)
    st.markdown(f"**The model's accuracy out of sample:** {head.text()}.")
    if head.interpolates:
        st.caption(ui.plain(head.note))

st.subheader("Workspace")
st.caption("Everything you do is saved as you go, with every earlier version, in this workspace. Its link "
           "(this page's address) brings it back after a reload or a server restart. Sent to a colleague, "
           "the link opens it **read-only**: the key that allows changes stays in this browser.")
c1, c2 = st.columns(2)
name = c1.text_input("Name", w.name, key=f"ws_name_{w.id}", disabled=not w.writable, max_chars=200)
if w.writable and name.strip() and name != w.name and ui.guarded(lambda: w.rename(name), "Renamed."):
    st.rerun()
url = getattr(st.context, "url", None) or ""
base = url.split("?")[0]
share = f"{base if base.endswith('/') else base + '/'}?ws={w.id}" if url else f"?ws={w.id}"
c2.text_input("Read-only link to share", share, key=f"share_{w.id}",
              help="opens this workspace read-only; the person can make their own copy")
b1, b2, b3 = st.columns(3)
if b1.button("New: the built-in example", icon=":material/science:", width="stretch",
             help="the Stargazer example with every page filled"):
    if ui.guarded(lambda: ui_state.switch_to(ui_state.new_example())):
        st.rerun()
if b2.button("New: an empty workspace", icon=":material/add:", width="stretch",
             help="start from nothing: choose a design space first"):
    if ui.guarded(lambda: ui_state.switch_to(ui_state.new_empty())):
        st.rerun()
if b3.button("Copy this workspace", icon=":material/content_copy:", width="stretch",
             help="your own copy of this workspace, with every version"):
    if ui.guarded(lambda: ui_state.fork(w)):
        st.rerun()

try:
    mine = ui_state.workspace_ids()
except GpudseError as e:
    mine = []
    st.error(ui.plain(e))
if mine:
    from gpudse_core.workspace import single_user

    st.markdown("**Workspaces on this server**" if single_user() else "**Your workspaces in this browser**")
    rows = [{"name": i.name + (" (open)" if i.id == w.id else ""),
             "changed": dt.datetime.fromtimestamp(i.updated).strftime("%Y-%m-%d %H:%M"),
             "stages": ", ".join(f"{s} {state}" for s, state in i.stages.items() if s in ui.PIPELINE),
             "size": ui.fmt_num(i.bytes / 2**20, "MB", 3)} for i in mine]
    st.dataframe(rows, hide_index=True, width="stretch")
    c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    pick = c1.selectbox("Workspace", [i.id for i in mine], format_func=lambda i: next(
        m.name + (" (open)" if m.id == w.id else "") for m in mine if m.id == i), key="pick_ws")
    if c2.button("Open", icon=":material/folder_open:", disabled=pick == w.id, width="stretch"):
        ui_state.switch_to(ui_state.open_by_id(pick))
        st.rerun()
    if c3.button("Delete…", icon=":material/delete:", width="stretch"):
        st.session_state.confirm_delete = pick
    if st.session_state.get("confirm_delete") == pick:
        target = next(m for m in mine if m.id == pick)
        st.warning(f"Delete **{ui.plain(target.name)}** for good, with every version, analysis and campaign in it? "
                   "A link to it stops working.")
        d1, d2, _ = st.columns([1, 1, 3])
        if d1.button("Delete it", type="primary", key="confirm_delete_yes"):
            def delete() -> None:
                ws_del = ui_state.open_by_id(pick)
                if not ws_del.writable:
                    ws_del.close()
                    raise GpudseError("this browser does not hold the key of that workspace")
                ws_del.delete()
            if ui.guarded(delete, "Deleted."):
                ui_state.forget(pick)
                st.session_state.confirm_delete = None
                if pick == w.id:
                    ui_state.switch_to(ui_state.new_example())
                st.rerun()
        if d2.button("Keep it", key="confirm_delete_no"):
            st.session_state.confirm_delete = None
            st.rerun()

st.subheader("Projects and reports")
left_out = {s: st_.reason for s, st_ in overview.items() if not st_.ok}
c1, c2, c3 = st.columns(3)
with c1:
    if overview["space"].ok:
        from gpudse_core.workspace import export_project

        st.download_button("Save the project (zip)", lambda: export_project(w).data, file_name="gpudse-project.zip",
                           mime="application/zip", icon=":material/download:",
                           help="the current space, samples, results and model, with their settings")
        if left_out:
            st.caption("Left out (not current): "
                       + "; ".join(f"{ui.stage_title(k)}: {ui.plain(v)}" for k, v in left_out.items()))
    else:
        st.caption("Choose a design space first: a project starts with one.")
with c2:
    up = ui.uploader("Load a project", ["zip"], key="project_upload",
                     help="replaces this workspace's space, samples, results and model (earlier versions are kept)")
    if up is not None and st.button("Load this project", icon=":material/upload:", disabled=not w.writable):
        from gpudse_core.workspace import import_project

        try:
            # a workspace still under a default name takes the project's; a name the user chose is kept
            loaded = import_project(w, ui.upload_bytes(up), up.name,
                                    adopt_name=w.name in (ui_state.EXAMPLE_NAME, DEFAULT_NAME))
        except GpudseError as e:
            ui.upload_error(up.name, e, "Your workspace is unchanged.")
        else:
            st.session_state.pop(f"ws_name_{w.id}", None)  # the Name box shows the adopted name
            got = [ui.STAGE_TITLE[s].lower() for s in ui.PIPELINE
                   if loaded[s].value is not None]
            ui.flash("success", f"Loaded {ui.plain(up.name)} into workspace '{ui.plain(w.name)}': {', '.join(got)}. "
                                "Earlier versions "
                     "are kept in its history.")
            st.rerun()
with c3:
    if overview["space"].ok:
        st.download_button("Download an HTML report", lambda: ui.report_html(w), file_name="gpudse-report.html",
                           mime="text/html", icon=":material/description:",
                           help="one file with the tables and interactive charts of what is current (stale "
                                "analyses are left out and listed); opens without a server")
