"""Simulations page: run the sampled design points through a simulator backend, or upload results.

Thin: the campaign store, backends, runner and upload validation are gpudse_core's (store, campaign,
upload). External simulators and Dask schedulers come only from the server's configuration
(GPUDSE_BACKENDS folder of TOML/YAML files, GPUDSE_DASK_SCHEDULER), never from the browser.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import streamlit as st

import ui
from gpudse_core import GpudseError
from gpudse_core.sim.campaign import AnalyticalBackend, CommandBackend, points_spec, run_campaign
from gpudse_core.sim.simulator import KERNELS, PARAMETERS
from gpudse_core.sim.store import CampaignStore
from gpudse_core.sim.upload import DUPLICATES, read_upload, validate_results

ui.page("Simulations")
st.title("Simulations")
space = st.session_state.space
samples = st.session_state.get("samples")

tab_run, tab_upload = st.tabs(["Run a campaign", "Upload results"])

with tab_run:
    if samples is None or not ui.samples_match():
        st.info("Sample design points of the current space first.")
        st.page_link("pages/2_Sampling.py", label="Sampling →", icon=":material/scatter_plot:")
    else:
        points = samples.table()
        st.caption(f"{len(points):,} sampled points of **{space.name}** ({samples.method}, seed {samples.seed}). "
                   "Finished results are saved as they arrive; a stopped campaign resumes where it left off.")
        backends_dir = Path(os.environ.get("GPUDSE_BACKENDS", ui.ROOT / "backends"))
        external = sorted(p for p in backends_dir.glob("*") if p.suffix.lower() in (".toml", ".yaml", ".yml")) \
            if backends_dir.is_dir() else []
        c1, c2 = st.columns(2)
        kind = c1.radio("Simulator", ["Built-in analytical simulator", "External simulator (configured on the server)"])
        backend = None
        if kind.startswith("Built-in"):
            missing = [p for p in PARAMETERS if p not in points.columns]
            if missing:
                st.error(f"The built-in simulator models Stargazer's space; this space lacks {', '.join(missing)}. "
                         "Load the stargazer preset, or use an external simulator or an upload.")
            else:
                kernel = c2.selectbox("Application (Stargazer Table 4)", list(KERNELS),
                                      index=list(KERNELS).index("matMul"))
                c2.caption(KERNELS[kernel].description)
                noise = c2.slider("Measurement noise σ (log-normal)", 0.0, 0.2, 0.0, 0.01)
                backend = AnalyticalBackend(kernel, noise=noise, seed=int(samples.seed or 0))
        elif not external:
            st.info(f"No external simulator is configured on this server. An administrator describes one in a TOML "
                    f"file (command, config template, metrics, timeout) in {backends_dir} or the folder named by "
                    f"GPUDSE_BACKENDS; see the README.")
        else:
            chosen = c2.selectbox("Simulator description", external, format_func=lambda p: p.name)
            try:
                backend = CommandBackend.from_file(chosen)
            except GpudseError as e:
                st.error(str(e))
        scheduler = os.environ.get("GPUDSE_DASK_SCHEDULER")
        runners = ["Local processes"] + ([f"Dask cluster at {scheduler}"] if scheduler else [])
        r1, r2 = st.columns(2)
        runner = r1.radio("Runner", runners, help="set GPUDSE_DASK_SCHEDULER on the server to offer a Dask cluster")
        workers = r2.slider("Worker processes", 1, max(1, os.cpu_count() or 1), max(1, os.cpu_count() or 1),
                            disabled=runner != "Local processes")
        if "campaign_db" not in st.session_state:  # one store per browser session
            st.session_state.campaign_db = str(Path(tempfile.gettempdir()) / f"gpudse-{uuid.uuid4().hex}.db")
        if backend is not None:
            spec = {**backend.spec(), **points_spec(points)}
            name = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]
            b1, b2 = st.columns([1, 4])
            start = b1.button("Start / resume", type="primary", icon=":material/play_arrow:")
            b2.button("Stop", icon=":material/stop:", help="finished results are kept; Start resumes")
            with CampaignStore(st.session_state.campaign_db, name=name) as store:
                try:
                    store.open(spec, points)
                except GpudseError as e:
                    st.error(str(e))
                    st.stop()
                bar = st.progress(0.0, text="")
                prog = store.progress()
                bar.progress(prog.done / max(prog.total, 1),
                             text=f"{prog.done:,}/{prog.total:,} done, {prog.failed:,} failed")
                if start:
                    t0 = time.perf_counter()

                    def show(p, rate):
                        bar.progress(p.done / max(p.total, 1), text=f"{p.done:,}/{p.total:,} done, {p.failed:,} failed, "
                                                                   f"{p.remaining:,} remaining, {rate:,.0f} points/s")

                    try:
                        prog = run_campaign(store, backend, workers=workers if runner == "Local processes" else None,
                                            scheduler=None if runner == "Local processes" else scheduler,
                                            progress=show)
                    except GpudseError as e:
                        st.error(str(e))
                    else:
                        st.success(f"{prog.done:,} points done in {time.perf_counter() - t0:.1f} s"
                                   + (f"; {prog.failed} failed" if prog.failed else ""))
                table = store.table()
                fails = store.failures()
            m = st.columns(3)
            m[0].metric("Done", f"{prog.done:,}")
            m[1].metric("Failed", f"{prog.failed:,}")
            m[2].metric("Remaining", f"{prog.remaining:,}")
            if len(fails):
                st.warning(f"{len(fails)} point(s) failed after their retries.")
                st.dataframe(fails, width="stretch", height=160)
            if len(table):
                shown = table.drop(columns=["status", "attempts", "error"])
                st.dataframe(shown, width="stretch", height=260)
                if st.button("Use these results for the regression", icon=":material/check:"):
                    ui.set_results(shown, "cycles", f"campaign {name} ({backend.name})")
                    st.success(f"{len(shown):,} results ready for the stepwise fit (response: cycles).")
                st.download_button("Results as CSV", shown.to_csv(index=False), file_name="results.csv",
                                   mime="text/csv")

with tab_upload:
    st.caption(f"Results from GPGPU-Sim, Accel-Sim or any simulator: one row per design point of **{space.name}** "
               "with its parameters and response columns. CSV, Parquet or JSON.")
    up = st.file_uploader("Results file", type=["csv", "parquet", "json"])
    if up is not None:
        try:
            df = read_upload(up.getvalue(), up.name)
        except GpudseError as e:
            st.error(str(e))
        else:
            others = [c for c in df.columns if c not in space.parameter_names]
            c1, c2, c3 = st.columns(3)
            responses = c1.multiselect("Response columns", others, default=[c for c in others if df[c].dtype.kind in "if"])
            snap = c2.radio("Values outside the space", ["reject", "nearest"],
                            format_func=lambda s: {"reject": "reject the row", "nearest": "snap to the nearest"}[s])
            dups = c3.radio("Duplicate points", list(DUPLICATES))
            try:
                rep = validate_results(df, space, responses or None, snap=snap, duplicates=dups)
            except GpudseError as e:
                st.error(f"{up.name}: {e}")
            else:
                st.write(f"Kept **{rep.rows_kept:,}** of {rep.rows_in:,} rows.")
                for p in rep.problems:
                    st.warning(f"{p.kind}: {p}")
                st.dataframe(rep.table, width="stretch", height=240)
                if st.button("Use these results for the regression", key="use_upload", icon=":material/check:"):
                    ui.set_results(rep.table, rep.responses[0], f"uploaded {up.name}")
                    st.success(f"{rep.rows_kept:,} results ready (response: {rep.responses[0]}).")

res = st.session_state.get("results")
if res is not None:
    st.divider()
    st.caption(f"Results for the regression: {len(res):,} rows from {st.session_state.get('results_origin', '')}, "
               f"response {st.session_state.get('results_response')}.")
