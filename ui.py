"""Dashboard helpers shared by app.py and pages/: per-session state and the workflow sidebar.

UI only: every computation is a call into gpudse_core. Each browser session has its own
``st.session_state``, so two people in one meeting never see each other's spaces or samples.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from gpudse_core import DesignSpace, load_preset, sample

ROOT = Path(__file__).resolve().parent
EXAMPLE_PRESET = "stargazer"
EXAMPLE_SAMPLES = 300  # Stargazer §6.2 uses 300 samples per application
EXAMPLE_SEED = 1

PAGES = {  # title: (file, icon), in workflow order; drawn by sidebar() (the automatic list is hidden)
    "Home": ("app.py", ":material/home:"),
    "Design space": ("pages/1_Design_space.py", ":material/tune:"),
    "Sampling": ("pages/2_Sampling.py", ":material/scatter_plot:"),
    "Simulations": ("pages/3_Simulations.py", ":material/memory:"),
    "Stepwise fit": ("pages/4_Stepwise_fit.py", ":material/stacked_line_chart:"),
    "Response curves": ("pages/5_Response_curves.py", ":material/show_chart:"),
    "Accuracy": ("pages/6_Accuracy.py", ":material/target:"),
    "Explore": ("pages/7_Explore.py", ":material/travel_explore:"),
    "Ray tracing": ("pages/8_Ray_tracing.py", ":material/light_mode:"),
    "Analytical models": ("pages/9_Analytical_models.py", ":material/functions:"),
}
STAGES = [  # (title, page file or None while the stage is not built yet)
    ("Design space", "pages/1_Design_space.py"),
    ("Sample", "pages/2_Sampling.py"),
    ("Simulate / upload", "pages/3_Simulations.py"),
    ("Stepwise fit", "pages/4_Stepwise_fit.py"),
    ("Analyse", "pages/6_Accuracy.py"),
    ("Explore", "pages/7_Explore.py"),
]


@dataclass(frozen=True)
class Stage:
    title: str
    page: str | None
    icon: str
    status: str


@st.cache_resource(show_spinner=False)
def preset(name: str) -> DesignSpace:
    """Presets are immutable: parse each once per server process."""
    return load_preset(name)


def parse_upload(up) -> dict | None:
    """A small JSON/YAML upload as plain data, read by the core's bounded reader (size, depth, aliases,
    digits, duplicate keys); a problem is shown with st.error and None returned."""
    from gpudse_core.errors import GpudseError
    from gpudse_core.safeload import load_document

    try:
        return load_document(up.getvalue(), up.name)
    except GpudseError as e:
        st.error(f"{e}; upload UTF-8 JSON or YAML")
        return None


def fingerprint(space: DesignSpace) -> str:
    return hashlib.sha256(space.to_json(indent=None).encode()).hexdigest()[:16]


EXAMPLE_KERNEL = "matMul"


def load_example() -> None:
    """Stargazer's space, 300 uniform samples, the built-in simulator's matMul, a fitted model."""
    from gpudse_core.sim.simulator import simulate
    from gpudse_core.model.stepwise import fit_stepwise

    space = preset(EXAMPLE_PRESET)
    set_space(space, "built-in example: Stargazer Table 2")
    samples = sample(space, EXAMPLE_SAMPLES, seed=EXAMPLE_SEED)
    st.session_state.samples = samples
    st.session_state.samples_of = fingerprint(space)
    points = samples.table()
    results = points.join(simulate(points, EXAMPLE_KERNEL, noise=0.01, seed=EXAMPLE_SEED))
    set_results(results, "cycles", f"built-in simulator, {EXAMPLE_KERNEL}")
    st.session_state.model = fit_stepwise(results[list(space.parameter_names) + ["cycles"]], "cycles",
                                          transform="log")
    st.session_state.model_data = results


def init_state() -> None:
    """Open on the built-in example: no simulator, server or upload needed to see every page."""
    if "space" not in st.session_state:
        load_example()


def set_space(space: DesignSpace, origin: str) -> None:
    st.session_state.space = space
    st.session_state.space_origin = origin
    st.session_state.space_version = st.session_state.get("space_version", 0) + 1


def set_results(table, response: str, origin: str) -> None:
    """The results table that feeds the regression pages (a new table drops the old model)."""
    st.session_state.results = table
    st.session_state.results_response = response
    st.session_state.results_origin = origin
    st.session_state.pop("model", None)


def samples_match() -> bool:
    s = st.session_state.get("samples")
    return s is not None and st.session_state.get("samples_of") == fingerprint(st.session_state.space)


def workflow() -> list[Stage]:
    """Each stage with a status line: done, to do, or not in this version yet."""
    space: DesignSpace = st.session_state.space
    samples = st.session_state.get("samples")
    sampled = samples is not None and samples_match()
    results = st.session_state.get("results")
    status = {
        "Design space": (True, f"{space.name}: {space.size:,} points"),
        "Sample": (sampled, f"{len(samples):,} points drawn" if sampled else "to do"),
        "Simulate / upload": (results is not None, f"{len(results):,} results" if results is not None else "to do"),
        "Stepwise fit": (st.session_state.get("model") is not None,
                         f"R² {st.session_state.model.r2:.3f}, {len(st.session_state.model.terms)} terms"
                         if st.session_state.get("model") is not None else "to do"),
        "Analyse": (st.session_state.get("model") is not None, "ready" if st.session_state.get("model") else "to do"),
        "Explore": (st.session_state.get("model") is not None, "ready" if st.session_state.get("model") else "to do"),
    }
    out = []
    for title, page in STAGES:
        done, text = status.get(title, (False, "not in this version yet"))
        icon = ":material/check_circle:" if done else (":material/radio_button_unchecked:" if page
                                                        else ":material/lock:")
        out.append(Stage(title, page, icon, text))
    return out


def page(title: str) -> None:
    """Start every page the same way: config, per-session state (idempotent), sidebar."""
    st.set_page_config(page_title=f"{title} · gpudse", page_icon=":material/memory:", layout="wide")
    init_state()
    sidebar()


def sidebar() -> None:
    space: DesignSpace = st.session_state.space
    samples = st.session_state.get("samples")
    with st.sidebar:
        st.markdown("**gpudse**")
        for title, (path, icon) in PAGES.items():
            st.page_link(path, label=title, icon=icon)
        st.divider()
        st.caption(f"**Space** {space.name} · {space.size:,} points")
        if samples is not None:
            stale = "" if samples_match() else " (from an earlier space)"
            st.caption(f"**Samples** {len(samples):,} points, {samples.method}, seed {samples.seed}{stale}")
        st.caption(st.session_state.get("space_origin", ""))


def trace_table(rows: list[dict], params: list[str]):
    """Stargazer Table 1 as a styled table: candidate scores per parameter (interaction candidates in their
    own column), the chosen term marked green when added and red when rejected, the model and R² after it."""
    import pandas as pd

    recs = []
    for r in rows:
        rec = {"step": r["step"], "kind": r["kind"], "score": {"r2": "R²", "adj_r2": "adj R²", "aic": "AIC",
                                                                "bic": "BIC", "p_value": "p"}.get(r["metric"])}
        for p in params:
            v = r["candidates"].get(p)
            rec[p] = "" if v is None else f"{v:.3f}"  # text: the grid would draw a missing score as "None"
        inter = {k: v for k, v in r["candidates"].items() if ":" in k}
        rec["interactions"] = ", ".join(f"{k} {v:.3f}" for k, v in sorted(inter.items(), key=lambda kv: -kv[1]))
        rec["chosen"] = (r["chosen"] or "–") + (" ✓" if r["accepted"] else " ✗")
        rec["model"] = " + ".join(r["terms"])
        rec["R²"] = r["r2"]
        recs.append(rec)
    df = pd.DataFrame(recs)

    def mark(row):
        styles = [""] * len(row)
        chosen = rows[row.name]["chosen"]
        if chosen in row.index:
            styles[list(row.index).index(chosen)] = ("background-color: #c8e6c9; font-weight: bold"
                                                      if rows[row.name]["accepted"] else "background-color: #ffcdd2")
        return styles

    return df.style.apply(mark, axis=1).format({"R²": "{:.4f}"})


def current_project():
    from gpudse_core.report.project import Project

    samples = st.session_state.get("samples")
    return Project(st.session_state.space, json.loads(samples.to_json()) if samples is not None else None,
                   st.session_state.get("results"), st.session_state.get("results_response"),
                   st.session_state.get("model"), {"space_origin": st.session_state.get("space_origin", "")})


def project_zip() -> bytes:
    from gpudse_core.report.project import save_project

    return save_project(current_project())


def load_project_zip(data: bytes, name: str) -> None:
    """Replace the session's work with a saved project. The core validates every part into a new
    Project first (raising GpudseError with nothing changed); only then is the session swapped."""
    from gpudse_core.report.project import load_project

    proj = load_project(data, name)
    set_space(proj.space, f"project {name}")
    if proj.sample_set is not None:
        st.session_state.samples = proj.sample_set
        st.session_state.samples_of = fingerprint(proj.space)
    if proj.results is not None:
        set_results(proj.results, proj.results_response or "cycles", f"project {name}")
        st.session_state.model_data = proj.results
    if proj.model is not None:
        st.session_state.model = proj.model


def report_html() -> str:
    from gpudse_core.report import figures
    from gpudse_core.explore.scan import response_curve
    from gpudse_core.report.project import html_report

    proj = current_project()
    figs, tables = [], {}
    model = proj.model
    data = st.session_state.get("model_data", proj.results)
    if model is not None and data is not None:
        figs.append(figures.contributions(model))
        first = next(iter(model.bases))
        base = {p.name: p.values[len(p.values) // 2] for p in proj.space.parameters}
        figs.append(figures.response_curve(response_curve(model, data, first, base, proj.space), first, first,
                                           model.response, data))
        figs.append(figures.predicted_vs_observed(model, data))
        from gpudse_core.model.inference import anova

        tables["ANOVA (Lee & Brooks Table 5)"] = anova(model, data)
    val = st.session_state.get("validation")
    if val is not None:
        figs += [figures.error_cdf(val), figures.error_trend(val)]
        tables["Validation: relative errors (fractions)"] = val.summary()
    scan = st.session_state.get("scan")
    if scan is not None:
        tables["Best designs"] = scan.best
    return html_report(proj, figs, tables)


def require_model():
    """The session's fitted model, or a pointer to the Stepwise fit page (and the page stops)."""
    model = st.session_state.get("model")
    if model is None:
        st.info("Fit a model first.")
        st.page_link("pages/4_Stepwise_fit.py", label="Stepwise fit →", icon=":material/stacked_line_chart:")
        st.stop()
    return model


def base_point(space: DesignSpace, key: str) -> dict:
    """A slider per parameter (its middle value by default): the design other parameters are held at."""
    cols = st.columns(min(5, max(1, len(space.parameters))))
    point = {}
    for i, p in enumerate(space.parameters):
        point[p.name] = cols[i % len(cols)].select_slider(f"{p.display}" + (f" ({p.unit})" if p.unit else ""),
                                                          options=list(p.values), value=p.values[len(p.values) // 2],
                                                          key=f"{key}_{p.name}")
    return point


def application_column(results, space: DesignSpace) -> str | None:
    """A text column naming the application of each row (e.g. app, kernel), if the results have one."""
    for c in results.columns:
        if c in space.parameter_names:
            continue
        col = results[c]
        if col.dtype.kind in "OUS" and 1 < col.nunique() <= 30 and c.lower() in ("app", "application", "kernel",
                                                                               "benchmark", "workload"):
            return c
    return None
