"""Simulations page: run the sampled design points through a simulator backend, or upload results.

Thin: the campaign store, backends, runner and upload validation are gpudse_core's (store, campaign,
upload); campaigns run as workspace jobs (progress, Stop, re-attached after a reload) and their
results become the workspace's results stage as soon as they end. A campaign started from the
command line with ``gpudse simulate … --workspace ID`` shows here live. External simulators and
Dask schedulers come only from the server's configuration (GPUDSE_BACKENDS folder of TOML/YAML
files, GPUDSE_DASK_SCHEDULER), never from the browser.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from dashboard import state as ui_state
from dashboard import versions as ui_versions
from dashboard import work as ui_work
from gpudse_core import GpudseError
from gpudse_core.choices import MGPUSIM_BENCHMARKS, MGPUSIM_PARAMETERS
from gpudse_core.csvout import frame_text
from gpudse_core.report.record import upload_note
from gpudse_core.sim.campaign import AnalyticalBackend, CommandBackend, points_spec
from gpudse_core.sim.simulator import KERNELS, PARAMETERS
from gpudse_core.sim.upload import DUPLICATES, read_upload, validate_results
from gpudse_core.workspace import start_campaign



def _mgpusim_backend(points, col):
    """MGPUSim for the mgpusim preset's points: the benchmark, its size, and the binary built once."""
    from gpudse_core.sim import mgpusim

    if not set(points.columns) <= set(MGPUSIM_PARAMETERS):
        st.info(f"MGPUSim takes the parameters of the **mgpusim** preset ({', '.join(MGPUSIM_PARAMETERS)}); these "
                "samples have others. Load the mgpusim preset on the Design space page.", icon=":material/info:")
        return None
    benches = col.multiselect("Benchmarks", MGPUSIM_BENCHMARKS, default=["matmul"], key=f"mgpusim_bench_{w.id}",
                              help="several: each point runs every one; the results have each benchmark's metrics "
                              "and the geometric mean of the times (geomean_kernel_exec_s)")
    size = col.number_input("Problem size (0: each benchmark's default, which fills the R9 Nano's 64 CUs)", 0,
                            1 << 22, 0, key=f"mgpusim_size_{w.id}", disabled=len(benches) != 1)
    timeout = col.number_input("Timeout per run, seconds (0: automatic, scaled with the size)", 0, 30 * 86400, 0,
                               key=f"mgpusim_timeout_{w.id}")
    col.caption("One timing simulation per point and benchmark, up to about 2 CPU minutes each at the default "
                f"sizes. MGPUSim {mgpusim.VERSION} (Sun et al., ISCA 2019).")
    if not benches:
        return None
    try:
        if not mgpusim.binary_path().is_file():
            if not col.button("Build MGPUSim", help="compiles the simulator once with Go (1–2 minutes; needs 'go' "
                              "on the server and the Go module proxy)", disabled=not w.writable):
                return None
            with st.status("Building MGPUSim…") as box:
                mgpusim.build(progress=box.write)
        backend = mgpusim.MgpusimBackend(",".join(benches), size=int(size) if len(benches) == 1 else 0,
                                         timeout=float(timeout), binary=str(mgpusim.build()))
        backend.check_table(points, "the samples")
        for warning in backend.warnings:
            st.warning(ui.plain(warning))
        return backend
    except GpudseError as e:
        st.error(ui.plain(e))
        return None


w = ui.page("Simulations")
st.title("Simulations")
(space_sv,) = ui.need("space")
space = space_sv.value

backends_dir = Path(os.environ.get("GPUDSE_BACKENDS", ui.ROOT / "backends"))
external = ui_work.external_backends()
builtin_missing = [p for p in PARAMETERS if p not in space.parameter_names]
mgpusim_space = set(space.parameter_names) <= set(MGPUSIM_PARAMETERS)
# a space no simulator here can run (not Stargazer's or MGPUSim's, no external backend): the page opens on Upload
no_simulator = bool(builtin_missing) and not mgpusim_space and not external
tab_run, tab_upload = st.tabs(["Run a campaign", "Upload results"],
                              default="Upload results" if no_simulator else "Run a campaign",
                              **ui_state.bound("tab"))  # ?tab= in links

