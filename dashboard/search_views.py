"""The Search page's views of a search history, as optuna-dashboard users expect of a study: the table of
every simulation (no cell reads "None"), parallel coordinates, parameter importance, and two stored
searches side by side. The figures are :mod:`gpudse_core.search.figures`'; the importance is
:mod:`gpudse_core.search.importance`'s; this module only draws them on the page.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from gpudse_core import GpudseError
from gpudse_core import fmt as _fmt
from gpudse_core.model.coverage import coverage_text, interval_fields
from gpudse_core.search import figures
from gpudse_core.search.importance import METHOD, parameter_importance
from gpudse_core.search.result import SearchStudy

from . import frame as ui
from . import state as ui_state

SETTINGS_SHOWN = ("seed", "batch", "initial", "initial_method", "surrogate", "acquisition")
MAX_OTHERS = 30  # other workspaces looked at for a stored search
# the comparison in the address (a copied link or a reload opens it): ?compare=true and ?searches=, the
# picked versions of this workspace's study (another workspace's search is not named in a link)
COMPARE_PARAM, PICKS_PARAM, PICKED_KEY = "compare", "searches", "se_compare"
_CACHE = "_gpudse_search_versions"  # session state: (workspace id, version) -> its study, read once


# ---- the history --------------------------------------------------------------------------------------
def history_frame(study: SearchStudy) -> pd.DataFrame:
    """Every simulation of *study*: what it gave first (in view at 1280 px), then the design."""
    res = study.result()
    response, objective = study.response, study.objective
    surrogates = any(getattr(t, "surrogate", "") for t in res.trials)  # a CLI search run with --surrogate auto
    predicted = any(t.predicted is not None for t in res.trials)
    return pd.DataFrame([{"round": t.round, "model version": t.model_version,
                          response: t.value if t.measured is None else t.measured,
                          **({"objective": t.value} if objective else {}),
                          **({"cost": t.cost} if study.cost else {}),
                          "status": t.status,
                          **(_interval_columns(t) if predicted else {}),
                          # no acquisition value (the initial sample, the stepwise model's designs): missing
                          "acquisition": t.acquisition,
                          **({"model used": t.surrogate} if surrogates else {}),
                          **t.design} for t in res.trials])


def _interval_columns(t: Any) -> dict:
    """The value predicted before simulating, its calibrated interval and whether the value fell inside."""
    f = interval_fields(t)
    return {"predicted": f["predicted"], "lower": f["lower"], "upper": f["upper"],
            "inside": None if f["inside"] is None else ("yes" if f["inside"] else "no")}


def interval_note(study: SearchStudy) -> None:
    """How many simulated values fell inside the intervals their proposals carried (nothing before any)."""
    covered = coverage_text(study.trials)
    if covered:
        st.caption(f"Each design a model proposed carries the value it predicted and a calibrated interval, made "
                   f"before it was simulated (\"predicted\", \"lower\", \"upper\"; \"inside\": whether the "
                   f"simulated value fell in it): {ui.plain(covered)}. docs/search.md, \"Intervals on proposals\".")


def history_table(table: pd.DataFrame, space: Any) -> None:
    """The history as a sortable grid; a column with missing cells reads ``–`` there (gpudse_core.fmt)."""
    units = ui.units(space)
    ui.data_table(_fmt.missing_as_text(table, units), units=units)


# ---- parallel coordinates and importance --------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner=False)
def _importance(ws_id: str, version: int, _study: SearchStudy) -> Any:
    return parameter_importance(_study)


def explore_views(ws_id: str, version: int, study: SearchStudy, live: bool) -> None:
    """Once the search has ended or stopped: parallel coordinates of the successful simulations and
    parameter importance (a forest fitted on the history: computed once per stored version)."""
    ok = [t for t in study.trials if t.status == "ok"]
    if len(ok) < 2:
        return
    if live:  # a WebGL chart redrawn every few seconds slowed the live page (and its browser) down
        st.caption("Parallel coordinates and parameter importance appear when the search ends or is stopped.")
        return
    st.subheader("Parallel coordinates")
    st.caption("One line per successful simulation across every parameter and the value optimised, coloured by "
               "that value; drag along an axis to keep a range (failed simulations are left out).")
    ui.chart(figures.parallel_coordinates(study))
    st.subheader("Parameter importance")
    imp = _importance(ws_id, version, study)
    if imp is None:
        st.caption("Needs ten successful simulations of parameters that vary.")
        return
    st.caption(f"Method: {METHOD} (Hutter et al. 2014's fANOVA decomposition, first-order terms; "
               f"{ui.fmt_count(imp.trials, 'simulations')}). Interactions are attributed to no parameter.")
    ui.chart(figures.importance_bars(imp))


# ---- two searches side by side ------------------------------------------------------------------------
def _key(study: SearchStudy) -> str:
    """A study's identity: its settings but for what a resume may change (budget, batch)."""
    return json.dumps({k: v for k, v in study.settings.items() if k not in ("budget", "batch")}, sort_keys=True,
                      default=str)


def _describe(study: SearchStudy) -> str:
    return f"{study.goal} {figures.valued(study)}, {ui.fmt_count(len(study.trials), 'simulations')}"


