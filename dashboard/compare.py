"""Runs side by side on the Accuracy page: pick model versions of this workspace or of the others this
browser holds, and overlay them (the overlays and the stored snapshot are
:mod:`gpudse_core.report.compare`'s; this module only draws the picker and the result).

The picker lists every run, never silently leaving one out: this workspace's kept model versions, and each
other workspace held here with its current model or why it is not offered (no model yet, a model out of
date, a different design space, a file that cannot be read) and what to do; beside each, the settings
that produced it (model kind, θ, φ, criterion, knots, response scale, fit, the results it was fitted on).

The comparison is an analysis of the workspace (``comparison``), so a reload, a shared link and the
report show the same runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from gpudse_core import GpudseError
from gpudse_core.fmt import fmt_value
from gpudse_core.report import compare

from . import frame as ui
from . import state as ui_state

LISTED = 30  # other workspaces listed in the picker's table (the most recently changed first)
SETTINGS = ("model", "θ", "φ", "criterion", "knots", "response scale", "fit", "data")
PICKED = "workspace · model"  # the picker table's first column (the comparison's own table has "run")
CRITERION = {"ftest": "F-test", "adjr2": "adjusted R²", "aic": "AIC", "bic": "BIC"}


@dataclass(frozen=True)
class Choice:
    """A run the picker lists: offered (``why`` empty) or not, with why and what to do; the settings
    that produced it (:data:`SETTINGS`)."""

    label: str
    workspace_id: str
    version: int  # 0: the other workspace's current model
    why: str = ""
    settings: dict = field(default_factory=dict)
    short: str = ""  # the label in the picker's table, where the settings columns say the rest

    @property
    def offered(self) -> bool:
        return not self.why


def model_settings(model: Any, data: str = "") -> dict[str, str]:
    """The settings that produced a fitted model, one display value per :data:`SETTINGS` column (a
    learner without Algorithm 1's settings shows dashes for them)."""
    s = dict(getattr(model, "settings", None) or {})
    kind = str(getattr(model, "kind", "stepwise"))
    out = dict.fromkeys(SETTINGS, "–")
    out["model"] = kind + (", Stargazer as written" if s.get("reference") else "")
    out["data"] = data or "–"
    if not s:
        return out
    for col, key in (("θ", "theta"), ("φ", "phi")):
        if s.get(key) is not None:
            out[col] = fmt_value(s[key]) + (" × R²" if s.get("threshold_rule") == "relative" else "")
    out["criterion"] = CRITERION.get(str(s.get("criterion")), str(s.get("criterion") or "–"))
    if s.get("knots") is not None:
        out["knots"] = f"{s['knots']}" + (f" ({s['knot_placement']})" if s.get("knot_placement") else "")
    scale = getattr(model, "transform", None) or s.get("response_transform") or "none"
    out["response scale"] = str(scale) + (" (chosen by leave-one-out)" if s.get("response_transform") == "auto" else "")
    out["fit"] = "Huber" if s.get("robust", "none") == "huber" else "least squares"
    return out


_SETTINGS: dict[tuple, dict] = {}  # (workspace id, model version, its creation time): settings (versions never change)


def _settings_of(w: Any, version: int, created: float, data: str) -> dict[str, str]:
    key = (w.id, version, created, data)
    if key not in _SETTINGS:
        if len(_SETTINGS) > 512:
            _SETTINGS.clear()
        try:
            _SETTINGS[key] = model_settings(w.get("model", version).value, data)
        except GpudseError:  # a damaged version: named where it is read; here its settings are unknown
            return {**dict.fromkeys(SETTINGS, "–"), "data": data or "–"}
    return _SETTINGS[key]


def _data(w: Any, info: Any, results: dict) -> str:
    """The results a model version was fitted on, from the stored records (no table read)."""
    ref = info.inputs.get("results")
    if ref is None:
        return ""
    origin = results.get(ref.version, "")
    return f"results v{ref.version}" + (f" ({origin[:60]}{'…' if len(origin) > 60 else ''})" if origin else "")


def _own(w: Any) -> list[Choice]:
    """This workspace's kept model versions, newest first: each offered."""
    results = {v.version: v.origin for v in w.history("results")}
    out = []
    for v in reversed(w.history("model")):
        if v.removed:
            continue
        origin = v.origin if len(v.origin) <= 70 else v.origin[:70].rsplit(", ", 1)[0] + ", …"
        label = f"{w.name} · model v{v.version} ({origin})" + (" · current" if v.head else "")
        out.append(Choice(label, w.id, v.version, settings=_settings_of(w, v.version, v.created, _data(w, v, results)),
                          short=f"{w.name} · model v{v.version}" + (" · current" if v.head else "")))
    return out


def _other(info: Any, params: set[str]) -> Choice:
    """Another workspace's current model: offered, or why not and what to do."""
    label = f"{info.name} · current model"
    state = info.stages.get("model", "missing")
    if state == "missing":
        return Choice(label, info.id, 0, "not offered: it has no model yet (fit one on its Stepwise fit page)")
    try:
        other = ui_state.open_by_id(info.id)
    except GpudseError as e:
        return Choice(label, info.id, 0, f"not offered: it cannot be opened ({e})")
    try:
        head = [v for v in other.history("model") if v.head]
        results = {v.version: v.origin for v in other.history("results")}
        settings = (_settings_of(other, head[0].version, head[0].created, _data(other, head[0], results)) if head
                    else {})
        if state != "current":
            status = other.status("model")
            return Choice(label, info.id, 0, f"not offered: its model is out of date ({status.reason}); refit it "
                                             f"there to compare it", settings)
        space = other.get("space").value
        theirs = set(space.parameter_names) if space is not None else set()
        if params and theirs != params:
            shared = len(theirs & params)
            return Choice(label, info.id, 0, f"not offered: a different design space ({space.name}: "
                                             f"{len(theirs)} parameters, {shared} of them this one's), so its "
                                             f"response curves and terms cannot be overlaid", settings)
        return Choice(label, info.id, 0, settings=settings)
    except GpudseError as e:
        return Choice(label, info.id, 0, f"not offered: its model cannot be read ({e})")
    finally:
        other.close()


def choices(w: Any, space: Any = None) -> tuple[list[Choice], int]:
    """Every run the picker lists — this workspace's kept model versions, then each other workspace held
    here with its current model or why it is not offered — and how many other workspaces were left out."""
    out = _own(w)
    try:
        others = [i for i in ui_state.workspace_ids() if i.id != w.id]
    except GpudseError:
        others = []
    others.sort(key=lambda i: -i.updated)
    params = set(space.parameter_names) if space is not None else set()
    out += [_other(info, params) for info in others[:LISTED]]
    return out, max(0, len(others) - LISTED)


def candidates(w: Any, space: Any = None) -> dict[str, tuple[str, int]]:
    """Runs the visitor may pick: 'label' -> (workspace id, model version; 0 = another's current model)."""
    return {c.label: (c.workspace_id, c.version) for c in choices(w, space)[0] if c.offered}


def run_settings(w: Any, run: Any) -> dict[str, str]:
    """The settings of a compared run's model version (dashes when that version is no longer kept)."""
    try:
        other, close = _open(w, run.workspace_id)
    except GpudseError:
        return dict.fromkeys(SETTINGS, "–")
    try:
        info = next((v for v in other.history("model") if v.version == run.version and not v.removed), None)
        if info is None:
            return dict.fromkeys(SETTINGS, "–")
        results = {v.version: v.origin for v in other.history("results")}
        return _settings_of(other, info.version, info.created, _data(other, info, results))
    except GpudseError:
        return dict.fromkeys(SETTINGS, "–")
    finally:
        if close:
            other.close()


def picker_table(listed: list[Choice]) -> pd.DataFrame:
    """The picker's table: each run, whether it is offered (or why not), and its settings."""
    return pd.DataFrame([{PICKED: c.short or c.label, "offered": "yes" if c.offered else c.why,
                          **{k: c.settings.get(k, "–") for k in SETTINGS}} for c in listed])


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
    listed, left_out = choices(w, space)
    options = {c.label: (c.workspace_id, c.version) for c in listed if c.offered}
    runs_before = {(r.workspace_id, r.version) for r in (stored.runs if stored is not None else ())}
    others_before = {ws_id for ws_id, _ in runs_before if ws_id != w.id}
    chosen_before = [label for label, (ws_id, version) in options.items()
                     if (ws_id, version) in runs_before or (version == 0 and ws_id in others_before)]
    st.caption("Pick two or more fitted models — versions of this workspace's model, or the current model of "
               "another workspace of yours (e.g. BFS and AES, or stepwise and EBM) — to overlay their error "
               "CDFs, accuracy against sample size, R² contributions and response curves. The comparison is "
               "kept in this workspace: a reload or the report shows it as computed.")
    st.dataframe(picker_table(listed), hide_index=True, width="stretch", height=min(400, 38 + 35 * len(listed)),
                 column_config={PICKED: st.column_config.TextColumn(PICKED, width="medium"),
                                "offered": st.column_config.TextColumn("offered", width="medium")})
    skipped = [c for c in listed if not c.offered]
    if skipped or left_out:
        st.caption(":material/info: " + (f"{len(skipped)} run(s) not offered: the **offered** column says why and "
                                         "what to do. " if skipped else "")
                   + (f"{left_out:,} more of your workspaces are not listed (the {LISTED} changed most recently "
                      "are)." if left_out else ""))
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
    table = compare.headline_table(stored)
    settings = pd.DataFrame([run_settings(w, r) for r in stored.runs]).drop(columns=["model", "data"])
    ui.table(pd.concat([table, settings], axis=1))  # the headline numbers, then the settings behind them
    for note in compare.notes(stored):  # notes quote the runs' labels: workspace names, user text
        st.caption(":material/info: " + ui.plain(note))
    figs = compare.figures(stored)
    for i in range(0, len(figs), 2):
        cols = st.columns(2)
        for col, fig in zip(cols, figs[i:i + 2]):
            ui.chart(fig, col, narrow=True)