with tab_run:
    running = ui_jobs.job_panel(w, "campaign", "The campaign", rerun=ui_jobs.LATER,
                                rerun_label="Resume it with the simulator chosen below")
    block = w.ready("samples")
    campaigns = w.campaigns()
    if block is not None:
        ui.banner(block, key="fix_samples")
    else:
        samples = ui.read(w, "samples").value
        points = samples.table()
        st.caption(f"{ui.fmt_count(len(points), 'sampled points')} of **{ui.plain(space.name)}** "
                   f"({ui.plain(samples.method)}, seed {ui.plain(samples.seed)}). Finished results are saved as they "
                   "arrive and used as soon as the campaign ends; a stopped campaign resumes where it left off.")
        last = next((c.spec for c in campaigns if c.spec and c.spec.get("backend") == "analytical"), None) or {}
        c1, c2 = st.columns(2)
        kind = c1.radio("Simulator", ["Built-in analytical simulator", "MGPUSim (cycle-level AMD GCN3 GPU)",
                                      "External simulator (configured on the server)"],
                        index=1 if mgpusim_space else 0)
        backend = None
        if kind.startswith("Built-in"):
            missing = [p for p in PARAMETERS if p not in points.columns]
            if missing:
                st.info(f"The built-in simulator models Stargazer's space; **{ui.plain(space.name)}** lacks "
                        f"{ui.plain(', '.join(missing))}, so it cannot simulate these samples. Simulate them "
                        "elsewhere and "
                        "bring the results in on the **Upload results** tab (a CSV with the parameter columns and "
                        "a response column), use an external simulator, or load the stargazer preset.",
                        icon=":material/info:")
            else:
                names = list(KERNELS)
                kernel = c2.selectbox("Application (Stargazer Table 4)", names,
                                      index=names.index(last.get("kernel", "matMul")) if last.get("kernel") in names
                                      else names.index("matMul"), key=f"kernel_{w.id}")
                c2.caption(KERNELS[kernel].description)
                noise = c2.slider("Measurement noise σ (log-normal)", 0.0, 0.2, float(last.get("noise", 0.01)), 0.01,
                                  key=f"noise_{w.id}")
                backend = AnalyticalBackend(kernel, noise=noise, seed=int(samples.seed or 0))
        elif kind.startswith("MGPUSim"):
            backend = _mgpusim_backend(points, c2)
        elif not external:
            st.info(f"No external simulator is configured on this server. An administrator describes one in a TOML "
                    f"file (command, config template, metrics, timeout) in {backends_dir} or the folder named by "
                    f"GPUDSE_BACKENDS; see docs/simulations.md 'Simulation campaigns'.")
        else:
            chosen = c2.selectbox("Simulator description", external, format_func=lambda p: p.name)
            try:
                backend = CommandBackend.from_file(chosen)
            except GpudseError as e:
                st.error(ui.plain(e))
        scheduler = os.environ.get("GPUDSE_DASK_SCHEDULER")
        runners = ["Local processes"] + ([f"Dask cluster at {scheduler}"] if scheduler else [])
        r1, r2 = st.columns(2)
        runner = r1.radio("Runner", runners, help="set GPUDSE_DASK_SCHEDULER on the server to offer a Dask cluster")
        cpus = max(1, os.cpu_count() or 1)
        workers = r2.slider("Worker processes", 1, cpus, cpus, disabled=runner != "Local processes")
        if backend is not None:
            spec = {**backend.spec(), **points_spec(points)}
            digest = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:8]
            name = f"{spec.get('kernel') or spec.get('benchmark') or backend.name} {digest}"
            done_before = next((c for c in campaigns if c.name == name), None)
            label = "Resume" if done_before is not None and done_before.progress.remaining else "Start"
            if done_before is not None and not done_before.progress.remaining:
                st.caption(f"This campaign ({ui.plain(name)}) has finished: "
                           f"{ui.fmt_count(done_before.progress.done, 'points')} done. Its results are listed below.")
            else:
                def start() -> None:
                    local = runner == "Local processes"
                    start_campaign(w, backend, name=name, workers=workers if local else None,
                                   scheduler=None if local else scheduler, adopt=True)

                pressed = st.button(label, type="primary", icon=":material/play_arrow:",
                                    disabled=running or not w.writable)
                if (pressed or (ui_jobs.rerun_wanted(w, "campaign") and not running)) and ui.guarded(start):
                    st.rerun()

    if campaigns:
        st.markdown("**Campaigns in this workspace**")
        results_origin = ui.read(w, "results").origin
        for c in campaigns:
            p = c.progress
            state = c.job.state if c.job is not None else "recorded"
            with st.container(border=True):
                a, b = st.columns([4, 1], vertical_alignment="center")
                kernel = (c.spec or {}).get("kernel") or (c.spec or {}).get("benchmark")
                a.markdown(f"**{ui.plain(c.name)}** · {ui.plain(c.origin)}"
                           + (f" · {ui.plain(kernel)}" if kernel else "")
                           + f" · *{state}*")
                a.progress(p.done / max(p.total, 1), text=f"{ui.fmt_count(p.done)} of {ui.fmt_count(p.total)} points "
                           f"done, {ui.fmt_count(p.failed)} failed")
                in_use = results_origin.startswith(f"campaign {c.name} (")
                if in_use:
                    b.caption(":material/check: results in use")
                elif p.done and not c.running and b.button("Use these results", key=f"adopt_{c.name}",
                                                          disabled=not w.writable) \
                        and ui.guarded(lambda c=c: w.adopt_campaign(c.name), "The campaign's results are in use."):
                    st.rerun()

