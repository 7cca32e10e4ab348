"""The stepwise trace as Stargazer's Table 1 (Stargazer §5.2, Algorithm 1, Table 1).

In the paper's table each row is a step of the search and each column a candidate: the first row
holds every parameter's R² alone, later rows the adjusted R² of the current model with the candidate
added, and the term that enters is printed in bold. Interaction rows read "Adjusted R² of simd:" with
the value of ``simd:#blk`` in the ``#blk`` column. This module builds that table from a fit's trace
(each step records ``r2s`` and ``adj_r2s`` beside the criterion's own scores) for every criterion,
and adds what the paper's θ/φ rule does not need but other criteria do: the statistic the criterion
decided by (F-test p, gain in R², drop in AIC/BIC, mean leave-one-out error) in its own column, beside
the R² values rather than instead of them, and (:func:`threshold`) the limit the step compared it with:
θ for a parameter, φ for a pair, φ₃ for a three-way interaction (Stargazer Algorithm 1; the revisit and
the doubly non-linear parts by their interaction's order), none for the first term.

One table, four renderings: :func:`build` (the table as data, also what ``gpudse fit --json`` prints
under ``trace_table``), :func:`text` (the CLI), :func:`html` (the dashboard's fit page and replay,
and the HTML report). Every candidate gets a column — a parameter's own column, or for a term that
does not fit the paper's ``X:`` layout a column named after the term — so no value is cut off.
"""

from __future__ import annotations

import html as _html
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .. import fmt
from ..jsonutil import finite_number

KIND_WORDS = {"initial": "first term", "main": "parameter", "interaction": "pair", "interaction3": "three-way",
              "revisit": "revisit", "lookahead": "look-ahead", "nonlinear": "non-linear part", "forced": "forced",
              "prune": "pruning (LOO)", "transform": "response scale",
              "robust": "robust fit", "cells": "level cells"}
NONLINEAR = "non-linear part"
STATISTIC = {"p_value": "p (F-test)", "adj_r2": "gain", "r2": "gain", "aic": "AIC drop", "bic": "BIC drop",
             "loo_error": "mean LOO error"}


@dataclass
class Row:
    """One row: the step, the values per column (R² or adjusted R² of the model with the candidate),
    which column holds the chosen candidate, and the decision."""

    step: int
    kind: str
    label: str  # what the values are: "R²", "adj. R²", "adj. R² of smp:" (the paper's row heading)
    values: dict[str, float | None]
    chosen: str | None
    column: str | None  # the column of the chosen candidate (None: not among the R² columns)
    accepted: bool
    statistic: str  # the criterion's name for the chosen candidate ("p (F-test)", "gain", "LOO error")
    statistic_value: float | None
    r2: float
    adj_r2: float
    terms: list[str] = field(default_factory=list)
    # each column's candidate scored by the criterion itself (p-value, AIC, BIC; adjusted R² under the
    # paper's rule, where it is the value): the page shows it when the pointer rests on the cell
    scores: dict[str, float | None] = field(default_factory=dict)
    metric: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "kind": self.kind, "label": self.label, "values": dict(self.values),
                "scores": dict(self.scores), "metric": self.metric,
                "chosen": self.chosen, "column": self.column, "accepted": self.accepted,
                "statistic": self.statistic, "statistic_value": self.statistic_value, "r2": self.r2,
                "adj_r2": self.adj_r2, "terms": list(self.terms)}


@dataclass
class Table:
    columns: list[str]  # candidate columns: the parameters in the given order, then other terms as met
    rows: list[Row]

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [r.to_dict() for r in self.rows]}


def _paper_prefix(keys: Sequence[str], params: set[str]) -> str | None:
    """'smp' when every key is 'smp:Q' with Q a parameter, all Q different (the paper's 'Adjusted R² of
    smp:' row); 'smp:blk' for triples 'smp:blk:Q'. None when the keys do not share such a prefix."""
    if not keys or any(":" not in k or " " in k for k in keys):
        return None
    heads = {k.rsplit(":", 1)[0] for k in keys}
    lasts = [k.rsplit(":", 1)[1] for k in keys]
    if len(heads) != 1 or len(set(lasts)) != len(lasts) or not set(lasts) <= params:
        return None
    head = heads.pop()
    return head if not set(head.split(":")) & set(lasts) else None


