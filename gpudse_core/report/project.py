"""Projects (a zip a user can save and load) and standalone HTML reports of an analysis.

A project zip holds ``manifest.json``, ``space.yaml``, ``samples.json``, ``results.csv``, ``model.json`` and
``settings.json`` (each optional except the manifest and space).

Loading (:func:`load_project`) is defensive and atomic:

* only those entry names, each once, no directories, absolute paths or ``..``; at most
  ``limits.archive_entries`` entries; encrypted entries and compression methods other than
  stored/deflate are refused;
* every entry is decompressed as a stream and its bytes *counted* (``limits.document_bytes`` for the
  JSON/YAML entries, ``limits.model_bytes`` for ``model.json`` (a learner's fitted trees),
  ``limits.archive_entry_bytes`` for ``results.csv``, ``limits.archive_total_bytes``
  in all): the sizes a zip declares are not trusted; a damaged entry (bad CRC, truncated data) is
  reported as such;
* every part goes through the same validating readers as single files (safeload for JSON/YAML, the
  bounded table reader for CSV; never pickle), and is checked against the project's space: samples
  are points of the space (:func:`~gpudse_core.space.sampling.sample_set_from_dict`), results carry
  its parameter columns and a numeric response, the model's parameters are the space's;
* the result is a new :class:`Project`, returned only when every part is valid, so a caller swaps
  its state only after a successful load and a bad zip changes nothing.

The report is one HTML file with the analysis's tables and interactive Plotly charts, with plotly.js
inlined so it opens without a server or network — for a design review.
"""

from __future__ import annotations

import html
import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from .. import limits
from ..csvout import frame_text
from ..errors import GpudseError
from ..space.design import DesignSpace, parse_space_text
from ..space.sampling import SampleSet, sample_set_from_dict
from ..model.stepwise import StepwiseModel

SCHEMA = "gpudse.project/1"
ENTRIES = {"manifest.json", "space.yaml", "samples.json", "results.csv", "model.json", "settings.json"}
CHUNK = 1 << 20


class ProjectError(GpudseError):
    """A project zip cannot be loaded; nothing was changed."""


@dataclass
class Project:
    space: DesignSpace
    samples: dict | None = None  # {"meta": …, "points": [...]} as SampleSet.to_json writes
    results: pd.DataFrame | None = None
    results_response: str | None = None
    model: StepwiseModel | None = None
    settings: dict = field(default_factory=dict)
    sample_set: SampleSet | None = None  # the samples validated against the space (set by load_project)


def save_project(project: Project) -> bytes:
    buf = io.BytesIO()
    samples = project.samples
    if samples is None and project.sample_set is not None:
        samples = json.loads(project.sample_set.to_json())
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps({"schema": SCHEMA, "response": project.results_response}))
        zf.writestr("space.yaml", project.space.to_yaml())
        if samples is not None:
            zf.writestr("samples.json", json.dumps(samples, default=str))
        if project.results is not None:
            zf.writestr("results.csv", frame_text(project.results))
        if project.model is not None:
            from ..model.registry import model_to_dict

            zf.writestr("model.json", json.dumps(model_to_dict(project.model), indent=1))  # any model kind
        zf.writestr("settings.json", json.dumps(project.settings, default=str))
    return buf.getvalue()


