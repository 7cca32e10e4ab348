"""Projects (a zip a user can save and load) and standalone HTML reports of an analysis.

A project zip holds ``manifest.json``, ``space.yaml``, ``samples.json``, ``results.csv``, ``model.json`` and
``settings.json`` (each optional except the manifest and space). Loading is defensive: only those entry
names are accepted (no directories, absolute paths or ``..``), sizes are capped before anything is
decompressed (zip bombs), and every part goes through the same validating readers as single files
(safe YAML, JSON, CSV; never pickle).

The report is one HTML file with the analysis's tables and interactive Plotly charts, with plotly.js
inlined so it opens without a server or network — for a design review.
"""

from __future__ import annotations

import html
import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import GpudseError
from ..space.design import DesignSpace, parse_space_text
from ..model.stepwise import StepwiseModel

SCHEMA = "gpudse.project/1"
ENTRIES = {"manifest.json", "space.yaml", "samples.json", "results.csv", "model.json", "settings.json"}
MAX_ENTRY_BYTES = 200 * 1024 * 1024
MAX_TOTAL_BYTES = 400 * 1024 * 1024


@dataclass
class Project:
    space: DesignSpace
    samples: dict | None = None  # {"meta": …, "points": [...]} as SampleSet.to_json writes
    results: pd.DataFrame | None = None
    results_response: str | None = None
    model: StepwiseModel | None = None
    settings: dict = field(default_factory=dict)


def save_project(project: Project) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps({"schema": SCHEMA, "response": project.results_response}))
        zf.writestr("space.yaml", project.space.to_yaml())
        if project.samples is not None:
            zf.writestr("samples.json", json.dumps(project.samples, default=str))
        if project.results is not None:
            zf.writestr("results.csv", project.results.to_csv(index=False))
        if project.model is not None:
            zf.writestr("model.json", project.model.to_json())
        zf.writestr("settings.json", json.dumps(project.settings, default=str))
    return buf.getvalue()


def load_project(data: bytes, name: str = "project.zip") -> Project:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise GpudseError(f"{name}: not a zip file; load a project saved by gpudse") from None
    infos = zf.infolist()
    for info in infos:
        n = info.filename
        if n.startswith(("/", "\\")) or ".." in n.replace("\\", "/").split("/") or ":" in n:
            raise GpudseError(f"{name}: entry {n!r} has an unsafe path (absolute or '..'); refusing to load")
        if n not in ENTRIES:
            raise GpudseError(f"{name}: unexpected entry {n!r}; a project holds only {', '.join(sorted(ENTRIES))}")
        if info.file_size > MAX_ENTRY_BYTES:
            raise GpudseError(f"{name}: {n} would unpack to {info.file_size:,} bytes (limit {MAX_ENTRY_BYTES:,})")
    if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
        raise GpudseError(f"{name}: the project would unpack to more than {MAX_TOTAL_BYTES:,} bytes")
    names = {i.filename for i in infos}
    for required in ("manifest.json", "space.yaml"):
        if required not in names:
            raise GpudseError(f"{name}: {required} is missing; this is not a gpudse project")

    def text(entry: str) -> str:
        try:
            return zf.read(entry).decode("utf-8")
        except UnicodeDecodeError:
            raise GpudseError(f"{name}: {entry} is not UTF-8 text") from None

    def js(entry: str) -> Any:
        try:
            return json.loads(text(entry))
        except json.JSONDecodeError as e:
            raise GpudseError(f"{name}: {entry} is malformed JSON ({e.msg}, line {e.lineno})") from None

    manifest = js("manifest.json")
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise GpudseError(f"{name}: manifest schema {manifest.get('schema') if isinstance(manifest, dict) else None!r} "
                          f"is not {SCHEMA!r}")
    space = parse_space_text(text("space.yaml"), source=f"{name}/space.yaml")
    samples = js("samples.json") if "samples.json" in names else None
    results = None
    if "results.csv" in names:
        try:
            results = pd.read_csv(io.StringIO(text("results.csv")))
        except (ValueError, pd.errors.ParserError) as e:
            raise GpudseError(f"{name}: results.csv cannot be read ({str(e).splitlines()[0]})") from None
    model = StepwiseModel.from_dict(js("model.json"), source=f"{name}/model.json") if "model.json" in names else None
    settings = js("settings.json") if "settings.json" in names else {}
    return Project(space, samples, results, manifest.get("response"), model, settings if isinstance(settings, dict)
                   else {})


