"""Dashboard helpers shared by app.py and pages/: the page frame, banners for stale or missing inputs,
number formatting and small widgets.

UI only: every computation is a call into gpudse_core, and every piece of pipeline data comes from
the session's workspace (:mod:`dashboard.state`), never from ``st.session_state``. A page asks for the
stages it shows with :func:`need`; when one is stale or missing the page shows a banner with the
reason and the one action that fixes it, as a button, and stops — it never shows an old number as
current, and never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from gpudse_core import DesignSpace, GpudseError, load_preset
from gpudse_core import fmt as _fmt
from gpudse_core.report import glossary as _glossary
from gpudse_core.report import plaintext as _plaintext
from gpudse_core.report import trace as _trace
from gpudse_core.workspace import stages

from . import changes as ui_changes
from . import state as ui_state

ROOT = Path(__file__).resolve().parent.parent  # the checkout: app.py, pages/

PAGES = {  # title: (file, icon), in workflow order; drawn by sidebar() (the automatic list is hidden)
    "Home": ("app.py", ":material/home:"),
    "Design space": ("pages/1_Design_space.py", ":material/tune:"),
    "Sampling": ("pages/2_Sampling.py", ":material/scatter_plot:"),
    "Simulations": ("pages/3_Simulations.py", ":material/memory:"),
    "Stepwise fit": ("pages/4_Stepwise_fit.py", ":material/stacked_line_chart:"),
    "Response curves": ("pages/5_Response_curves.py", ":material/show_chart:"),
    "Accuracy": ("pages/6_Accuracy.py", ":material/target:"),
    "Explore": ("pages/7_Explore.py", ":material/travel_explore:"),
    "Search": ("pages/10_Search.py", ":material/route:"),
    "Ray tracing": ("pages/8_Ray_tracing.py", ":material/light_mode:"),
    "Analytical models": ("pages/9_Analytical_models.py", ":material/functions:"),
}
STAGE_PAGE = {"space": "Design space", "samples": "Sampling", "results": "Simulations", "model": "Stepwise fit",
              "validation": "Accuracy", "true_error": "Accuracy", "scan": "Explore", "heatmap": "Ray tracing",
              "search": "Search"}
PIPELINE = ("space", "samples", "results", "model")  # the base stages, in order
STAGE_TITLE = stages.TITLES
stage_title = stages.title  # a stage or analysis as a reader names it (never the storage key 'true_error')
STATE_ICON = {"current": ":material/check_circle:", "stale": ":material/warning:",
              "missing": ":material/radio_button_unchecked:"}


# ---- the page frame ------------------------------------------------------------------------------
def configure(title: str) -> None:
    present = presenting()
    st.set_page_config(page_title=f"{title} · gpudse", page_icon=str(ROOT / "dashboard" / "assets" / "gpudse.png"),
                       layout="wide", initial_sidebar_state="collapsed" if present else "auto")
    if present:
        st.html(f"<style>{PRESENT_CSS}</style>")


# ---- presentation mode: a projector at 1280×800 or 1920×1080 ----------------------------------------
PRESENT_PARAM = "present"  # ?present=1 in the address: a link that opens in presentation mode
# Streamlit sizes its type in rem: a larger root size scales the text, widgets and tables together;
# the page keeps less padding, and on a 1920-px screen the type grows again
PRESENT_CSS = """
html{font-size:19px}
@media (min-width:1800px){html{font-size:23px}}
.block-container,[data-testid="stMainBlockContainer"]{padding-top:2.2rem;padding-left:2rem;padding-right:2rem;
  max-width:100%}