def _entries(data: bytes, name: str) -> dict[str, bytes]:
    """Every entry's bytes, decompressed as a stream and counted (sizes in headers are not trusted)."""
    lim = limits.current()
    lim.check("upload_bytes", len(data), f"{name}: {len(data):,} bytes")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError):
        raise ProjectError(f"{name}: not a zip file (or a damaged one); load a project saved by gpudse") from None
    lim.check("archive_entries", len(infos), f"{name}: {len(infos):,} entries", "a project has at most 6")
    seen: set[str] = set()
    for info in infos:
        n = info.filename
        shown = repr(n) if len(n) <= 80 else repr(n[:77] + "...")
        if n.startswith(("/", "\\")) or ".." in n.replace("\\", "/").split("/") or ":" in n:
            raise ProjectError(f"{name}: entry {shown} has an unsafe path (absolute or '..'); refusing to load")
        if n not in ENTRIES:
            raise ProjectError(f"{name}: unexpected entry {shown}; a project holds only {', '.join(sorted(ENTRIES))}")
        if n in seen:
            raise ProjectError(f"{name}: entry {n} appears twice; a project holds each part once")
        seen.add(n)
        if info.flag_bits & 0x1:
            raise ProjectError(f"{name}: {n} is encrypted; gpudse projects are never encrypted — save it again")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ProjectError(f"{name}: {n} uses compression method {info.compress_type}; gpudse reads stored or "
                               f"deflated entries — save the project again with gpudse")
    out: dict[str, bytes] = {}
    total = 0
    for info in infos:
        n = info.filename
        entry_limit = {"results.csv": "archive_entry_bytes", "model.json": "model_bytes"}.get(n, "document_bytes")
        cap = getattr(lim, entry_limit)
        lim.check(entry_limit, info.file_size, f"{name}: {n} declares {info.file_size:,} bytes unpacked")
        parts, size = [], 0
        try:
            with zf.open(info) as fh:
                while chunk := fh.read(min(CHUNK, cap + 1 - size)):
                    size += len(chunk)
                    total += len(chunk)
                    lim.check(entry_limit, size, f"{name}: {n} unpacks to more than {cap:,} bytes")
                    lim.check("archive_total_bytes", total, f"{name}: the project unpacks to more than "
                                                            f"{lim.archive_total_bytes:,} bytes")
                    parts.append(chunk)
                if size == cap + 1 or fh.read(1):  # more after the cap (never stored beyond it)
                    lim.check(entry_limit, cap + 1, f"{name}: {n} unpacks to more than {cap:,} bytes")
        except GpudseError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError,
                NotImplementedError) as e:
            raise ProjectError(f"{name}: {n} is damaged ({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
                               f"the zip is corrupt — save the project again") from None
        out[n] = b"".join(parts)
    return out


def load_project(data: bytes, name: str = "project.zip") -> Project:
    """A validated :class:`Project` from zip bytes (see the module docstring); raises :class:`GpudseError`
    before anything is returned, so the caller's state is never half-replaced."""
    from ..dataio import read_table_bytes
    from ..safeload import load_json

    entries = _entries(data, name)
    for required in ("manifest.json", "space.yaml"):
        if required not in entries:
            raise ProjectError(f"{name}: {required} is missing; this is not a gpudse project")

    def js(entry: str) -> Any:  # a model file holds a learner's fitted trees: its own, larger limit
        return load_json(entries[entry], f"{name}/{entry}",
                         bytes_limit="model_bytes" if entry == "model.json" else "document_bytes")

    manifest = js("manifest.json")
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        got = manifest.get("schema") if isinstance(manifest, dict) else None
        raise ProjectError(f"{name}: manifest schema {str(got)[:40]!r} is not {SCHEMA!r}")
    response = manifest.get("response")
    if response is not None and not isinstance(response, str):
        raise ProjectError(f"{name}/manifest.json: 'response' must be a column name or null")
    space = parse_space_text(entries["space.yaml"], source=f"{name}/space.yaml")
    samples = sample_set = None
    if "samples.json" in entries:
        samples = js("samples.json")
        sample_set = sample_set_from_dict(samples, space, f"{name}/samples.json")
    results = None
    if "results.csv" in entries:
        source = f"{name}/results.csv"
        results = read_table_bytes(entries["results.csv"], source, fmt="CSV", bytes_limit="archive_entry_bytes")
        missing = [p for p in space.parameter_names if p not in results.columns]
        if missing:
            raise ProjectError(f"{source}: lacks the space's parameter column(s) {', '.join(missing[:10])}")
        if response is not None:
            if response not in results.columns:
                raise ProjectError(f"{source}: the manifest's response {response[:60]!r} is not a column")
            if pd.to_numeric(results[response], errors="coerce").notna().sum() == 0:
                raise ProjectError(f"{source}: the response {response[:60]!r} holds no numbers")
        for p in space.parameters:  # results are points of the space, like the samples
            col = results[p.name]
            ok = (pd.to_numeric(col, errors="coerce").isin([float(v) for v in p.values]) if p.kind == "numeric"
                  else col.astype(str).isin([str(v) for v in p.values]))
            bad = (~ok.to_numpy()).nonzero()[0].tolist()
            if bad:
                shown = ", ".join(map(str, p.values[:10])) + (", …" if p.size > 10 else "")
                raise ProjectError(f"{source}: row {bad[0] + 1}: {p.name} = {str(results[p.name].iloc[bad[0]])[:40]} "
                                   f"is not a value of the project's space ([{shown}])"
                                   + (f"; {len(bad) - 1:,} more rows like it" if len(bad) > 1 else ""))
    model = None
    if "model.json" in entries:
        from ..model.registry import load_model

        model = load_model(js("model.json"), source=f"{name}/model.json")  # any model kind
        unknown = [p for p in model.parameters if p not in space.parameter_names]
        if unknown:
            raise ProjectError(f"{name}/model.json: fitted on parameter(s) {', '.join(unknown[:10])} that the "
                               f"project's space does not have")
        fitted_on = getattr(model, "response", None)
        # a model may be of any numeric column of the results (the fit page offers them all), not only the
        # manifest's response; it may not be of a column the results do not have
        if results is not None and fitted_on is not None and fitted_on not in results.columns:
            raise ProjectError(f"{name}/model.json: a model of {str(fitted_on)[:60]!r}, which is not a column of the "
                               f"project's results.csv; save the project again from gpudse")
    settings = js("settings.json") if "settings.json" in entries else {}
    if not isinstance(settings, dict):
        raise ProjectError(f"{name}/settings.json: must be an object of settings")
    return Project(space, samples, results, response, model, settings, sample_set)


