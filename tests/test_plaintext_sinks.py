"""Every place the dashboard shows text goes through the one plain-text renderer when the text can be
a user's (gpudse_core.report.plaintext; docs/limits.md "Text from users").

Streamlit renders Markdown in st.markdown/st.caption/st.info/… bodies, in widget labels and help, in
metric labels and tab titles: a workspace name carrying ``![x](http://evil/)`` shown through one of
them makes every viewer's browser — read-only visitors included — fetch an outside address. The
comparison view (Runs side by side) did exactly that with its notes, which quote the runs' labels
(workspace names). This test reads pages/, dashboard/ and app.py as syntax trees and finds every such
call whose text is not provably ours: a literal, an f-string or concatenation whose every part is a
literal, a constant (UPPER_CASE), a number formatter, a helper that escapes user text itself, or
``plain(...)``. A variable counts as ours when every assignment to it in its module is. Anything else
must go through ``ui.plain`` — or be listed in OURS below with the reason the text cannot come from
a user (reviewed by hand: a response from a fixed list, a message of our own).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Streamlit calls whose text argument (first positional, label=, help=, body=, caption=) is Markdown
SINKS = {"markdown", "write", "caption", "info", "warning", "error", "success", "toast", "title", "header",
         "subheader", "button", "form_submit_button", "download_button", "expander", "metric", "checkbox",
         "toggle", "radio", "selectbox", "multiselect", "text_input", "number_input", "text_area", "slider",
         "select_slider", "file_uploader", "tabs", "popover", "link_button", "page_link", "status", "spinner",
         "color_picker", "date_input", "time_input", "chat_input", "feedback", "pills", "segmented_control"}
TEXT_KEYWORDS = {"label", "help", "body", "caption", "placeholder", "text"}
# the dashboard's helpers that hand a text parameter to one of those: scanned at their callers, as sinks
# (name: (position of the text argument or None, its keyword))
HELPERS = {"link": (1, "label"), "uploader": (0, "label"), "job_panel": (2, "label"), "guarded": (None, "success"),
           "upload_error": (2, "unchanged")}
HELPER_TEXTS = {"rerun_label"}  # job_panel's other text
# st.column_config columns: the grid draws a column's label as text; its help is a Markdown tooltip
COLUMNS = {"Column", "TextColumn", "NumberColumn", "SelectboxColumn", "CheckboxColumn", "LinkColumn",
           "ListColumn", "DatetimeColumn", "DateColumn", "TimeColumn", "ProgressColumn", "LineChartColumn",
           "BarChartColumn", "AreaChartColumn", "ImageColumn", "JSONColumn", "MultiselectColumn"}
# calls whose result is ours or escaped: the renderer, the number formatters, helpers that pass user text
# through the renderer themselves (each documents it), and builtins of numbers
SAFE_CALLS = {"plain", "markdown", "fmt_num", "fmt_count", "fmt_pct", "fmt_number", "fmt_percent", "fmt_r2",
              "fmt_duration", "fmt_seconds", "fmt_bytes", "fmt_int", "len", "int", "float", "round", "stage_title",
              "stage_summary", "help_for", "interrupted_text", "response_unit", "upload_cap_mb", "explain",
              "saturation_warning"}
NOT_STREAMLIT = {"_plaintext", "plaintext", "_fmt", "fmt", "figures", "style", "compare"}  # same-named functions
# numeric or our own attributes of stage values, results and requests
SAFE_ATTRS = {"version", "size", "replaced", "test_size", "state"}

# (file, the expression as ast.unparse writes it): why its text is ours, not a user's
OURS = {
    ("app.py", "f'{ui.STATE_ICON[state]} **{title}**'"): "title: a key of frame.PAGES, the page titles",
    ("app.py", 'f"**The model\'s accuracy out of sample:** {head.text()}."'):
        "Headline.text(): a percentage and where it was measured",
    ("dashboard/frame.py", "label or title"): "link()'s label (its callers are scanned: HELPERS) or a page title",
    ("dashboard/frame.py", "path"): "a page's file path from frame.PAGES",
    ("dashboard/frame.py", "title"): "a key of frame.PAGES",
    ("dashboard/frame.py", "status.action"): "a stage status's action: stages.py's fixed texts",
    ("dashboard/frame.py", "success"): "guarded()'s success message (its callers are scanned: HELPERS)",
    ("dashboard/frame.py", "label"): "uploader()'s label (its callers are scanned: HELPERS)",
    ("dashboard/frame.py", "f'{plain(text)}. {unchanged}'"): "upload_error()'s unchanged (callers scanned: HELPERS)",
    ("dashboard/changes.py", "f'**This workspace was changed in another tab or session** since this page was last "
                             "drawn: {describe(changes)}. The page below shows the workspace as it is now.'"):
        "describe(): stage nouns, versions and durations; each origin through the renderer (plaintext.markdown)",
    ("dashboard/changes.py", "f'**This workspace changed in another tab or session**: {describe(changes)}. This page "
                             "still shows it as it was; reload to see the change before you change anything.'"):
        "describe(): stage nouns, versions and durations; each origin through the renderer (plaintext.markdown)",
    ("dashboard/jobs.py", "f':material/progress_activity: **{label}** is running' + (' — stopping…' if "
                          "job.stop_requested else '')"): "job_panel()'s label (its callers are scanned: HELPERS)",
    ("dashboard/jobs.py", "rerun_label"): "job_panel()'s rerun_label (its callers are scanned: HELPERS)",
    ("dashboard/jobs.py", "f'{label} failed: {frame.plain(prev.error)}'"): "job_panel()'s label (callers scanned)",
    ("dashboard/replay.py", "f'**Row {i} of {len(rows)}** ({ui.plain(kind)}). ' + explain(row, before, settings)"):
        "i: the row number; explain() passes the terms' names through the renderer",
    ("pages/10_Search.py", "f'e.g. {response} * (40 + simd + 4 * smp)'"): "response: the Response selectbox, "
                                                                           "one of RESPONSES",
    ("pages/10_Search.py", "f'optimise this expression of {response} and the parameters instead of {response} "
                           "itself, e.g. {response} × a die-area expression (performance per area); the constraint "
                           "language of the Design space page'"): "response: one of RESPONSES",
    ("pages/10_Search.py", "f'a cost computed from the parameters; the front is {response} against it'"):
        "response: one of RESPONSES",
    ("pages/3_Simulations.py", "f\"No external simulator is configured on this server. An administrator describes "
                               "one in a TOML file (command, config template, metrics, timeout) in {backends_dir} or "
                               "the folder named by GPUDSE_BACKENDS; see docs/simulations.md "
                               "'Simulation campaigns'.\""):
        "the server's own folder",
    ("pages/3_Simulations.py", "ui_versions.replacement(current, rep.table, model_response, up.name)"):
        "versions.replacement() passes every name, origin and column through ui.plain",
    ("dashboard/versions.py", "f'The workspace keeps the last versions of the {stage}; restoring one makes it the "
                              "current version again (what was computed from it is current again).'"):
        "stage: a stage name of the workspace (stages.BASE_STAGES)",
    ("dashboard/versions.py", "f\"**v{v.version}** · {ui.plain(v.origin) or 'unknown origin'} · {_when(v.created)}\" "
                              "+ (' · *partial*' if v.partial else '')"):
        "the version number and its time, written by _when(); the origin goes through ui.plain",
    ("pages/3_Simulations.py", "f'{p.kind}: {ui.plain(p)}'"): "p.kind: a results problem's kind, upload.py's names",
    ("pages/4_Stepwise_fit.py", "head.label if head is not None and head.value is not None else "
                                "'Out-of-sample error'"): "Headline.label: where the error was measured",
    ("pages/4_Stepwise_fit.py", "head.label"): "Headline.label: where the error was measured",
    ("pages/5_Response_curves.py", "f\"The {model.summary()}'s prediction at the parameter's legal values, the "
                                   "others held as chosen above. A learner has no standard errors, so there is no "
                                   "confidence band; fit the stepwise model for the band and for one curve per "
                                   "application.\""): "a learner's summary: its kind's name and sizes",
    ("pages/6_Accuracy.py", "f\"**Relative error (%), pooled over {repeats}, {ui.fmt_count(res.test_size, 'test "
                            "points')} each (Lee & Brooks Table 6; Stargazer §7.3)**\""): "repeats: a count",
    ("pages/6_Accuracy.py", "label"): "a button label of counts and a kernel of the built-in simulator",
    ("pages/7_Explore.py", "f\"**Predicted vs simulated** ({ui.plain(info.name)}: {ui.fmt_count(done)} of "
                           "{ui.fmt_count(len(table), 'designs')} simulated{within})\""): "within: a count",
    ("pages/8_Ray_tracing.py", "f\"{counts['sms']} SMs, {counts['mem']} memory partitions from "
                               "{ui.plain(cfg_up.name)}\""): "counts: numbers of SMs and partitions",
    ("pages/9_Analytical_models.py", "f\"Performance is limited by {LIMITED_HELP.get(opt['limited_by'], "
                                     "opt['limited_by'])}; effective threads are capped by "
                                     "{LIMITED_HELP.get(opt['threads_limited_by'], opt['threads_limited_by'])}.\""):
        "the equal-area model's own resource names",
    ("pages/9_Analytical_models.py", "f'Fig. 18 prints OPT N_PE = {paper[bw, regs]} for bw{bw}reg{regs}.'"):
        "numbers of the paper's Fig. 18",
    ("pages/1_Design_space.py", "f'The design space was changed elsewhere while you had this form open: the current "
                                "version is {sv.version} (**{ui.plain(space.name)}**, {ui.plain(sv.origin)}). The form "
                                "below still shows version {form_version} with your edits; Apply is refused until you "
                                "choose.'"): "form_version: a version number",
    ("pages/4_Stepwise_fit.py", "f'{head.detail}; each row predicted by the fit without it (exact for least squares); "
                                "the Accuracy page measures the error on held-out points' if head.source == "
                                "'leave-one-out' else head.detail"): "Headline.detail: a row count or a training size",
    ("pages/9_Analytical_models.py", "title"): "the equations' section titles, literals of the page",
}


def _assignments(tree: ast.AST) -> dict[str, list[ast.AST]]:
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        # a tuple target takes a part of the value: unknown unless the value is a literal tuple
                        out.setdefault(n.id, []).append(node.value if isinstance(t, ast.Name) else t)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, []).append(node.value if node.value is not None else node.target)
        elif isinstance(node, (ast.For, ast.comprehension, ast.With, ast.withitem)):
            for t in ([node.target] if hasattr(node, "target") else [getattr(node, "optional_vars", None)]):
                for n in ast.walk(t) if t is not None else ():
                    if isinstance(n, ast.Name):
                        out.setdefault(n.id, []).append(n)  # a loop variable: unknown
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)):
            for a in node.args.args + node.args.kwonlyargs:
                out.setdefault(a.arg, []).append(a)  # a parameter: unknown
    return out


_NUMBER_SPEC = re.compile(r"[,_]|\.\d+|[bdoxXeEfFgGn%]$")


def _numeric_format(v: ast.FormattedValue) -> bool:
    """``{n:,}``, ``{x:.3g}``, ``{k:d}``: a format only a number takes (text would raise), so a number."""
    spec = v.format_spec
    if spec is None or not all(isinstance(p, ast.Constant) for p in spec.values):
        return False
    return bool(_NUMBER_SPEC.search("".join(str(p.value) for p in spec.values)))


class Checker:
    def __init__(self, tree: ast.AST):
        self.assigned = _assignments(tree)
        self.visiting: set[str] = set()

    def ours(self, n: ast.AST | None) -> bool:
        if n is None or isinstance(n, ast.Constant):
            return True
        if isinstance(n, ast.JoinedStr):
            return all(_numeric_format(v) or self.ours(v.value) for v in n.values if isinstance(v, ast.FormattedValue))
        if isinstance(n, ast.BinOp):  # arithmetic with a number is a number; text + text is ours if both are
            if not isinstance(n.op, ast.Add) or any(isinstance(v, ast.Constant) and isinstance(v.value, (int, float))
                                                    for v in (n.left, n.right)):
                return True
            return self.ours(n.left) and self.ours(n.right)
        if isinstance(n, ast.IfExp):
            return self.ours(n.body) and self.ours(n.orelse)
        if isinstance(n, ast.BoolOp):
            return all(self.ours(v) for v in n.values)
        if isinstance(n, (ast.List, ast.Tuple)):
            return all(self.ours(v) for v in n.elts)
        if isinstance(n, (ast.Compare, ast.UnaryOp)):
            return True  # a bool or a number
        if isinstance(n, ast.Name):
            return self._name(n.id)
        if isinstance(n, ast.Attribute):
            return n.attr in SAFE_ATTRS or n.attr.isupper() or self._constant_root(n)
        if isinstance(n, ast.Subscript):
            return self._constant_root(n)
        if isinstance(n, ast.Call):
            return self._call(n)
        if isinstance(n, (ast.GeneratorExp, ast.ListComp)):
            return self._comprehension(n)
        return False

    def _constant_root(self, n: ast.AST) -> bool:
        """An attribute or item of an UPPER_CASE constant (a dict of our own texts)."""
        while isinstance(n, (ast.Attribute, ast.Subscript, ast.Call)):
            n = n.func if isinstance(n, ast.Call) else n.value
        return isinstance(n, ast.Name) and n.id.isupper()

    def _name(self, name: str) -> bool:
        if name.isupper():
            return True
        values = self.assigned.get(name)
        if not values or name in self.visiting:
            return False
        self.visiting.add(name)
        try:
            return all(self.ours(v) for v in values)
        finally:
            self.visiting.discard(name)

    def _call(self, n: ast.Call) -> bool:
        f = n.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in SAFE_CALLS:
            return True
        if name == "join" and isinstance(f, ast.Attribute) and n.args:
            return self.ours(f.value) and self.ours(n.args[0])
        if name == "get" and self._constant_root(n):  # a constant's entry, or the default given
            return all(self.ours(a) for a in n.args[1:])
        if isinstance(f, ast.Attribute) and f.attr in ("lower", "upper", "capitalize", "strip"):
            return self.ours(f.value)
        return False

    def _comprehension(self, n: ast.GeneratorExp | ast.ListComp) -> bool:
        # the loop variables are unknown (they come from the iterated values), so only what is formed from
        # them through safe calls and constants counts
        return self.ours(n.elt)


def _texts(call: ast.Call) -> list[ast.AST]:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name in COLUMNS:
        return [k.value for k in call.keywords if k.arg == "help"]
    if name in HELPERS:
        pos, kw = HELPERS[name]
        out = [call.args[pos]] if pos is not None and len(call.args) > pos else []
        return out + [k.value for k in call.keywords if k.arg == kw or k.arg in HELPER_TEXTS]
    out = list(call.args[:1])
    out += [k.value for k in call.keywords if k.arg in TEXT_KEYWORDS]
    return out


def _sink(call: ast.Call) -> str:
    """The Streamlit call or dashboard helper *call* makes ("" if it shows no text)."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in NOT_STREAMLIT:
        return ""
    if isinstance(f, ast.Attribute) and f.attr in SINKS:
        return f.attr
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return name if name in HELPERS or name in COLUMNS else ""