with tab_upload:
    st.caption(f"Results from GPGPU-Sim, Accel-Sim or any simulator: one row per design point of "
               f"**{ui.plain(space.name)}** "
               f"with its parameters and response columns. CSV, Parquet or JSON, up to "
               f"{ui.upload_cap_mb()} MB. The first results are used as soon as they are read; results in use "
               "are replaced only when you confirm, and earlier versions can be restored under **Versions**.")
    up = ui.uploader("Results file", ["csv", "parquet", "json"], key="results_upload")
    if up is not None:
        try:
            data = ui.upload_bytes(up)
            df = read_upload(data, up.name)
        except GpudseError as e:
            ui.upload_error(up.name, e, "Nothing was changed.")
        else:
            others = [c for c in df.columns if c not in space.parameter_names]
            responses = st.multiselect("Response columns", others,  # full width: every chosen column visible
                                       default=[c for c in others if df[c].dtype.kind in "if"])
            c1, c2, c3 = st.columns(3)
            snap = c2.radio("Values outside the space", ["reject", "nearest"],
                            format_func=lambda s: {"reject": "reject the row", "nearest": "snap to the nearest"}[s])
            dups = c3.radio("Duplicate points", list(DUPLICATES))
            try:
                rep = validate_results(df, space, responses or None, snap=snap, duplicates=dups)
                if not rep.rows_kept:
                    raise GpudseError("no row is left after the checks below")
            except GpudseError as e:
                ui.upload_error(up.name, e, "Nothing was changed.")
                rep = None
            if rep is not None:
                model_response = c1.selectbox("Response to model", rep.responses, key="upload_response")
                sig = (hashlib.sha256(data).hexdigest(), tuple(rep.responses), snap, dups, model_response,
                       space_sv.version)
                used = st.session_state.get("upload_used") == (w.id, sig)
                current = w.get("results")
                if not used and current.value is not None:  # replacing results: say what changes, then ask
                    st.warning(ui_versions.replacement(current, rep.table, model_response, up.name),
                               icon=":material/swap_horiz:")
                    confirmed = st.button("Replace the results", key="upload_replace", type="primary",
                                          disabled=not w.writable)
                else:
                    confirmed = not used  # nothing to lose: the first results are used at once
                if confirmed and w.writable and ui.guarded(
                        lambda: w.set_results(rep.table, model_response, f"uploaded {up.name}", inputs=[space_sv],
                                              note=upload_note(rep))):
                    st.session_state.upload_used = (w.id, sig)
                    st.rerun()  # every part of the page (and the sidebar) from the new version
                if used and rep.failures is not None and w.writable:  # kept where every scan finds them (once)
                    ui.guarded(lambda: w.record_failures(up.name, space.name, rep.failures))
                if used:
                    st.success(f"{ui.fmt_count(rep.rows_kept, 'rows')} of {ui.plain(up.name)} are the results in use "
                               f"(response: {ui.plain(model_response)}).", icon=":material/check:")
                st.write(f"Kept **{ui.fmt_count(rep.rows_kept)}** of {ui.fmt_count(rep.rows_in)} rows"
                         + (f"; **{ui.fmt_count(rep.rows_failed)}** failed configuration"
                            f"{'' if rep.rows_failed == 1 else 's'} kept as failures (never "
                            f"recommended)" if rep.rows_failed else "") + ".")
                # a constant column is a problem only as the response to model; others are noted
                aside = [p for p in rep.problems if p.kind == "constant response" and p.column != model_response]
                for p in rep.problems:
                    if p not in aside:
                        st.warning(f"{p.kind}: {ui.plain(p)}")
                if aside:
                    st.caption(":material/info: One value in every row (not usable as the response): "
                               + ", ".join(f"**{ui.plain(p.column)}**" for p in aside) + ".")

st.divider()
st.subheader("Results in use")
sv = w.get("results")
ui_versions.versions_expander(w, "results")
if sv.value is None:
    st.info("No results yet: run a campaign or upload a file above.", icon=":material/info:")
elif not sv.ok:
    ui.banner(sv.status, key="fix_results", button=False)  # the fix is this page's run or upload
else:
    res = sv.value
    st.caption(f"{ui.fmt_count(len(res.table), 'rows')} from {ui.plain(sv.origin)} (version {sv.version}); response "
               f"**{ui.plain(res.response)}**"
               + (f", application column **{ui.plain(res.app_column)}**" if res.app_column else "")
               + (f". Partial: {ui.plain(sv.note)}." if sv.partial else "."))
    unit_map = {**ui.units(w.get("space").value), res.response: ui.response_unit(res.response)}
    ui.data_table(res.table, units=unit_map, height=260)
    st.download_button("Results as CSV", lambda: frame_text(res.table), file_name="results.csv",
                       mime="text/csv", icon=":material/download:")
    model = w.status("model")
    if model.state == "stale":
        st.info(ui.plain(model.message()), icon=":material/info:")
        ui.link("Stepwise fit", label="Stepwise fit →")
