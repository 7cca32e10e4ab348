"""Sampling page: uniform-at-random (Stargazer §5.1) or Latin hypercube samples of the current space."""

from __future__ import annotations

import streamlit as st

from dashboard import frame as ui
from dashboard import state as ui_state
from gpudse_core import GpudseError, sample
from gpudse_core.csvout import frame_text
from gpudse_core.report import figures

w = ui.page("Sampling")

st.title("Sample design points")
(space_sv,) = ui.need("space")
space = space_sv.value
st.caption(f"Space **{ui.plain(space.name)}**: {ui.fmt_count(space.size, 'design points')}. Points are drawn without "
           "replacement, uniformly over the feasible points, reproducibly from the seed.")

HOW = {"Number of points": "n", "Fraction of the whole space": "fraction",
       "Fraction of each dimension": "per_dim_fraction"}
# outside the form: which inputs show depends on it (a count, or a fraction of the space or of each dimension)
how = st.radio("How many (Stargazer §5.1)", list(HOW), help=ui.help_for("uar"), horizontal=True,
               **ui_state.bound("how"))  # ?how= in links
with st.form("sample"):
    c2, c3 = st.columns(2)
    n, frac, mode = 300, 0.0003, "count"
    if HOW[how] == "n":
        n = c2.number_input("N (points)", min_value=1, value=300, step=50)
    else:
        frac = c2.number_input("Fraction (0–1]", min_value=0.0, max_value=1.0, value=0.0003, step=0.0001,
                               format="%.6f", help="of the whole space" if HOW[how] == "fraction"
                               else "of each dimension's values")
    if HOW[how] == "per_dim_fraction":
        mode = c2.selectbox("Per-dimension reading", ["count", "subgrid"],
                            help="count: the fraction of each dimension sets how many points are drawn uniformly "
                                 "from the whole space; subgrid: a random sub-grid with that share of each "
                                 "dimension's values")
    method = c3.selectbox("Method", ["uniform", "lhs"], help="lhs: Latin hypercube over the discrete levels")
    seed = c3.number_input("Seed", min_value=0, value=1, step=1)
    go_ = st.form_submit_button("Sample", type="primary", disabled=not w.writable)

if go_:
    kind = HOW[how]
    kwargs = {"n": int(n)} if kind == "n" else {kind: float(frac)}
    try:
        with st.spinner("Sampling…"):
            result = sample(space, **kwargs, per_dim_mode=mode, seed=int(seed), method=method)
        w.set_samples(result, f"{method}, seed {int(seed)}", inputs=[space_sv])
    except GpudseError as e:
        st.error(f"{ui.plain(e)}. Your previous samples are kept.")
    else:
        st.rerun()  # every part of the page (and the sidebar) from the new version

sv = ui.read(w, "samples")  # a damaged stored value: shown with its Drop button, never a crash
if sv.value is None or not sv.ok:
    if sv.value is None:
        st.info("No samples yet: choose how many points and press Sample.", icon=":material/info:")
    else:
        ui.banner(sv.status, key="fix_samples", button=False)  # the form above is the fix: one primary button
    st.stop()
result = sv.value
st.caption(f"Drawn: {ui.fmt_count(len(result), 'points')}, {ui.plain(sv.origin)} (version {sv.version}).")

share = len(result) / (result.feasible_size or result.space_size or 1)
m = st.columns(4)
m[0].metric("Points", ui.fmt_count(len(result)))
m[1].metric("Share of the space", ui.fmt_pct(share))
m[2].metric("Method", result.method)
m[3].metric("Seed", str(result.seed))
if result.replaced:
    st.info(f"{result.replaced} Latin-hypercube rows were duplicates or infeasible and were re-drawn uniformly.")
for note in result.notes:
    st.info(ui.plain(note))

table = result.table(with_index=True)
ui.data_table(table, height=300)

fig = figures.sample_counts(result.points, space.parameters)
st.subheader("Points per value")
st.caption("Uniform sampling gives every value of a parameter about the same count (dashed line); "
           "with a few hundred points the bars scatter around it.")
ui.chart(fig)

d1, d2, d3 = st.columns(3)
d1.download_button("Samples as CSV", lambda: frame_text(result.table()), file_name="samples.csv", mime="text/csv")
d2.download_button("Samples as Parquet", result.to_parquet_bytes, file_name="samples.parquet")
d3.download_button("Samples + request as JSON", result.to_json, file_name="samples.json", mime="application/json")
