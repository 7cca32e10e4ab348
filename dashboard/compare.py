"""Runs side by side on the Accuracy page: pick model versions of this workspace or of the others this
browser holds, and overlay them (the overlays and the stored snapshot are
:mod:`gpudse_core.report.compare`'s; this module only draws the picker and the result).

The comparison is an analysis of the workspace (``comparison``), so a reload, a shared link and the
report show the same runs.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from gpudse_core import GpudseError
from gpudse_core.report import compare

from . import frame as ui
from . import state as ui_state


def candidates(w: Any) -> dict[str, tuple[str, int]]:
    """Runs the visitor may pick: 'label' -> (workspace id, model version); this workspace's kept model
    versions first (newest first), then the current model of each other workspace held here."""
    out: dict[str, tuple[str, int]] = {}
    for v in reversed(w.history("model")):
        if not v.removed:
            origin = v.origin if len(v.origin) <= 70 else v.origin[:70].rsplit(", ", 1)[0] + ", …"
            out[f"{w.name} · model v{v.version} ({origin})" + (" · current" if v.head else "")] = (w.id, v.version)
    try:
        others = [i for i in ui_state.workspace_ids() if i.id != w.id]
    except GpudseError:
        others = []
    for info in others[:30]:
        if info.stages.get("model") == "current":
            out[f"{info.name} · current model"] = (info.id, 0)
    return out


def _open(w: Any, ws_id: str) -> tuple[Any, bool]:
    return (w, False) if ws_id == w.id else (ui_state.open_by_id(ws_id), True)


def build(w: Any, picks: list[tuple[str, int]], param: str | None) -> dict:
    """Snapshots of the picked runs (workspace id, model version; 0 = its current model)."""
    runs = []
    for ws_id, version in picks:
        other, close = _open(w, ws_id)
        try:
            runs.append(compare.snapshot(other, version or None, param=param))
        finally:
            if close:
                other.close()
    return compare.comparison(runs, param)


def section(w: Any, space: Any) -> None:
    """The tab: the picker, then the stored comparison's table, notes and overlays."""
    sv = ui.analysis("comparison")  # a Comparison, or None (a damaged one is named)
    stored = sv.value
    options = candidates(w)
    runs_before = {(r.workspace_id, r.version) for r in (stored.runs if stored is not None else ())}
    others_before = {ws_id for ws_id, _ in runs_before if ws_id != w.id}
    chosen_before = [label for label, (ws_id, version) in options.items()
                     if (ws_id, version) in runs_before or (version == 0 and ws_id in others_before)]
    st.caption("Pick two or more fitted models — versions of this workspace's model, or the current model of "
               "another workspace of yours (e.g. BFS and AES, or stepwise and EBM) — to overlay their error "
               "CDFs, accuracy against sample size, R² contributions and response curves. The comparison is "
               "kept in this workspace: a reload or the report shows it as computed.")
    with st.form("compare_runs"):
        picked = st.multiselect("Runs", list(options), default=chosen_before or list(options)[:2],
                                max_selections=compare.MAX_RUNS)
        params = list(space.parameter_names)
        param = st.selectbox("Response curves along", params,
                             index=params.index(stored.param) if stored is not None and stored.param in params else 0)
        go = st.form_submit_button("Compare", type="primary", disabled=not w.writable)
    if go:
        def run() -> None:
            cmp = build(w, [options[p] for p in picked], param)
            w.put_analysis("comparison", cmp, inputs=[], origin=f"{len(cmp.runs)} runs side by side")
        with st.spinner("Collecting the runs…"):
            if ui.guarded(run):
                st.rerun()
    if stored is None:
        st.info("No comparison yet: pick two or more runs and press Compare.", icon=":material/info:")
        return
    st.markdown(f"**{len(stored.runs)} runs side by side** (comparison version {sv.version}: each run as it "
                "was when compared)")
    ui.table(compare.headline_table(stored))
    for note in compare.notes(stored):  # notes quote the runs' labels: workspace names, user text
        st.caption(":material/info: " + ui.plain(note))
    figs = compare.figures(stored)
    for i in range(0, len(figs), 2):
        cols = st.columns(2)
        for col, fig in zip(cols, figs[i:i + 2]):
            ui.chart(fig, col, narrow=True)