"""
PRESENT_FONT = 18  # chart text in presentation mode (style.FONT_SIZE otherwise)


def presenting() -> bool:
    """Presentation mode: on when the address says ``?present=1`` or the sidebar's toggle is on; the
    toggle writes the address, so a reload and every page link keep it."""
    ss = st.session_state
    if "_present" not in ss:
        ss["_present"] = st.query_params.get(PRESENT_PARAM) == "1"
    return bool(ss["_present"])


def _toggle_present() -> None:
    on = bool(st.session_state.get("present_toggle"))
    st.session_state["_present"] = on
    if on:
        st.query_params[PRESENT_PARAM] = "1"
    else:
        st.query_params.pop(PRESENT_PARAM, None)


def link_params(w=None) -> dict:
    """The query parameters every page link carries: the workspace, and presentation mode when on."""
    out = {"ws": (w or ws()).id}
    if presenting():
        out[PRESENT_PARAM] = "1"
    return out


def page(title: str):
    """Start every page the same way: config, the session's workspace, the sidebar."""
    configure(title)
    try:
        w = ui_state.bind()
    except ui_state.Gone as e:
        _gone(str(e))
    except GpudseError as e:  # a budget reached (LimitError), a damaged or unreadable workspace file
        _refused(e)
    sidebar(w)
    changed = ui_changes.note(w)  # another tab's or session's changes since this session last drew the page
    st.session_state[_DAMAGED_SHOWN] = set()
    _damaged(w)
    if not w.writable:
        with st.container(border=True):
            c1, c2 = st.columns([3, 1.2], vertical_alignment="center")
            c1.markdown(f":material/visibility: **Shared with you read-only**: *{plain(w.name)}*. You can look at "
                        "everything; to change anything, make your own copy (the original stays as it is).")
            if c2.button("Make my own copy", type="primary", key="fork_top",
                         width="stretch") and guarded(lambda: ui_state.fork(w)):
                st.session_state.setdefault("_flash", []).append(
                    ("success", f"This is your own copy, *{plain(ui_state.current().name)}*: changes go here; the "
                                "original is unchanged. Its address is in the browser's address bar."))
                st.rerun()
    ui_state.flush_cookies()
    for kind, text in st.session_state.pop("_flash", []):
        getattr(st, kind)(text)
    ui_changes.notice(changed)
    ui_changes.watch()
    return w


_DAMAGED_SHOWN = "_gpudse_damaged_shown"  # stages this run has shown as damaged (each once: one Drop button)


def _damaged(w) -> None:
    """A stored stage whose record or value cannot be read: which one, and (for the owner) a button to
    drop it; every other stage and page keeps working. A value is known to be damaged once a read of it
    failed (:func:`read`, :func:`need`), so this runs at the top of a page and again after such a read."""
    shown = st.session_state.setdefault(_DAMAGED_SHOWN, set())
    for stage, why in w.damaged().items():
        if stage in shown:
            continue
        shown.add(stage)
        st.error(plain(why), icon=":material/report:")
        if w.writable and st.button(f"Drop the damaged {stage_title(stage)}", key=f"drop_damaged_{stage}",
                                    icon=":material/delete:") and guarded(lambda s=stage: w.drop_damaged(s)):
            st.rerun()


def stored(w, stage: str) -> Any:
    """The stage's stored version (a StageValue; its value None when there is none), or None when it
    cannot be read — damaged, or not what gpudse writes: the damaged banner, with
    the owner's Drop button, is shown, and the page goes on without it (:func:`read` stops instead)."""
    try:
        return w.get(stage)
    except GpudseError as e:
        _damaged(w)
        if stage not in w.damaged():
            st.error(plain(e))
        return None


def analysis(stage: str):
    """The stored analysis *stage* as a StageValue whose value is its registered class
    (:mod:`gpudse_core.workspace.results`) or None: a damaged stored value is named (with the offer to
    drop it, once per run) and given as missing, so the page offers to compute it again instead of failing."""
    from gpudse_core.workspace import Damaged
    from gpudse_core.workspace.stages import StageValue, missing

    w = ws()
    sv = stored(w, stage)
    if sv is None:  # not readable at all: named by stored()
        return StageValue(stage, None, 0, missing(stage))
    if not isinstance(sv.value, Damaged):
        return sv
    _damaged(w)  # the workspace now lists it as damaged (Workspace.damaged)
    return type(sv)(stage, None, 0, missing(stage))


def flash(kind: str, text: str) -> None:
    """A message (st.warning, st.success …) shown at the top of the next run, after a st.rerun()."""
    st.session_state.setdefault("_flash", []).append((kind, text))


def _gone(message: str) -> None:
    st.error(f"This link does not open a workspace here: {plain(message)}.")
    if st.button("Start a new workspace with the built-in example", type="primary"):
        st.query_params.clear()
        if guarded(lambda: ui_state.switch_to(ui_state.new_example())):
            st.rerun()
    st.stop()


def _refused(e: GpudseError) -> None:
    """The page when no workspace can be opened or made for this visit: why, and what to do."""
    from gpudse_core.limits import LimitError

    if isinstance(e, LimitError):
        st.error("This server cannot make a new workspace for you right now.", icon=":material/block:")
    else:
        st.error("This workspace cannot be opened.", icon=":material/error:")
    st.text(str(e))
    ui_state.flush_cookies()
    st.stop()


def ws():
    """The session's workspace."""
    return ui_state.current()


