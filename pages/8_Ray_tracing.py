"""Ray tracing page (Zatel, paper 002): heatmap -> quantised colours -> K groups -> representative pixels.

Thin: gpudse_core.raytrace does the work (heatmap reading, K-means, gcd downscaling, division, eq. 1-3
selection, eq. 4 speedup, self-check, combining). Heatmaps come from the built-in ray caster or an upload.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from dashboard import work as ui_work
from gpudse_core import GpudseError
from gpudse_core.raytrace.heatmap import colourise, read_heatmap
from gpudse_core.raytrace.result import HeatmapResult
from gpudse_core.raytrace.zatel import DISTRIBUTIONS, counts_from_config, downscale_config, plan
from gpudse_core.report import figures
from gpudse_core.sim.gpgpusim import GpgpuSimConfig

w = ui.page("Ray tracing")
st.title("Ray tracing: representative pixels (Zatel)")
st.caption("Split a frame over K downscaled GPUs and trace only representative pixels of each group, chosen from "
           "a per-pixel cost heatmap (paper 002, Fig. 3). The heatmap is kept in the workspace.")


@st.cache_data(show_spinner=False, max_entries=16)
def run_plan(digest, _cost, _rgb, counts, k_force, clusters, division, chunk, block, distribution, bounds, percent,
             seed):
    """Cached per heatmap (its stored digest) and settings."""
    from gpudse_core.raytrace.heatmap import from_rgb, from_times

    hm = from_rgb(_rgb) if _rgb is not None else from_times(_cost)
    zp = plan(hm, dict(counts), k_force=k_force, clusters=clusters, division=division, chunk=chunk, block=block,
              distribution=distribution, bounds=bounds, percent=percent, seed=seed)
    return zp


heat_sv = ui.analysis("heatmap")  # a HeatmapResult, or None (a damaged one is named)
stored = heat_sv.value
left, right = st.columns([1, 2])
with left:
    sources = ["Built-in ray caster", "Upload a heatmap"]
    uploaded_before = stored is not None and stored.uploaded
    source = st.radio("Heatmap", sources, index=1 if uploaded_before else 0)
    rgb = cost = image = None
    current = False  # the stored heatmap is the cast of the settings shown
    running = ui_jobs.job_panel(w, "raycast", "Ray casting", rerun=ui_jobs.LATER)
    # The radio only says how to make a new heatmap; the one in use is the workspace's until the user
    # traces or uploads another (switching the radio replaces nothing).
    if source == "Built-in ray caster":
        req0 = (stored.request if stored is not None else None) or {"size": 256, "spheres": 24, "boxes": 6, "seed": 3}
        size = st.select_slider("Resolution (pixels per side)", [128, 256, 384, 512, 1024], value=req0["size"])
        spheres = st.slider("Spheres", 1, 60, req0["spheres"])
        boxes = st.slider("Boxes", 0, 20, req0["boxes"])
        scene_seed = st.number_input("Scene seed", 0, 10_000, req0["seed"])
        request = {"size": int(size), "spheres": int(spheres), "boxes": int(boxes), "seed": int(scene_seed)}
        current = stored is not None and stored.request == request and not heat_sv.partial
        if ui_jobs.rerun_wanted(w, "raycast") and ui.guarded(lambda: ui_work.start_raycast(w, **request)):
            st.rerun()
        if not current and not running:
            if not w.writable:
                st.info("This shared workspace holds no ray-traced frame for these settings; make your own copy to "
                        "trace one.", icon=":material/info:")
            elif stored is None:  # nothing to replace: trace the default scene at once
                if ui.guarded(lambda: ui_work.start_raycast(w, **request)):
                    st.rerun()
            elif st.button("Trace the scene", type="primary",
                           help="Renders the scene with these settings; its heatmap replaces the one in use"):
                if ui.guarded(lambda: ui_work.start_raycast(w, **request)):
                    st.rerun()
    else:
        up = ui.uploader("PPM (P3/P6), PNG, NPY or CSV heatmap", ["ppm", "png", "npy", "csv"], key="heatmap_upload")
        if up is not None and not w.writable:
            st.info("This workspace is shared with you read-only; make your own copy to use this heatmap.",
                    icon=":material/info:")
        elif up is not None:
            import hashlib

            try:
                data = ui.upload_bytes(up)
                tag = f"upload {up.name} {hashlib.sha256(data).hexdigest()[:16]}"
                if stored is None or stored.source != tag:
                    hm = read_heatmap(up.name, data)
                    heat_sv = w.put_analysis("heatmap", HeatmapResult(source=tag, cost=hm.cost, rgb=hm.rgb), inputs=[],
                                             origin=f"uploaded {up.name}")
                    st.rerun()
            except GpudseError as e:
                ui.upload_error(up.name, e, "The heatmap in use is unchanged.")
    if stored is not None and not (stored.request is not None and heat_sv.partial):
        rgb, cost, image = stored.rgb, stored.cost, stored.image
        st.caption(f"In use: {ui.plain(heat_sv.origin)}." + ("" if source == "Built-in ray caster" and current else
                                                  " Trace or upload another to replace it."))
    st.subheader("GPU and selection")
    cfg_up = ui.uploader("GPGPU-Sim config (optional: counts and a downscaled copy)", ["config", "txt"],
                         key="gpgpusim_config")
    cfg = None
    if cfg_up is not None:
        try:
            text = ui.upload_bytes(cfg_up).decode("utf-8")
            cfg = GpgpuSimConfig.parse(text)
            counts = counts_from_config(cfg)
            st.caption(f"{counts['sms']} SMs, {counts['mem']} memory partitions from {ui.plain(cfg_up.name)}")
        except UnicodeDecodeError:
            ui.upload_error(cfg_up.name, GpudseError("not UTF-8 text"), "Upload the gpgpusim.config text file.")
            cfg = None
        except GpudseError as e:
            ui.upload_error(cfg_up.name, e, "The counts below are used instead.")
            cfg = None
    if cfg is None:
        c1, c2 = st.columns(2)
        counts = {"sms": c1.number_input("SMs", 1, 1024, 8), "mem": c2.number_input("Memory partitions", 1, 256, 4)}
    force = st.checkbox("Force K")
    k_force = st.number_input("K", 1, 64, 2) if force else None
    clusters = st.slider("Colour clusters k", 2, 12, 5, help=ui.help_for("coldness"))
    division = st.radio("Division", ["fine", "coarse"], horizontal=True, help=ui.help_for("division"))
    c1, c2 = st.columns(2)
    chunk = (c1.select_slider("Chunk width", [8, 16, 32, 64], 32), c2.select_slider("Chunk height", [1, 2, 4, 8], 2))
    block = (c1.select_slider("Block width", [8, 16, 32, 64], 32), c2.select_slider("Block height", [1, 2, 4, 8], 2))
    distribution = st.radio("Distribution", list(DISTRIBUTIONS), horizontal=True, help=ui.help_for("lintmp-exptmp"))
    mode = st.radio("How many pixels", ["Eq. 1 (mean coldness, bounded)", "Constant percentage"])
    if mode.startswith("Eq"):
        bounds = st.slider("Bounds on P", 0.0, 1.0, (0.3, 0.6), 0.05)
        percent = None
    else:
        bounds, percent = (0.3, 0.6), st.slider("Percent of each group", 1.0, 100.0, 10.0, 1.0)
    seed = st.number_input("Selection seed", 0, 10_000, 0)

with right:
    if cost is None:
        if not running:
            st.info("Upload a heatmap or use the built-in ray caster.", icon=":material/info:")
        st.stop()
    try:
        zp = run_plan(w.get("heatmap").digest, cost, rgb, tuple(sorted(counts.items())), k_force, clusters, division,
                      chunk, block, distribution, tuple(bounds), percent, int(seed))
    except GpudseError as e:
        st.error(ui.plain(e))
        st.stop()
    s = zp.summary()
    m = st.columns(4)
    scaled = ", ".join(f"{n} {v} → {s['downscaled'][n]}" for n, v in s["components"].items())
    m[0].metric("K (downscaling)", s["K"], help=ui.help_for("k") + " Here: " + ui.plain(scaled))
    m[1].metric("Pixels traced", ui.fmt_pct(s["traced_percent"] / 100), help=ui.help_for("p-traced"))
    m[2].metric("Speedup (eq. 4)", f"{ui.fmt_num(s['predicted_speedup'], sig=3)}×" if s["predicted_speedup"]
                else "–",
                help="181 · perc^-1.15, fitted for 10 % or more")
    m[3].metric("Self-check error", ui.fmt_pct(s["self_check"]["relative_error"]),
                help="frame cost estimated from the selected pixels vs the heatmap's total")
    for note in s["notes"]:
        st.info(ui.plain(note))
    heat_rgb = rgb if rgb is not None else colourise(cost)
    palette = np.random.default_rng(7).integers(40, 230, size=(int(zp.groups.max()) + 1, 3)).astype(np.uint8)
    # two by two, not four in a row: ~300 px each at 1280 px, near the heatmap's own resolution, so a
    # pixel-fine pattern (the groups of a fine division) is not resampled into moiré
    row1, row2 = st.columns(2), st.columns(2)
    views = [row1[0], row1[1], row2[0], row2[1]]
    views[0].image(heat_rgb, caption="heatmap", width="stretch")
    views[1].image(colourise(1 - zp.quant.coldness[zp.quant.labels]),
                   caption=f"{len(zp.quant.coldness)} quantised colours", width="stretch")
    views[2].image(palette[zp.groups], caption=f"{s['K']} groups ({division})", width="stretch")
    ui.chart(figures.selected_pixels(zp), views[3], narrow=True)  # a legend: which colour is which cluster
    if image is not None:
        st.image((image * 255).astype(np.uint8), caption="the rendered scene", width=260)
    table = pd.DataFrame(s["groups"]).rename(columns={"mean_coldness": "mean coldness", "fraction_target": "P",
                                                      "fraction_traced": "traced"})
    if "mean coldness" in table:  # three significant digits, as in the caption below
        table["mean coldness"] = [float(f"{v:.3g}") for v in table["mean coldness"]]
    ui.table(table, kinds={"P": "fraction", "traced": "fraction", "mean coldness": "number"})
    clusters_df = pd.DataFrame(s["clusters"])
    st.caption("Colour clusters from hottest to coldest: " + ", ".join(
        f"c = {ui.fmt_num(r.coldness, sig=3)} ({ui.fmt_count(r.pixels, 'px')})" for r in clusters_df.itertuples())
               + ". " + ui.help_for("coldness"))
    downscaled = None
    if cfg is not None:
        try:
            downscaled = downscale_config(cfg, s["K"]).to_text()
        except GpudseError as e:
            st.error(f"The downscaled configuration could not be written: {ui.plain(e)}", icon=":material/error:")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for g in range(len(zp.selection.groups)):
            xy = zp.selection.coordinates(g)
            zf.writestr(f"group_{g}.coords", "\n".join(f"{x} {y}" for x, y in xy) + ("\n" if len(xy) else ""))
        zf.writestr("summary.json", json.dumps(s, indent=1))
        if downscaled is not None:
            zf.writestr(f"downscaled_k{s['K']}.config", downscaled)
    st.download_button("Coordinate files, summary" + (" and downscaled config" if downscaled is not None else "")
                       + " (zip)",
                       buf.getvalue(), file_name="zatel_selection.zip", mime="application/zip")