def _column(key: str, params: set[str]) -> str:
    """A candidate's column outside the paper layout: a parameter's own, a look-ahead block 'P + P:Q'
    under P, the non-linear part of an interaction under :data:`NONLINEAR`, any other term under its
    own name."""
    if key in params:
        return key
    if key.endswith(" (full)"):  # the doubly non-linear part of an accepted interaction: one shared column
        return NONLINEAR
    head = key.split(" + ", 1)[0]
    return head if " + " in key and head in params else key


def build(trace: Iterable[Mapping[str, Any]], params: Sequence[str]) -> Table:
    """Stargazer Table 1 from a fit's trace (a list of step dicts, ``TraceStep.to_dict()``) with one
    column per parameter of *params* (in that order) and one per other term a step scored."""
    pset = set(params)
    columns = list(params)
    rows: list[Row] = []
    for i, r in enumerate(trace):
        kind = str(r.get("kind", ""))
        first = kind == "initial"  # the paper's first row: each parameter's R² alone
        scores = dict(r.get("r2s") or {}) if first else dict(r.get("adj_r2s") or {})
        chosen = r.get("chosen")
        chosen_key = chosen
        cands = r.get("candidates") or {}
        if chosen is not None and chosen not in cands and chosen not in scores:  # look-ahead: 'P + P:Q'
            blocks = [k for k in scores if k.startswith(f"{chosen} + ")]
            if blocks:
                chosen_key = max(blocks, key=lambda k: scores[k] if finite_number(scores[k]) else -math.inf)
        label = "R²" if first else "adj. R²"
        values: dict[str, float | None] = {}
        crit: dict[str, float | None] = {}
        column: str | None = None
        prefix = _paper_prefix(list(scores), pset)
        for key, v in sorted(scores.items(), key=lambda kv: kv[0] != chosen_key):  # the chosen one first: it
            # gets the shared column when two non-linear parts meet in one row
            col = key.rsplit(":", 1)[1] if prefix else _column(key, pset)
            if col in values and " + " not in key:  # two non-linear parts in one row: each its own column
                col = key
            v = float(v) if finite_number(v) else None
            if col in values:  # two look-ahead blocks of one parameter: the best one shows
                old = values[col]
                if v is None or (old is not None and old >= v):
                    if key == chosen_key:
                        column = col
                    continue
            values[col] = v
            c = cands.get(key)
            crit[col] = float(c) if finite_number(c) else None
            if col not in columns:
                columns.append(col)
            if key == chosen_key:
                column = col
        if prefix:
            label = f"{label} of {prefix}:"
        if not scores:
            label = "–"
            # a decision among fits, not candidates in columns: keep its scores
            if kind in ("robust", "transform", "cells"):
                crit = {str(k): (float(v) if finite_number(v) else None) for k, v in cands.items()}
        metric = str(r.get("metric", ""))
        stat_name = STATISTIC.get(metric, metric)
        cand_val = cands.get(chosen_key) if chosen_key is not None else None
        if metric in ("p_value", "loo_error"):
            stat = cand_val
        else:  # the gain the rule compared with θ/φ (R² gain, AIC/BIC drop); the first step has none
            stat = r.get("gain")
        rows.append(Row(step=int(r.get("step", i + 1)), kind=kind, label=label, values=values, chosen=chosen,
                        column=column, accepted=bool(r.get("accepted")), statistic=stat_name,
                        statistic_value=float(stat) if finite_number(stat) else None,
                        r2=float(r["r2"]) if finite_number(r.get("r2")) else math.nan,
                        adj_r2=float(r["adj_r2"]) if finite_number(r.get("adj_r2")) else math.nan,
                        terms=list(r.get("terms") or []), scores=crit, metric=str(r.get("metric", ""))))
    return Table(columns=columns, rows=rows)