def editable() -> bool:
    return ws().writable


def link(title: str, label: str | None = None, icon: str | None = None, **kw: Any) -> None:
    path, default_icon = PAGES[title]
    st.page_link(path, label=label or title, icon=icon or default_icon, query_params=link_params(), **kw)


def go(title: str) -> None:
    st.switch_page(PAGES[title][0], query_params=link_params())


def sidebar(w) -> None:
    heads = w.overview()
    with st.sidebar:
        st.markdown("**gpudse**")
        for title, (path, icon) in PAGES.items():
            st.page_link(path, label=title, icon=icon, query_params=link_params(w))
        st.session_state["present_toggle"] = presenting()
        st.toggle("Presentation mode", key="present_toggle", on_change=_toggle_present,
                  help="For a projector: larger type, the sidebar folded, charts sized for the screen. "
                       "The address gets ?present=1: a link that opens this way.")
        st.divider()
        st.caption(f"**Workspace** {plain(w.name)}" + ("" if w.writable else " · read-only"))
        for stage in ("space", "samples", "results", "model"):
            status = heads[stage]
            st.caption(f"{STATE_ICON[status.state]} **{STAGE_TITLE[stage]}** {stage_summary(w, stage)}"
                       + ("" if status.ok or status.state == "missing" else " · *out of date*"))


def stage_summary(w, stage: str) -> str:
    """One line about a stage's current version: what it holds (counts from the stored value), as
    Markdown (the user's names in it through :func:`plain`)."""
    try:
        sv = w.get(stage)
    except GpudseError:  # a damaged stored value: the page's banner names it and offers to drop it
        return "cannot be read (damaged)"
    v = sv.value
    if v is None:
        return "none yet"
    if stage == "space":
        return f"{plain(v.name)} · {fmt_count(v.size, 'points')}"
    if stage == "samples":
        return f"{fmt_count(len(v), 'points')}, {v.method}" + (f", seed {v.seed}" if v.seed is not None else "")
    if stage == "results":
        return f"{fmt_count(len(v.table), 'rows')} of {plain(v.response)}" + (" (partial)" if sv.partial else "")
    if stage == "model":
        # led by an out-of-sample error (or the note that the fit interpolates), never by R²
        head = headline(w, sv)
        what = (fmt_count(len(v.terms), "terms") if hasattr(v, "terms")
                else plain(v.summary()) if hasattr(v, "summary") else type(v).__name__)
        return f"{what}, {head.text(short=True)}" if head is not None else what
    return ""


def headline(w, model_sv=None):
    """The model's headline (gpudse_core.model.headline): leave-one-out or validation error, or the
    note that the fit interpolates; None when the data it was fitted on are not kept."""
    from gpudse_core.workspace import Damaged
    from gpudse_core.workspace.provenance import model_headline

    sv = model_sv or w.get("model")
    if sv.value is None:
        return None
    val = w.get("validation")
    ref = val.inputs.get("model") if val.value is not None and not isinstance(val.value, Damaged) and val.ok else None
    validation = val.value if ref is not None and ref.version == sv.version else None
    ref_results = sv.inputs.get("results")
    key = (w.id, sv.digest, ref_results.digest if ref_results else None, val.digest if validation is not None else None)
    if key not in _HEADLINES:  # the sidebar asks on every page: remembered per stored versions
        if len(_HEADLINES) > 256:
            _HEADLINES.clear()
        try:
            _HEADLINES[key] = model_headline(w, sv, validation)
        except GpudseError:
            return None
    return _HEADLINES[key]


_HEADLINES: dict[tuple, object] = {}


# ---- user text: THE safe renderer (gpudse_core.report.plaintext) -------------------------------------
def plain(text: Any) -> str:
    """User-supplied text (names, descriptions, labels, origins, file names, error messages quoting them)
    for any Markdown context: shown as typed, never an image, a link or formatting."""
    return _plaintext.markdown(text)


def chart_text(text: Any) -> str:
    """User-supplied text for a chart's label or title: no tag Plotly would interpret."""
    return _plaintext.chart(text)


# ---- numbers and charts: THE formatter and chart style of gpudse_core.report -----------------------
def fmt_num(x: Any, unit: str | None = None, sig: int = 4) -> str:
    return _fmt.fmt_number(x, unit, sig)


def fmt_count(n: Any, unit: str | None = None) -> str:
    return _fmt.fmt_count(n, unit)


def fmt_pct(fraction: Any) -> str:
    return _fmt.fmt_percent(fraction)