REPORT_CSS = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:16px;"
    "line-height:1.45;max-width:1180px;margin:2em auto;padding:0 1em;color:#1F2933}"
    "h1{font-size:1.9em;margin-bottom:.2em}h2{font-size:1.35em;margin-top:1.6em;border-bottom:2px solid #E4E7EB}"
    "table{border-collapse:collapse;margin:1em 0;font-variant-numeric:tabular-nums}"
    "td,th{border-bottom:1px solid #E4E7EB;padding:4px 10px;text-align:right;white-space:nowrap}"
    "table{font-size:.9em}th{white-space:normal;vertical-align:bottom}th{background:#F5F7FA}"
    "td:first-child,th:first-child,.l{text-align:left}summary{cursor:pointer;color:#3E4C59}"
    "pre{background:#F5F7FA;padding:1em;white-space:pre-wrap;font-size:.9em}"
    ".figure{margin:1.2em 0}.muted{color:#5F6B7A}.table{overflow-x:auto;max-width:100%}"
    ".note{background:#FFF8E1;border-left:4px solid #F0B429;padding:.6em 1em}h3{font-size:1.1em}"
)


def _report_table(df: pd.DataFrame, units: dict[str, str] | None = None, kinds: dict[str, str] | None = None) -> str:
    """A table for the report: every cell through the number formatter (no "NaN", no 7.229e+04)."""
    from . import fmt

    shown = fmt.format_table(df, units, kinds)
    # numbers right-aligned, text (names, reasons) left-aligned, as on the pages
    left = [fmt.column_kind(str(c), df[c].dtype.kind, kinds) == "text" for c in df.columns]
    cell = lambda tag, v, lft: f"<{tag}{' class=l' if lft else ''}>{html.escape(str(v))}</{tag}>"  # noqa: E731
    head = "".join(cell("th", c, lft) for c, lft in zip(shown.columns, left))
    rows = "".join("<tr>" + "".join(cell("td", v, lft) for v, lft in zip(r, left)) + "</tr>"
                   for r in shown.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def html_report(project: Project, figures: list[Any], tables: dict[str, pd.DataFrame] | None = None,
                title: str = "gpudse analysis", table_kinds: dict[str, dict[str, str]] | None = None,
                model_sections: Sequence[str] = (), *, subtitle: str | None = None, headline: Any = None,
                sections: list[tuple[str, list]] | None = None,
                table_units: dict[str, dict[str, str]] | None = None) -> str:
    """A standalone HTML page: summary, equation, tables, and the given Plotly figures (interactive).

    Charts carry the gpudse style (template and colours inside each figure, so they look as on the pages);
    plotly.js is inlined once, so the file opens offline. Numbers go through :mod:`.fmt`; *table_kinds*
    may say how a table's columns are shown (e.g. ``{"mean": "fraction"}``, see ``fmt.column_kind``).

    *subtitle*: a line under the title (versions, date). *headline*: the model's out-of-sample headline
    (:class:`gpudse_core.model.headline.Headline`): it leads the model section, and when the fit
    interpolates its note replaces R². *sections*: ``[(heading, items)]`` drawn after *tables* and before
    *figures*, in order, each item a DataFrame, a Plotly figure, a ``("text", str)`` paragraph or a
    ``(name, DataFrame)`` captioned table; *table_units* gives a table's column units by table name.
    *model_sections*: HTML built by gpudse (its text escaped), placed after the model (the trace table).
    """
    from .. import __version__
    from . import fmt, style

    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p class='muted'>{html.escape(subtitle) if subtitle else 'gpudse ' + html.escape(__version__)}</p>"]
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
    if m is not None and not hasattr(m, "terms"):  # a learner: no terms or equation to show
        from ..model.registry import model_kind

        lead = f"<p><b>{html.escape(headline.text()[:1].upper() + headline.text()[1:])}.</b></p>" if headline else ""
        parts.append(f"<h2>Model</h2>{lead}<p>{html.escape(model_kind(m))}, fitted on "
                     f"{html.escape(fmt.fmt_count(len(getattr(m, 'train_', ())), 'observations'))}.</p>")
    elif m is not None:
        lead = ""
        if headline is not None:  # an out-of-sample error leads, R² follows (and is left out when it means nothing)
            lead = f"<p><b>{html.escape(headline.text()[:1].upper() + headline.text()[1:])}.</b></p>"
            if headline.interpolates:
                lead += f"<p class='note'>{html.escape(headline.note or '')}</p>"
        r2 = ("" if headline is not None and headline.interpolates
              else f"R² {fmt.fmt_r2(m.r2)}, adjusted R² {fmt.fmt_r2(m.adj_r2)} "
                   f"{'of its Huber pseudo-observations' if getattr(m, 'robust', None) else 'on the training rows'}, ")
        parts.append(f"<h2>Model</h2>{lead}<p>Terms in selection order: {html.escape(' + '.join(m.terms))}; "
                     f"{r2}{html.escape(fmt.fmt_count(m.n, 'observations'))}.</p>")
        parts.append("<details><summary>The fitted equation</summary>"  # long: folded, as on the fit page
                     f"<pre>{html.escape(m.equation(digits=5))}</pre></details>")
    parts.extend(model_sections)
    for name, df in (tables or {}).items():
        parts.append(f"<h2>{html.escape(name)}</h2><div class='table'>"
                     + _report_table(df, {**units, **(table_units or {}).get(name, {})}, (table_kinds or {}).get(name))
                     + "</div>")
    config = {"displaylogo": False, "responsive": True}
    drawn = [0]

    def figure(fig: Any) -> str:
        # a figure drawn elsewhere (or under Streamlit's template) gets the gpudse style too; legends as built
        style.apply(fig, one_entry_per_group=False)
        first = drawn[0] == 0
        drawn[0] += 1
        return "<div class='figure'>" + fig.to_html(full_html=False, include_plotlyjs="inline" if first else False,
                                                    config=config) + "</div>"

    for heading, items in sections or []:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        for item in items:
            if isinstance(item, pd.DataFrame):
                parts.append("<div class='table'>" + _report_table(item, units) + "</div>")
            elif isinstance(item, tuple) and item[0] == "text":
                parts.append(f"<p>{html.escape(str(item[1]))}</p>")
            elif isinstance(item, tuple):  # (caption, table[, units[, kinds]])
                name, df, *rest = item
                parts.append(f"<h3>{html.escape(str(name))}</h3><div class='table'>"
                             + _report_table(df, {**units, **(rest[0] if rest else {})}, rest[1] if len(rest) > 1
                                             else None) + "</div>")
            else:
                parts.append(figure(item))
    for fig in figures:
        parts.append(figure(fig))
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{REPORT_CSS}</style></head><body>{''.join(parts)}</body></html>")