# ---- cells ------------------------------------------------------------------------------------------
def decimals(row: Row) -> int:
    """The paper's precision: three decimals while R² values are far from 1 (0.719, 0.851), four once
    they crowd together near it (0.9728, 0.9769)."""
    vals = [abs(v) for v in row.values.values() if v is not None]
    return 4 if vals and max(vals) >= 0.95 else 3


def cell(row: Row, column: str) -> str:
    v = row.values.get(column)
    return fmt.fmt_fixed(v, decimals(row)) if v is not None else ("–" if column in row.values else "")


def statistic_text(row: Row) -> str:
    """The criterion's statistic of the chosen candidate, as the rule compared it."""
    v = row.statistic_value
    if v is None:
        return ""
    if row.statistic.startswith("p"):
        if v <= 0.0:
            return "p < 1e-300"  # below the smallest double: the F-test underflowed
        return f"p = {v:.2g}" if v >= 1e-4 else f"p = {v:.1e}"
    if row.statistic == "mean LOO error":
        return f"mean LOO error {fmt.fmt_percent(v)}"
    if row.statistic == "gain":  # four decimals like R²; a gain too small for them in two significant digits
        return f"gain {v:+.4f}" if v == 0 or abs(v) >= 5e-5 else f"gain {v:+.1e}"
    return f"{row.statistic} {fmt.fmt_number(v, sig=4)}"


def score_text(row: Row, column: str) -> str:
    """What the criterion made of the candidate in *column* ('p = 3.1e-05', 'AIC 1,234'); '' under the
    paper's adjusted-R² rule, whose score is the value itself."""
    v = row.scores.get(column)
    if v is None or row.metric in ("r2", "adj_r2"):
        return ""
    if row.metric == "p_value":
        return "p < 1e-300" if v <= 0 else (f"p = {v:.2g}" if v >= 1e-4 else f"p = {v:.1e}")
    if row.metric == "loo_error":
        return f"mean LOO error {fmt.fmt_percent(v)}"
    return f"{row.metric.upper()} {fmt.fmt_number(v, sig=5)}"


def term_text(row: Row) -> str:
    """The chosen term and the decision: 'simd:blk added', 'dramq rejected', 'log scale chosen'."""
    if row.chosen is None:
        return "nothing left to try"
    if row.kind == "transform":
        return f"{row.chosen} scale chosen"
    if row.kind == "prune":
        return f"kept {row.chosen}" if row.accepted else "nothing dropped"
    if row.kind == "robust":  # StepwiseRegression._robust: the search rerun on Huber pseudo-observations
        if not row.scores:  # a round as it ran (live progress)
            return f"{row.chosen}: search rerun on Huber pseudo-observations"
        others = ", ".join(f"{k} {fmt.fmt_percent(v)}" for k, v in row.scores.items()
                           if k != row.chosen and v is not None)
        return f"kept {row.chosen}" + (f" (mean LOO error of the others: {others})" if others else "")
    if row.kind == "cells":  # StepwiseRegression._cells: level-combination indicator columns
        return f"level cells added ({row.chosen})" if row.accepted else "no level cells added"
    return f"{row.chosen} {'added' if row.accepted else 'rejected'}"


def used_columns(table: Table) -> list[str]:
    """The columns some row has a value in (a parameter never scored, e.g. forced out, is left out)."""
    seen = {c for r in table.rows for c in r.values}
    return [c for c in table.columns if c in seen]


RULE = {"main": ("θ", "theta"), "lookahead": ("θ", "theta"), "interaction": ("φ", "phi"),
        "interaction3": ("φ₃", "phi3")}


def threshold(kind: str, chosen: str | None, settings: Mapping[str, Any]) -> tuple[str, float | None]:
    """The rule's symbol and value a step of *kind* compared its candidate with (the search's ``gain_ok``
    limits): θ for parameters, φ for pairs, φ₃ for triples; the revisit pass and a doubly non-linear part
    by their interaction's order. ``("", None)`` for a step without one (the first term, pruning, ...)."""
    if kind in ("revisit", "nonlinear"):
        kind = "interaction3" if str(chosen or "").count(":") >= 2 else "interaction"
    sym, key = RULE.get(kind, ("", ""))
    value = settings.get(key) if key else None
    return sym, (float(value) if value is not None else None)