def fmt_r2(x: Any) -> str:
    return _fmt.fmt_r2(x)


def fmt_duration(seconds: float) -> str:
    return _fmt.fmt_duration(seconds)


NARROW_TITLE = 26  # characters per title line in a half-width column at 1280 px (measured in Chromium)


def chart(fig, where=None, narrow: bool = False, **kw: Any) -> None:
    """A figure of gpudse_core.report.figures as drawn (its own style: Streamlit's theme left out);
    *narrow* (a chart in a column) wraps the title shorter so it is not clipped."""
    from gpudse_core.report import style

    text = fig.layout.title.text if fig.layout.title is not None else None
    present = presenting()
    if present:  # larger chart text; the title wraps sooner as its letters grow
        fig.update_layout(font_size=PRESENT_FONT, title_font_size=PRESENT_FONT + 3)
    width = int(NARROW_TITLE * (0.8 if present else 1)) if narrow else int(style.TITLE_WRAP * (0.8 if present else 1))
    if text and (narrow or present) and len(text.replace("<br>", " ")) > width:
        fig.layout.title.text = style.wrap(text.replace("<br>", " "), width)
        style.apply(fig, one_entry_per_group=False)  # room above the plot; legend entries as the figure set them
    style.toolbar_room(fig)
    if present and fig.layout.height is not None:  # a projector's 800 px: no chart taller than the screen
        fig.update_layout(height=min(int(fig.layout.height * 1.1), 560))
    kw.setdefault("config", {"displaylogo": False})
    (where or st).plotly_chart(fig, width="stretch", theme=None, **kw)


def table(df, where=None, units: dict | None = None, kinds: dict | None = None, **kw: Any) -> None:
    """A table of results for reading: every number through the formatter, units in the headers."""
    (where or st).dataframe(_fmt.format_table(df, units, kinds), hide_index=True, width="stretch", **kw)


def data_table(df, where=None, units: dict | None = None, **kw: Any) -> None:
    """A table of data to sort and scroll (samples, results): numbers kept, shown with separators."""
    config = {c: st.column_config.NumberColumn(_fmt.header(str(c), (units or {}).get(c)), format=f)
              for c, f in _fmt.column_formats(df, units).items()}
    (where or st).dataframe(_fmt.round_for_display(df), width="stretch", column_config=config, **kw)


def units(space) -> dict[str, str]:
    return _fmt.space_units(space)


def response_unit(response: str) -> str | None:
    """The unit of a response column when its name says it (cycles), for the formatter."""
    return _fmt.response_unit(response)


def anova_units(model) -> dict[str, str]:
    """Units of the ANOVA table's sums of squares: the response's unit squared on the model's scale."""
    u = _fmt.squared_unit(_fmt.response_unit(model.response), getattr(model, "transform", "none"))
    return {"partial_ss": u, "ms": u} if u else {}


def help_for(term: str) -> str:
    """The glossary's one-line help for a term of the papers (θ, φ, knots, coldness …)."""
    return _glossary.help_text(term)


# ---- banners: stale or missing inputs -------------------------------------------------------------
def banner(status, fix: Callable[[], Any] | None = None, key: str = "fix", button: bool = True) -> None:
    """The reason a stage cannot be shown and the one action that fixes it, as a button (no button
    where the page itself is the fix)."""
    box = st.info if status.state == "missing" else st.warning
    box(plain(status.message()), icon=":material/info:" if status.state == "missing" else ":material/warning:")
    if not button:
        return
    action = fix or default_fix(status)
    stage = status.fix or status.stage
    writes = fix is not None or (status.state == "stale" and stage in ("samples", "model"))
    if st.button(status.action, type="primary", key=key, disabled=writes and not editable(),
                 icon=":material/build:"):
        try:
            action()
        except GpudseError as e:
            st.error(plain(e))
            return
        st.rerun()


def read(w, stage: str, version: int | None = None):
    """``w.get(stage)`` for a page: a stored value that cannot be read (damaged, forged) is shown as
    damaged with its Drop button, and the page stops there instead of failing."""
    try:
        return w.get(stage, version)
    except GpudseError as e:
        _damaged(w)
        if stage not in w.damaged():
            st.error(plain(e))
        st.stop()


