"""Design space page: load a preset or a file, edit parameters, groups and constraints, see the exact size."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import frame as ui
from gpudse_core import PRESETS, GpudseError
from gpudse_core.space.design import fixed_table, space_from_table, space_table
from gpudse_core.space.presets import load_space_bytes

w = ui.page("Design space")

st.title("Design space")

sv = ui.read(w, "space")
space = sv.value
# the version the edit form was built from: kept across runs, so another session's save never swaps the
# form under a user's unsaved edit (Apply then compares and swaps on it, and a conflict shows both)
FORM = f"space_form_{w.id}"
if st.session_state.get(FORM) is None or space is None:
    st.session_state[FORM] = sv.version


def put_space(new, origin: str, expect: int | None = None) -> None:
    stored = w.set_space(new, origin, expect=sv.version if expect is None else expect)
    st.session_state[FORM] = stored.version
    later = [ui.STAGE_TITLE[s].lower() for s, status in w.overview().items()
             if s in ("samples", "results", "model") and status.state == "stale"]  # no value read: never damaged
    ui.flash("success", f"Design space **{ui.plain(new.name)}** loaded ({ui.plain(origin)}): "
             f"{ui.fmt_count(new.size, 'design points')}."
             + (f" Out of date now: {', '.join(later)} — each page offers to redo its part." if later else ""))


with st.expander("Load a preset or a file", expanded=space is None):
    c1, c2 = st.columns(2)
    with c1:
        names = list(PRESETS)
        choice = st.selectbox("Preset", names, index=names.index(space.name) if space is not None
                              and space.name in names else 0)
        ss = st.session_state
        if st.button("Load preset", disabled=not w.writable):
            if space is None:  # nothing to replace
                if ui.guarded(lambda: put_space(ui.preset(choice), f"preset {choice}")):
                    st.rerun()
            else:
                ss["confirm_preset"] = choice
        if space is not None and ss.get("confirm_preset") == choice:  # replacing asks first
            st.warning(f"Replace the design space **{ui.plain(space.name)}** "
                       f"({ui.fmt_count(space.size, 'design points')}) with the preset **{ui.plain(choice)}**? Your "
                       "edits stay as an earlier version; samples, results and the model will be out of date.",
                       icon=":material/warning:")
            r1, r2 = st.columns(2)
            if r1.button("Replace", type="primary", key="confirm_preset_yes", disabled=not w.writable):
                ss.pop("confirm_preset", None)
                if ui.guarded(lambda: put_space(ui.preset(choice), f"preset {choice}")):
                    st.rerun()
            if r2.button("Cancel", key="confirm_preset_no"):
                ss.pop("confirm_preset", None)
                st.rerun()
    with c2:
        up = ui.uploader("YAML or JSON design-space file", ["yaml", "yml", "json"], key="space_upload")
        if up is not None and st.button("Load file", disabled=not w.writable):
            try:
                new = load_space_bytes(ui.upload_bytes(up), up.name)
                put_space(new, f"uploaded file {up.name}")
            except GpudseError as e:
                ui.upload_error(up.name, e, "The current space is unchanged.")
            else:
                st.rerun()

if space is None:
    st.info("No design space yet: load a preset (Stargazer's Table 2, Lee & Brooks' Table 2, Zatel's GPUs) "
            "or your own YAML/JSON file above.", icon=":material/info:")
    st.stop()

feasible = space.feasible_size
m = st.columns(4)
m[0].metric("Design points", ui.fmt_count(space.size), help=f"exact: {space.size:,}")
m[1].metric("Feasible points", ui.fmt_count(feasible) if feasible is not None
            else f"≈{ui.fmt_num(space.feasible_size_estimate)}",
            help="points satisfying every constraint" + ("" if feasible is not None else " (estimated by probing)"))
m[2].metric("Dimensions", len(space.dimensions), help="a group of parameters varied together is one dimension")
m[3].metric("Parameters", len(space.parameters))
st.caption(f"{ui.plain(space.description)}  \nSource: {ui.plain(sv.origin)} (version {sv.version})")

st.subheader("Parameters")
st.caption("Values use the file syntax: `1, 2, 4` · `9::3::36` (from 9 to 36 in steps of 3) · `pow2: 1..16`. "
           "Rows with the same **group** vary together (Lee & Brooks Table 2). Names are identifiers used in "
           "constraints; **label** is how they are shown.")
form_version = st.session_state[FORM]
if form_version != sv.version:  # someone else saved a newer space while this form was open
    try:
        form_space = w.get("space", form_version).value
    except GpudseError:  # no longer kept: the form follows the current space
        form_space, form_version = space, sv.version
        st.session_state[FORM] = sv.version
    else:
        st.warning(f"The design space was changed elsewhere while you had this form open: the current version is "
                   f"{sv.version} (**{ui.plain(space.name)}**, {ui.plain(sv.origin)}). The form below still shows "
                   f"version {form_version} with your edits; Apply is refused until you choose.",
                   icon=":material/sync_problem:")
        if st.button("Discard my edits and show the current design space", key="space_form_reload"):
            st.session_state[FORM] = sv.version
            st.rerun()
        space = form_space
version = f"{w.id}_{form_version}"
edited = st.data_editor(
    space_table(space), num_rows="dynamic", width="stretch", key=f"params_{version}",
    column_config={
        "kind": st.column_config.SelectboxColumn("kind", options=["numeric", "categorical"]),
        "values": st.column_config.TextColumn("values", width="medium"),
    },
)
c1, c2 = st.columns(2)
with c1:
    st.subheader("Constraints")
    cons_text = st.text_area(
        "One expression per line over parameter names, e.g. `smem_kb * 1024 >= threads * 12`",
        "\n".join(c.expr for c in space.constraints), key=f"cons_{version}", height=150)
with c2:
    st.subheader("Fixed baseline")
    fixed_edit = st.data_editor(fixed_table(space), num_rows="dynamic", width="stretch",
                                key=f"fixed_{version}")
name = st.text_input("Space name", space.name, key=f"name_{version}")

if st.button("Apply changes", type="primary", disabled=not w.writable):
    try:
        new = space_from_table(pd.DataFrame(edited), cons_text.splitlines(), pd.DataFrame(fixed_edit),
                               name=name, description=space.description, base=space)
        if new.size != space.size:  # the loaded description names the loaded size ("933,120 design points")
            was = (f"Edited in the dashboard from {space.name} ({ui.fmt_count(space.size, 'design points')}); "
                   f"now {ui.fmt_count(new.size, 'design points')}.")
            new = space_from_table(pd.DataFrame(edited), cons_text.splitlines(), pd.DataFrame(fixed_edit),
                                   name=name, description=was, base=space)
    except GpudseError as e:
        st.error(f"{ui.plain(e)}. Nothing was changed; correct the table and apply again.")
    else:
        if ui.guarded(lambda: put_space(new, "edited in the dashboard", expect=form_version)):
            st.rerun()

st.subheader("Download")
d1, d2 = st.columns(2)
d1.download_button("Space as YAML", space.to_yaml, file_name=f"{space.name}.yaml", mime="application/x-yaml")
d2.download_button("Space as JSON", space.to_json, file_name=f"{space.name}.json", mime="application/json")