def threshold_text(row: Row, settings: Mapping[str, Any]) -> str:
    """What the step's statistic had to beat, in the criterion's terms: 'p < θ = 0.001', 'gain > φ = 0.01',
    'gain ≥ θ × R² = 0 × R²', 'AIC drop > θ = 2'; 'none (first term)'; '' for steps without a rule."""
    if row.kind == "initial":
        return "none (first term)"
    sym, limit = threshold(row.kind, row.chosen, settings)
    if limit is None or row.chosen is None:
        return ""
    crit = settings.get("criterion", "ftest")
    if crit == "adjr2":
        if settings.get("threshold_rule") == "relative":
            against = "adj. R²" if settings.get("compare") == "adj_r2" else "R²"
            return f"gain ≥ {sym} × {against} = {limit:g} × {against}"
        return f"gain > {sym} = {limit:g}"
    if crit in ("aic", "bic"):
        return f"{crit.upper()} drop > {sym} = {limit:g}"
    return f"p < {sym} = {limit:g}"


# ---- renderings ------------------------------------------------------------------------------------
def text(table: Table, settings: Mapping[str, Any] | None = None) -> str:
    """The table for a terminal: the accepted term's value in [brackets] (the paper's bold), the best
    rejected one in (parentheses); the criterion's statistic, the threshold it was compared with (given the
    fit's *settings*) and the model's R² after each step."""
    cols = used_columns(table)
    rule = settings is not None
    head = ["step", "row", *cols, "decision", "statistic", *(["threshold"] if rule else []), "R²"]
    body = []
    for r in table.rows:
        cells = []
        for c in cols:
            s = cell(r, c)
            if c == r.column and s:
                s = f"[{s}]" if r.accepted else f"({s})"
            cells.append(s)
        body.append([str(r.step), r.label, *cells, term_text(r), statistic_text(r),
                     *([threshold_text(r, settings)] if rule else []), fmt.fmt_r2(r.r2)])
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    left = {1, head.index("decision")} | ({head.index("threshold")} if rule else set())  # read left-aligned
    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(head), line(["-" * w for w in widths])] + [line(b) for b in body]
    return "\n".join(s.rstrip() for s in out) + ("\n[x] added (the paper's bold), (x) best candidate, rejected; "
                                                 + ("threshold: what the statistic had to pass (θ a parameter, "
                                                    "φ a pair, φ₃ a three-way interaction); " if rule else "")
                                                 + "R²: the model after the step")


TABLE_CSS = """
.gtrace{overflow:auto;max-height:var(--gtrace-h,28rem);border:1px solid #d0d4da;border-radius:6px;
  display:flex;flex-direction:column}
.gtrace.follow{flex-direction:column-reverse}
.gtrace table{border-collapse:separate;border-spacing:0;font-size:var(--gtrace-fs,0.85rem);
  font-variant-numeric:tabular-nums;width:max-content;min-width:100%}
.gtrace th,.gtrace td{padding:.25em .6em;border-bottom:1px solid #eceef1;text-align:right;white-space:nowrap;
  background:#fff}
.gtrace th{position:sticky;top:0;z-index:2;background:#f4f5f7;font-weight:600}
.gtrace .st,.gtrace .tm{position:sticky;z-index:1;text-align:left;background:#fafbfc}
.gtrace th.st,.gtrace th.tm{z-index:3;background:#eef0f3}
.gtrace .st{left:0;min-width:3.4em;max-width:3.4em;width:3.4em;box-sizing:border-box}
.gtrace .tm{left:3.4em;border-right:2px solid #d0d4da;white-space:normal;min-width:6em;max-width:10em}
.gtrace .sm{background:#f7f9fb}
.gtrace th.sm{background:#f4f5f7}
.gtrace .lb{text-align:left;color:#555}
.gtrace .model{text-align:left;white-space:normal;min-width:18em;color:#444}
.gtrace td.add{font-weight:700;background:#c8e6c9}
.gtrace td.rej{background:#ffcdd2}
.gtrace tr.now td{background:#fff6cc}
.gtrace tr.now td.st,.gtrace tr.now td.tm{background:#ffe98a}
.gtrace tr.now td.add{background:#a5d6a7}
.gtrace tr.now td.rej{background:#ef9a9a}
"""