def candidates(w: Any) -> dict[str, tuple[str, int]]:
    """Stored searches the visitor may pick: label -> (workspace id, version; 0 = its current search).
    This workspace's kept versions, the newest of each study (a running search stores a version every
    few seconds), then the current search of each other workspace held here."""
    out: dict[str, tuple[str, int]] = {}
    seen: set[str] = set()
    for v in reversed(w.history("search")):
        if v.removed:
            continue
        study = _kept(w, v.version)
        if study is None or _key(study) in seen:
            continue
        seen.add(_key(study))
        label = f"{w.name} · search v{v.version} ({_describe(study)})" + (" · current" if v.head else "")
        out[label] = (w.id, v.version)
    try:
        others = [i for i in ui_state.workspace_ids() if i.id != w.id]
    except GpudseError:
        others = []
    for info in others[:MAX_OTHERS]:
        if info.stages.get("search") in ("current", "stale"):
            out[f"{info.name} · current search ({info.id[:6]}…)"] = (info.id, 0)
    return out


def linked_picks(ws_id: str, options: dict[str, tuple[str, int]]) -> list[str]:
    """The labels of the address's ``?searches=`` (this workspace's versions, comma-separated) that are
    among *options*, at most two; anything else in it is ignored."""
    raw = str(st.query_params.get(PICKS_PARAM) or "")[:100]
    by_version = {v: label for label, (i, v) in options.items() if i == ws_id}
    out = []
    for part in raw.split(","):
        label = by_version.get(int(part)) if part.strip().isdigit() and len(part.strip()) < 10 else None
        if label and label not in out:
            out.append(label)
    return out[:2]


def _kept(w: Any, version: int) -> SearchStudy | None:
    """A kept version of this workspace's study, read once per session (a version never changes)."""
    cache = st.session_state.setdefault(_CACHE, {})
    key = (w.id, version)
    if key not in cache:
        if len(cache) >= 4 * MAX_OTHERS:
            cache.clear()
        cache[key] = load(w, w.id, version)
    return cache[key]


def load(w: Any, ws_id: str, version: int) -> SearchStudy | None:
    """The stored study (None when it is gone or damaged)."""
    try:
        if ws_id == w.id:
            value = w.get("search", version or None).value
        else:
            with ui_state.open_by_id(ws_id) as other:
                value = other.get("search", version or None).value
    except GpudseError:
        return None
    return value if isinstance(value, SearchStudy) and value.trials else None


def summary(labels: list[str], studies: list[SearchStudy]) -> pd.DataFrame:
    """Goal, budget, best and settings of each study, one row each."""
    rows = []
    for label, s in zip(labels, studies):
        best = s.best()
        rows.append({"search": label, "goal": s.goal, "optimised": figures.valued(s),
                     "budget": s.settings.get("budget"), "simulated": len(s.trials),
                     "failed": s.result().failed, "best": None if best is None else best.value,
                     "best design": "" if best is None else ", ".join(f"{k} = {v}" for k, v in best.design.items()),
                     **{k.replace("_", " "): s.settings.get(k) for k in SETTINGS_SHOWN},
                     "stopped": s.stopped or "running", "source": s.source})
    return pd.DataFrame(rows)


def side_by_side(w: Any) -> None:
    """Pick two stored searches: their best-so-far curves on one chart and their settings in a table."""
    st.subheader("Two searches side by side")
    if not st.toggle("Compare two stored searches", **ui_state.bound(COMPARE_PARAM),  # ?compare= in links
                     help="reads the searches this workspace keeps (and your other workspaces' current ones)"):
        return  # reading every kept study costs seconds on a large history: only when asked
    options = candidates(w)
    if len(options) < 2:
        st.caption("Needs two stored searches: run another search here (other settings, seed or kernel) or in "
                   "another of your workspaces.")
        return
    labels = list(options)
    if PICKED_KEY not in st.session_state:  # first drawn: the address's picks, else the two newest
        st.session_state[PICKED_KEY] = linked_picks(w.id, options) or labels[:2]
    else:  # a label a new search renamed (no longer "· current") or another workspace's gone: dropped
        st.session_state[PICKED_KEY] = [p for p in st.session_state[PICKED_KEY] if p in options]
    picked = st.multiselect("Searches", labels, max_selections=2, key=PICKED_KEY,
                            help="this workspace's stored searches (the newest version of each), and the current "
                                 "search of your other workspaces")
    ui_state.to_url(PICKS_PARAM, ",".join(str(options[p][1]) for p in picked if options[p][0] == w.id) or None)
    if len(picked) < 2:
        st.caption("Pick two searches.")
        return
    studies = [_kept(w, v) if i == w.id and v else load(w, i, v) for i, v in (options[p] for p in picked)]
    if any(s is None for s in studies):
        st.warning("A picked search is no longer stored (or cannot be read); pick another.", icon=":material/warning:")
        return
    valued = {(figures.valued(s), s.objective, s.goal) for s in studies}
    if len(valued) > 1:
        st.caption(":material/info: The two searches optimise different things ("
                   + ui.plain("; ".join(f"{g} {v}" + (f" = {o}" if o else "") for v, o, g in sorted(valued)))
                   + "): their curves share an axis, not a meaning.")
    if any(s.goal in ("min", "max") for s in studies):
        ui.chart(figures.best_so_far(picked, studies))
    else:
        st.caption("Neither search seeks a best design (accuracy, pareto): no best-so-far curve.")
    ui.table(summary(picked, studies), kinds={"budget": "count", "seed": "count", "batch": "count",
                                              "initial": "count"})