def need(*stages: str, fixes: dict[str, Callable[[], Any]] | None = None) -> tuple:
    """The current values of *stages*, or the banner of the first one that is not (and the page stops)."""
    w = ws()
    block = w.ready(*stages)
    if block is None:
        try:
            return w.require(*stages)
        except GpudseError as e:  # changed between the two reads: show it like any other stale input
            block = getattr(e, "status", None)
            if block is None:  # a damaged stored value: named, with its Drop button
                _damaged(w)
                if not set(stages) & set(w.damaged()):
                    st.error(plain(e))
                st.stop()
    banner(block, (fixes or {}).get(block.stage))
    st.stop()


def default_fix(status) -> Callable[[], Any]:
    """What the banner's button does: redo the stage in place when the earlier settings say how
    (sample again, refit), else open the page that makes it."""
    stage = status.fix or status.stage
    if stage == "samples" and status.state == "stale":
        return lambda: resample() or go("Sampling")
    if stage == "model" and status.state == "stale":
        return refit
    return lambda: go(STAGE_PAGE.get(stage, "Home"))


def resample() -> bool:
    """Draw the samples again on the current space with the previous request; False when there is none."""
    from gpudse_core import sample

    w = ws()
    prev = w.get("samples").value
    if prev is None:
        return False
    (space,) = w.require("space")
    req = prev.request or {}
    kw = {k: req[k] for k in ("n", "fraction", "per_dim_fraction") if k in req} or {"n": len(prev)}
    new = sample(space.value, **kw, per_dim_mode=req.get("per_dim_mode", "count"), seed=prev.seed,
                 method=prev.method)
    w.set_samples(new, f"{prev.method}, seed {prev.seed} (sampled again for the new design space)", inputs=[space])
    return True


def refit() -> None:
    """Fit the model again on the current results with the settings of the model it replaces."""
    w = ws()
    prev = w.get("model").value
    if prev is None or not hasattr(prev, "settings"):
        go("Stepwise fit")
    results = w.get("results").value
    response = prev.response if results is not None and prev.response in results.table.columns else None
    settings = prev.settings or {}
    fit_model(settings, response=response, origin_suffix=" (refitted on new results)")


def fit_request(settings: dict) -> tuple[str, str | None, dict]:
    """The core fit's arguments for the fit page's *settings*: see ``registry.stepwise_request``."""
    from gpudse_core.model.registry import stepwise_request

    return stepwise_request(settings)


def fit_model(settings: dict, params: Sequence[str] | None = None, origin: str = "", callback=None,
              response: str | None = None, origin_suffix: str = ""):
    """Fit Algorithm 1 on the current results with *settings* (estimator parameters) and store it —
    or, when a kept model version was fitted from the same results and settings, make that one current
    (gpudse_core.workspace.fits); the outcome's ``stored`` is the model's StageValue."""
    from gpudse_core.workspace.fits import fit_stepwise_into

    w = ws()
    space, results = w.require("space", "results")
    params = list(params or space.value.parameter_names)
    return fit_stepwise_into(w, results, settings, params, response=response, callback=callback,
                             origin=lambda m: (origin or describe_fit(settings, m.transform)) + origin_suffix)


def describe_fit(settings: dict, chosen: str | None = None) -> str:
    """The model's origin line: Algorithm 1 and the settings a reader needs (θ, φ, knots, transform, and
    whether the robust default's level cells, one-row guard and count pairs were on)."""
    from gpudse_core.model.stepwise import PAPER_SETTINGS

    paper = bool(settings.get("reference"))  # Stargazer 1.0; its θ, φ, rule and transform said below
    parts = [f"θ = {settings.get('theta')}", f"φ = {settings.get('phi')}"]
    if paper:
        parts.append(f"{settings.get('threshold_rule', PAPER_SETTINGS['threshold_rule'])} thresholds")
    else:
        parts += [f"{settings.get('criterion')}", f"k = {settings.get('knots')} ({settings.get('knot_placement')})",
                  "Huber fit" if settings.get("robust", "huber") == "huber" else "least squares"]
        for key, name in (("cells", "level cells"), ("row_guard", "one-row guard"), ("count_pairs", "count pairs")):
            parts.append(name if settings.get(key, True) else f"no {name}")  # on by default: say when taken off
        parts.append("no forest blend" if settings.get("blend") == "off" else "forest blend")
    tr = settings.get("response_transform")
    if tr == "auto":
        parts.append(f"{chosen + ' ' if chosen else ''}response scale chosen by the mean leave-one-out error")
    elif tr and tr != "none":
        parts.append(f"{tr} response")
    return ("stepwise, Stargazer as written: " if paper else "stepwise (Algorithm 1): ") + ", ".join(parts)