SUMMARY = ("statistic", "R²", "adj. R²")  # the HTML table's columns right after the term: the step's outcome


def summary_headers(settings: Mapping[str, Any] | None) -> tuple[str, ...]:
    """:data:`SUMMARY`, with the threshold (:func:`threshold_text`) beside the statistic when the fit's
    *settings* are known — as in the CLI's table."""
    return SUMMARY if settings is None else (SUMMARY[0], "threshold", *SUMMARY[1:])


def html(table: Table, settings: Mapping[str, Any] | None = None, *, current: int | None = None,
         follow: bool = False, model_column: bool = True) -> str:
    """The table as HTML (all text escaped): step and decision columns frozen at the left, the header
    frozen at the top; the criterion's statistic, the threshold it was held to (given the fit's
    *settings*, as in :func:`text`), R² and adjusted R² next (:func:`summary_headers`, in view at
    1280 px however many candidates there are), then the candidates' values — the accepted term's
    bold on green, the best rejected one on red — and the model after the step.
    *current* (a 1-based row) is highlighted; *follow* keeps the scroll at the last row (the replay:
    the newest row stays in view without script). Include :data:`TABLE_CSS` once on the page."""
    e = _html.escape
    cols = used_columns(table)
    summary_head = summary_headers(settings)
    # what decided the step first (a projector shows ~1,200 px: 20-odd candidate columns would push the
    # statistic out of view), then the paper's candidate values, whose box scrolls sideways
    head = ("<tr><th class='st'>step</th><th class='tm'>term</th>"
            + "".join(f"<th class='sm'>{h}</th>" for h in summary_head)
            + "<th class='lb'>values</th>" + "".join(f"<th>{e(c)}</th>" for c in cols)
            + ("<th class='model'>model after the step</th>" if model_column else "") + "</tr>")
    body = []
    for i, r in enumerate(table.rows, start=1):
        tds = []
        for c in cols:
            cls = ""
            if c == r.column and c in r.values:
                cls = " class='add'" if r.accepted else " class='rej'"
            tip = score_text(r, c)
            tds.append(f"<td{cls}" + (f' title="{e(tip)}"' if tip else "") + f">{e(cell(r, c))}</td>")
        kind = KIND_WORDS.get(r.kind, r.kind)
        words = term_text(r)
        # narrow: '+ simd:blk', '✗ dramq'
        if r.chosen is not None and r.kind not in ("prune", "transform", "robust", "cells"):
            words = f"+ {r.chosen}" if r.accepted else f"✗ {r.chosen}"
        elif r.kind == "robust" and r.scores:  # narrow too: the others' errors are in the cell's tooltip
            words = f"kept {r.chosen}"
            kind = term_text(r)
        elif r.kind == "cells":
            words = f"+ {r.chosen}" if r.accepted else "no cells"
            kind = term_text(r)
        words = e(words).replace(":", ":<wbr>")  # a long interaction wraps at its colons, not off the screen
        decision = f"<b>{words}</b>" if r.accepted and r.kind not in ("prune", "transform", "robust") else words
        summary = (statistic_text(r), *([threshold_text(r, settings)] if settings is not None else []),
                   fmt.fmt_r2(r.r2), fmt.fmt_r2(r.adj_r2))
        body.append(f"<tr data-row='{i}'{' class=now' if current == i else ''}>"
                    f"<td class='st'>{r.step}</td><td class='tm' title='{e(kind)}'>{decision}</td>"
                    + "".join(f"<td class='sm'>{e(v)}</td>" for v in summary)
                    + f"<td class='lb'>{e(r.label)}</td>{''.join(tds)}"
                    + (f"<td class='model'>{e(' + '.join(r.terms))}</td>" if model_column else "") + "</tr>")
    return (f"<div class='gtrace{' follow' if follow else ''}'><table><thead>{head}</thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")