def unrendered(path: Path) -> list[tuple[int, str, str]]:
    """(line, the Streamlit call, the expression) of every text argument not provably ours in *path*."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    check = Checker(tree)
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _sink(node):
            for arg in _texts(node):
                src = ast.unparse(arg)
                if not check.ours(arg) and (rel, src) not in OURS:
                    out.append((arg.lineno, _sink(node), src))
    return sorted(out)


def _files() -> list[Path]:
    return sorted([*ROOT.glob("pages/*.py"), *ROOT.glob("dashboard/*.py"), ROOT / "app.py"])


def test_every_text_a_page_shows_is_ours_or_goes_through_the_renderer():
    found = {p.relative_to(ROOT).as_posix(): unrendered(p) for p in _files()}
    found = {k: v for k, v in found.items() if v}
    assert not found, "user text shown as Markdown (wrap it in ui.plain, or list it in OURS with why it is ours):\n" \
        + "\n".join(f"  {f}:{line}: st.{call}({src[:100]})" for f, rows in found.items() for line, call, src in rows)


def test_the_scan_finds_the_comparison_view_s_unescaped_notes(tmp_path):
    """The instance that made visitors' browsers fetch an outside address (Runs side by side, notes
    quoting workspace names), and its kin: each is found; the renderer's form of each is not."""
    bad = tmp_path / "pages" / "x.py"
    bad.parent.mkdir()
    bad.write_text(
        "import streamlit as st\n"
        "from dashboard import frame as ui\n"
        "for note in compare.notes(stored):\n"
        "    st.caption(f':material/info: {note}')\n"
        "    st.caption(':material/info: ' + ui.plain(note))\n"
        "st.markdown(f'**{w.name}**')\n"
        "st.markdown(f'**{ui.plain(w.name)}**')\n"
        "label = w.name\n"
        "st.button(label)\n"
        "st.metric(f'Best {response}', 1, help=sv.origin)\n"
        "st.tabs(['Validation', 'Runs side by side'])\n"
        "st.info(f'{n:,} rows', icon=':material/info:')\n"
        "cfg = {c: st.column_config.TextColumn(c, help=f'{c} as uploaded') for c in df.columns}\n",
        encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        rows = unrendered(bad)
    finally:
        ROOT = saved
    assert [(line, call) for line, call, _ in rows] == [(4, "caption"), (6, "markdown"), (9, "button"),
                                                       (10, "metric"), (10, "metric"), (13, "TextColumn")]
