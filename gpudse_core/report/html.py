"""The standalone HTML report of a project: one file with the analysis's tables and interactive
Plotly charts, with plotly.js inlined so it opens without a server or network — for a design review.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

import pandas as pd

from ..workspace.project import Project

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
    from .. import fmt

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
                fit_r2: Any = None, sections: list[tuple[str, list]] | None = None,
                table_units: dict[str, dict[str, str]] | None = None) -> str:
    """A standalone HTML page: summary, equation, tables, and the given Plotly figures (interactive).

    Charts carry the gpudse style (template and colours inside each figure, so they look as on the pages);
    plotly.js is inlined once, so the file opens offline. Numbers go through :mod:`.fmt`; *table_kinds*
    may say how a table's columns are shown (e.g. ``{"mean": "fraction"}``, see ``fmt.column_kind``).

    *subtitle*: a line under the title (versions, date). *headline*: the model's out-of-sample headline
    (:class:`gpudse_core.model.headline.Headline`): it leads the model section, and when the fit
    interpolates its note replaces R²; *fit_r2* (:class:`~gpudse_core.model.headline.FitR2`): the R² it quotes
    (the data's; without it, the model's own). *sections*: ``[(heading, items)]`` drawn after *tables* and before
    *figures*, in order, each item a DataFrame, a Plotly figure, a ``("text", str)`` paragraph (``("warning",
    str)``: set apart as a caution) or a
    ``(name, DataFrame)`` captioned table; *table_units* gives a table's column units by table name.
    *model_sections*: HTML built by gpudse (its text escaped), placed after the model (the trace table).
    """
    from .. import __version__, fmt
    from . import style

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
              else html.escape(fit_r2.text()) + ", " if fit_r2 is not None
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
            elif isinstance(item, tuple) and item[0] == "warning":  # a caution the page shows as a warning box
                parts.append(f"<p class='note'>{html.escape(str(item[1]))}</p>")
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