REPORT_CSS = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:16px;"
    "line-height:1.45;max-width:1180px;margin:2em auto;padding:0 1em;color:#1F2933}"
    "h1{font-size:1.9em;margin-bottom:.2em}h2{font-size:1.35em;margin-top:1.6em;border-bottom:2px solid #E4E7EB}"
    "table{border-collapse:collapse;margin:1em 0;font-variant-numeric:tabular-nums}"
    "td,th{border-bottom:1px solid #E4E7EB;padding:4px 12px;text-align:right;white-space:nowrap}"
    "td:first-child,th:first-child{text-align:left}th{background:#F5F7FA}"
    "pre{background:#F5F7FA;padding:1em;white-space:pre-wrap;font-size:.9em}"
    ".figure{margin:1.2em 0}.muted{color:#5F6B7A}"
)


def _report_table(df: pd.DataFrame, units: dict[str, str] | None = None, kinds: dict[str, str] | None = None) -> str:
    """A table for the report: every cell through the number formatter (no "NaN", no 7.229e+04)."""
    from . import fmt

    shown = fmt.format_table(df, units, kinds)
    return shown.to_html(index=False, border=0, escape=True, na_rep=fmt.MISSING)


def html_report(project: Project, figures: list[Any], tables: dict[str, pd.DataFrame] | None = None,
                title: str = "gpudse analysis", table_kinds: dict[str, dict[str, str]] | None = None) -> str:
    """A standalone HTML page: summary, equation, tables, and the given Plotly figures (interactive).

    Charts carry the gpudse style (template and colours inside each figure, so they look as on the pages);
    plotly.js is inlined once, so the file opens offline. Numbers go through :mod:`.fmt`; *table_kinds*
    may say how a table's columns are shown (e.g. ``{"mean": "fraction"}``, see ``fmt.column_kind``).
    """
    from .. import __version__
    from . import fmt, style

    parts = [f"<h1>{html.escape(title)}</h1>", f"<p class='muted'>gpudse {html.escape(__version__)}</p>"]
    s = project.space
    units = fmt.space_units(s)
    parts.append(f"<p>Design space <b>{html.escape(s.name)}</b>: {len(s.parameters)} parameters, "
                 f"{html.escape(fmt.fmt_count(s.size, 'design points'))}.</p>")
    rows = "".join(f"<tr><td>{html.escape(p.display)}</td><td>{html.escape(p.unit)}</td>"
                   f"<td>{html.escape(', '.join(fmt.fmt_value(v) for v in p.values))}</td></tr>"
                   for p in s.parameters)
    parts.append(f"<table><tr><th>parameter</th><th>unit</th><th>values</th></tr>{rows}</table>")
    if project.results is not None:
        parts.append(f"<p>{html.escape(fmt.fmt_count(len(project.results), 'simulated design points'))}; "
                     f"response <b>{html.escape(str(project.results_response))}</b>.</p>")
    m = project.model
    if m is not None:
        parts.append(f"<h2>Model</h2><p>Terms in selection order: {html.escape(' + '.join(m.terms))}; "
                     f"R² {fmt.fmt_r2(m.r2)}, adjusted R² {fmt.fmt_r2(m.adj_r2)}, "
                     f"{html.escape(fmt.fmt_count(m.n, 'observations'))}.</p>")
        parts.append(f"<pre>{html.escape(m.equation(digits=5))}</pre>")
    for name, df in (tables or {}).items():
        parts.append(f"<h2>{html.escape(name)}</h2>" + _report_table(df, units, (table_kinds or {}).get(name)))
    config = {"displaylogo": False, "responsive": True}
    for i, fig in enumerate(figures):
        # a figure drawn elsewhere (or under Streamlit's template) gets the gpudse style too; legends as built
        style.apply(fig, one_entry_per_group=False)
        parts.append("<div class='figure'>" + fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0
                                                         else False, config=config) + "</div>")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{REPORT_CSS}</style></head><body>{''.join(parts)}</body></html>")