def analysis_banner(sv, fix: Callable[[], Any] | None, key: str) -> bool:
    """For an analysis the page shows: True when it is current (a partial one gets a note); else a
    banner with the fixing action (Recompute), and False — the page then leaves the old value out."""
    if sv.value is None:
        return False
    if sv.ok:
        if sv.partial:
            st.info(f"Partial result (stopped): {plain(sv.note)}.", icon=":material/hourglass_bottom:")
        return True
    banner(sv.status, fix, key=key)
    return False


def guarded(action: Callable[[], Any], success: str | None = None) -> bool:
    """Run a workspace change; our errors (read-only, a conflicting edit) as st.error, not a traceback. Pressed
    on a view drawn before another tab or session changed the workspace, its writes are refused once
    (:mod:`dashboard.changes`)."""
    w = st.session_state.get(ui_state.HANDLE)
    if w is not None:
        w.guard = ui_changes.acted_on()
    try:
        action()
    except GpudseError as e:
        st.error(plain(e))
        return False
    finally:
        if w is not None:
            w.guard = None
    if success:
        st.toast(success)
    return True


def report_html(w) -> str:
    """The workspace's HTML report (current parts only); a failure gives a page saying why."""
    import html

    from gpudse_core.report.workspace_report import workspace_report

    try:
        return workspace_report(w)
    except GpudseError as e:
        return f"<!doctype html><html><body><p>The report could not be made: {html.escape(str(e))}</p></body></html>"


# ---- uploads ---------------------------------------------------------------------------------------
def upload_cap_mb() -> int:
    """The per-widget upload cap (MiB) from gpudse_core.limits (the server's maxUploadSize is the same)."""
    from gpudse_core import limits

    return max(1, limits.current().upload_bytes // limits.MiB)


def uploader(label: str, types: Sequence[str], key: str, **kw: Any):
    return st.file_uploader(label, type=list(types), key=key, max_upload_size=upload_cap_mb(), **kw)


def upload_bytes(up) -> bytes:
    """The upload's bytes, refused (our LimitError, naming the file) over the configured limit."""
    from gpudse_core import limits

    limits.check("upload_bytes", up.size, f"upload {up.name}", "upload a smaller file")
    return up.getvalue()


def upload_error(name: str, e: Exception, unchanged: str) -> None:
    text = str(e)
    if name not in text:
        text = f"{name}: {text}"
    st.error(f"{plain(text)}. {unchanged}", icon=":material/error:")


def parse_upload(up) -> dict | None:
    """A small JSON/YAML upload as plain data, read by the core's bounded reader (size, depth, aliases,
    digits, duplicate keys); a problem is shown with st.error and None returned."""
    from gpudse_core.safeload import load_document

    try:
        return load_document(upload_bytes(up), up.name)
    except GpudseError as e:
        upload_error(up.name, e, "Upload UTF-8 JSON or YAML.")
        return None


# ---- small widgets ---------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def preset(name: str) -> DesignSpace:
    """Presets are immutable: parse each once per server process."""
    return load_preset(name)


def base_point(space: DesignSpace, key: str) -> dict:
    """A slider per parameter (its middle value by default): the design other parameters are held at."""
    cols = st.columns(min(5, max(1, len(space.parameters))))
    point = {}
    for i, p in enumerate(space.parameters):
        point[p.name] = cols[i % len(cols)].select_slider(plain(f"{p.display}" + (f" ({p.unit})" if p.unit else "")),
                                                          options=list(p.values), value=p.values[len(p.values) // 2],
                                                          key=f"{key}_{space.name}_{p.name}")
    return point


TRACE_KINDS = _trace.KIND_WORDS  # a step's kind in words ("pair", "look-ahead")


def trace_table(rows: list[dict], params: list[str], where=None, *, settings: dict | None = None,
                current: int | None = None, follow: bool = False, height_rem: float | None = None,
                model_column: bool = True) -> None:
    """Stargazer Table 1 (gpudse_core.report.trace, the same table as the CLI and the report): a row per
    step, the candidates' R² / adjusted R² per column, the accepted term bold, the criterion's statistic
    beside, and the threshold it was held to given the fit's *settings* (θ, φ, φ₃); step and decision
    columns frozen. *current*: the row highlighted; *follow*: scrolled to the newest row (the replay)."""
    table = _trace.build(rows, params)
    style = f"--gtrace-h:{height_rem}rem;" if height_rem else ""
    (where or st).html(f"<style>{_trace.TABLE_CSS}</style><div style='{style}'>"
                       + _trace.html(table, settings, current=current, follow=follow, model_column=model_column)
                       + "</div>")
