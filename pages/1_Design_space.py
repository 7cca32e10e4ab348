"""Design space page: load a preset or a file, edit parameters, groups and constraints, see the exact size."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
from gpudse_core import PRESETS, GpudseError
from gpudse_core.space.presets import load_space_bytes
from gpudse_core.space.design import fixed_table, space_from_table, space_table

ui.page("Design space")

st.title("Design space")

space = st.session_state.space

with st.expander("Load a preset or a file", expanded=False):
    c1, c2 = st.columns(2)
    with c1:
        choice = st.selectbox("Preset", list(PRESETS), index=list(PRESETS).index(space.name)
                              if space.name in PRESETS else 0)
        if st.button("Load preset"):
            ui.set_space(ui.preset(choice), f"preset {choice}")
            st.rerun()
    with c2:
        up = st.file_uploader("YAML or JSON design-space file", type=["yaml", "yml", "json"])
        if up is not None and st.button("Load file"):
            try:
                ui.set_space(load_space_bytes(up.getvalue(), up.name), f"uploaded file {up.name}")
                st.rerun()
            except GpudseError as e:
                st.error(f"{e}. The current space is unchanged.")

feasible = space.feasible_size
m = st.columns(4)
m[0].metric("Design points", f"{space.size:,}", help=f"exact: {space.size} ({space.size:.3e})")
m[1].metric("Feasible points", f"{feasible:,}" if feasible is not None else f"≈{space.feasible_size_estimate:,.0f}",
            help="points satisfying every constraint" + ("" if feasible is not None else " (estimated by probing)"))
m[2].metric("Dimensions", len(space.dimensions), help="a group of parameters varied together is one dimension")
m[3].metric("Parameters", len(space.parameters))
st.caption(f"{space.description}  \nSource: {st.session_state.get('space_origin', '')}")

st.subheader("Parameters")
st.caption("Values use the file syntax: `1, 2, 4` · `9::3::36` (from 9 to 36 in steps of 3) · `pow2: 1..16`. "
           "Rows with the same **group** vary together (Lee & Brooks Table 2). Names are identifiers used in "
           "constraints; **label** is how they are shown.")
version = st.session_state.space_version
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

if st.button("Apply changes", type="primary"):
    try:
        new = space_from_table(pd.DataFrame(edited), cons_text.splitlines(), pd.DataFrame(fixed_edit),
                               name=name, description=space.description, base=space)
    except GpudseError as e:
        st.error(f"{e}. Nothing was changed; correct the table and apply again.")
    else:
        ui.set_space(new, "edited in the dashboard")
        st.rerun()

st.subheader("Download")
d1, d2 = st.columns(2)
d1.download_button("Space as YAML", space.to_yaml(), file_name=f"{space.name}.yaml", mime="application/x-yaml")
d2.download_button("Space as JSON", space.to_json(), file_name=f"{space.name}.json", mime="application/json")
