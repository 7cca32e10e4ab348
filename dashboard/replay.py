"""Replaying a stepwise fit row by row, for a lecture (Stargazer §5.2, Algorithm 1, Table 1).

A fit of 300 points takes milliseconds, so nobody can watch Stargazer's Table 1 grow. The replay
shows the stored trace one row at a time (Play / Pause / Step, a speed control): each row says in
one sentence why its term was accepted or rejected — the θ, φ or φ₃ rule with the row's own numbers —
the table (gpudse_core.report.trace) keeps the newest row in view and highlighted with the step and
decision columns frozen, and a chart draws the candidates' scores it compared, the chosen one
highlighted and the acceptance threshold marked. UI state only (which row is shown, kept in the address
as ``?row=``, so a copied link opens the replay at that row); the trace is the model's own.
"""

from __future__ import annotations

import math
import time
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from gpudse_core.jsonutil import finite_number
from gpudse_core.report import style, trace

from . import frame as ui
from . import state as ui_state

ROW_PARAM = "row"  # the address's parameter: the row shown (1 = the first, left out of the address)
_OPENED = "_gpudse_replay_opened"  # session_state: a replay was drawn (the address's row is taken once)
SPEEDS = (0.5, 1.0, 2.0, 4.0)  # rows per second
WHAT = {"initial": "parameter", "main": "parameter", "interaction": "pairwise interaction",
        "interaction3": "three-way interaction", "forced": "forced term",
        "revisit": "interaction of the revisit pass", "lookahead": "parameter with one of its pairs (look-ahead)",
        "nonlinear": "doubly non-linear part of an accepted interaction"}


def threshold(row: dict, before: dict | None, settings: dict) -> tuple[str, float | None]:
    """The rule's symbol and value: θ for parameters, φ for pairs, φ₃ for triples (the revisit pass
    after Algorithm 1 tries pairs and triples by the same rules; gpudse_core.report.trace.threshold)."""
    if row["kind"] == "initial":  # accepted without one; its symbol names the parameters' rule
        return "θ", (float(settings["theta"]) if settings.get("theta") is not None else None)
    return trace.threshold(row["kind"], row.get("chosen"), settings)


def explain(row: dict, before: dict | None, settings: dict) -> str:
    """The row's decision in words, with its numbers, as Markdown: the terms' names (the user's parameters)
    through the plain-text renderer, so a name cannot add an image, a link or formatting."""
    chosen = row.get("chosen")
    shown = {**row, "chosen": ui.plain(chosen) if isinstance(chosen, str) else chosen,
             "candidates": {ui.plain(k): v for k, v in (row.get("candidates") or {}).items()}}
    return _explain(shown, before, settings)


def _explain(row: dict, before: dict | None, settings: dict) -> str:
    kind, chosen, n = row["kind"], row["chosen"], len(row["candidates"])
    what = WHAT.get(kind, kind)
    if kind == "forced":
        return f"**{chosen}** is a forced term: it enters before the search, without a test."
    if chosen is None:
        return f"No {what} is left to try: the search ends."
    if kind == "prune":  # robust default, beyond Algorithm 1 (StepwiseRegression._prune)
        err = ui.fmt_pct(row["candidates"].get(chosen, float("nan")))
        kept = len(row.get("terms") or [])
        tail = (f"the terms after it are dropped and {kept} remain" if row["accepted"] else
                "nothing is dropped: the model predicts better with each accepted term than without it")
        return (f"A leave-one-out check of the selection path (beyond Algorithm 1): of its {n} prefixes, the one "
                f"**{chosen}** predicts the left-out rows best (mean relative error {err}); {tail}.")
    if kind == "robust":  # robust="huber" (StepwiseRegression._robust)
        if not row["candidates"]:  # a round as it ran (live progress)
            return f"**{chosen}**: the search is rerun on Huber pseudo-observations of the previous fit."
        shown = ", ".join(f"{t} {ui.fmt_pct(v)}" for t, v in row["candidates"].items())
        lead = ("Beyond Algorithm 1: the search was rerun on **Huber pseudo-observations** of the previous fit "
                "(the fitted values plus each residual clipped at the residuals' typical size), so that a few very "
                f"slow designs would not decide which terms enter. The fits' leave-one-out errors: {shown}. ")
        if chosen == "least squares":
            return lead + ("No rerun predicts clearly better (by more than 2 %), so **least squares** is kept: the "
                           "rows above are its search, on the data.")
        return lead + (f"**{chosen}** predicts best and is kept: the rows above (after the response scale) are its "
                       f"search, on its pseudo-observations, and its R² ({ui.fmt_r2(row['r2'])}) is theirs.")
    if kind == "cells":  # cells=True (StepwiseRegression._cells)
        shown = ", ".join(f"{t} {ui.fmt_pct(v)}" for t, v in row["candidates"].items())
        lead = ("Beyond Algorithm 1: each combination of two or three parameter levels (such as tile_x = 3 with "
                "shared memory on) was offered as a **level cell**, a column that is 1 for those designs. Cells "
                "entered while their F-test passed at 0.05 divided by the number of candidates. The leave-one-out "
                f"errors: {shown}. ")
        if not row["accepted"]:
            return lead + "**No cells** are kept: they do not predict the left-out rows more than 2 % better."
        return lead + (f"**{chosen}** predicts best and is kept: its cells are columns of the model's interaction "
                       f"terms (R² {ui.fmt_r2(row['r2'])}).")
    if kind == "transform":  # response_transform="auto" (StepwiseRegression._auto)
        shown = ", ".join(f"{t} {ui.fmt_pct(v)}" for t, v in sorted(row["candidates"].items(), key=lambda kv: kv[1]))
        return (f"The search ran once per response scale; by leave-one-out error ({shown}) the **{chosen}** scale "
                f"predicts best and is kept.")
    key = chosen_key(row)
    score = row["candidates"].get(key)
    sym, limit = threshold(row, before, settings)
    bound = f"{sym} = {limit:g}" if limit is not None else "the threshold"
    verdict = ":green[**accepted**]" if row["accepted"] else ":red[**rejected**]"
    crit = settings.get("criterion", "")
    r2_now = before["adj_r2" if settings.get("compare") == "adj_r2" else "r2"] if before else 0.0
    against = "adjusted R²" if settings.get("compare") == "adj_r2" else "R²"
    if kind == "initial":
        return (f"Of the {n} parameters, **{chosen}** explains most on its own ({_score(row, score)}): it is the "
                f"first term of the model, {verdict} without a threshold; R² is now {ui.fmt_r2(row['r2'])}.")
    if kind == "lookahead":
        shown = f"{chosen}** (scored as the block **{key}**)" if key != chosen else chosen
        lead = (f"No parameter passes θ on its own, so each one is tried together with one of its pairs: of the {n} "
                f"blocks, **{shown} is the best ({_score(row, score)})")
    else:
        lead = (f"The only candidate {what} is **{chosen}** ({_score(row, score)})" if n == 1 else
                f"Of the {n} candidate {_plural(what)}, **{chosen}** is the best ({_score(row, score)})")
    if score is None:  # a candidate that could not be scored (no degrees of freedom left)
        rule = f"it could not be scored against {bound}"
    elif crit == "ftest":
        cmp = "below" if row["accepted"] else "not below"
        rule = f"its F-test p-value {_p(score)} is {cmp} {bound}"
    elif crit == "adjr2" and settings.get("threshold_rule") == "relative" and limit is not None:
        gain = row["gain"] if row["gain"] is not None else score - r2_now
        cmp = "at least" if row["accepted"] else "less than"
        rule = (f"its gain over the current {against} ({ui.fmt_r2(r2_now)}) is {gain:+.5f}, {cmp} {sym} × "
                f"{against} = {limit:g} × {ui.fmt_r2(r2_now)} = {limit * r2_now:.5f}")
    elif crit == "adjr2":
        gain = row["gain"] if row["gain"] is not None else score - r2_now
        cmp = "more than" if row["accepted"] else "not more than"
        rule = f"its gain over the current {against} ({ui.fmt_r2(r2_now)}) is {gain:+.5f}, {cmp} {bound}"
    else:
        gain = row["gain"] or 0.0
        cmp = "more than" if row["accepted"] else "not more than"
        rule = f"it lowers {crit.upper()} by {gain:.4g}, {cmp} {bound}"
    after = f"; R² is now {ui.fmt_r2(row['r2'])}" if row["accepted"] else "; the model stays as it was"
    return f"{lead}, and {rule}: {verdict}{after}."  # one sentence per row


def _plural(what: str) -> str:
    """'pairwise interaction' -> 'pairwise interactions'; 'interaction of the revisit pass' ->
    'interactions of the revisit pass' (the noun, not the last word, takes the s)."""
    head, sep, tail = what.partition(" of ")
    return f"{head}s{sep}{tail}"


LOWER_BETTER = ("p_value", "aic", "bic", "loo_error")


def chosen_key(row: dict) -> str | None:
    """The candidate key of the row's chosen term. A look-ahead row chooses parameter P but scored
    blocks 'P + P:Q', so its key is P's best block."""
    chosen, cands = row.get("chosen"), row.get("candidates") or {}
    if chosen is None or chosen in cands:
        return chosen
    blocks = [(k, v) for k, v in cands.items() if k.startswith(f"{chosen} + ") and finite_number(v)]
    if not blocks:
        return chosen
    pick = min if row.get("metric") in LOWER_BETTER else max
    return pick(blocks, key=lambda kv: kv[1])[0]


def _p(p: float | None) -> str:
    """A p-value with two significant digits (scientific below 1e-4, so it can be compared with θ)."""
    if not finite_number(p):
        return "–"
    if p <= 0.0:  # below the smallest double: the F-test underflowed
        return "< 1e-300"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _score(row: dict, value: float | None) -> str:
    metric = row["metric"]
    if not finite_number(value):
        return "not scored"
    if metric == "p_value":
        return f"p = {_p(value)}"
    if metric in ("r2", "adj_r2"):
        return f"{'adjusted R²' if metric == 'adj_r2' else 'R²'} {ui.fmt_r2(value)}"
    return f"{metric.upper()} {value:.4g}"


def candidates_chart(row: dict, before: dict | None, settings: dict) -> go.Figure:
    """The candidates' scores of one row, best first, each labelled with its value: the chosen one green
    (accepted) or red (rejected), the others grey; the threshold it had to pass, dashed (named in the
    axis title, where no label can be clipped). p-values are drawn as −log₁₀ p (≥ 0: higher is stronger
    evidence) on an axis from 0; R² values on an axis zoomed to where they differ."""
    items = [(k, float(v)) for k, v in row["candidates"].items() if finite_number(v)]  # unscored candidates: no bar
    chosen = chosen_key(row)
    metric = row["metric"]
    if metric == "p_value":  # smaller is better: draw −log10 p, higher is better
        texts = [f"p = {_p(v)}" for _, v in items]
        items = [(k, -math.log10(min(max(v, 1e-300), 1.0))) for k, v in items]
        label = "−log₁₀ p (higher: stronger evidence)"
    else:
        label = {"r2": "R² with the candidate", "adj_r2": "adjusted R² with the candidate",
                 "loo_error": "leave-one-out mean relative error (lower: better)"}.get(metric, metric.upper())
        texts = [ui.fmt_pct(v) if metric == "loo_error" else (ui.fmt_r2(v) if metric in ("r2", "adj_r2")
                                                               else f"{v:.4g}") for _, v in items]
    lower_better = metric in ("aic", "bic", "loo_error")
    order = sorted(range(len(items)), key=lambda i: items[i][1], reverse=not lower_better)
    items, texts = [items[i] for i in order], [texts[i] for i in order]
    colours = [(style.PALETTE[3] if row["accepted"] else style.PALETTE[2]) if k == chosen
               else style.rgba(style.GREY, 0.45) for k, _ in items]
    fig = go.Figure(go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h", marker_color=colours,
                           name="candidates", text=texts, textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{text}<extra></extra>"))
    sym, limit = threshold(row, before, settings)
    crit = settings.get("criterion", "")
    line = None
    if limit is not None and row["kind"] not in ("initial", "forced") and row["chosen"] is not None:
        if crit == "ftest" and limit > 0:
            line = -math.log10(limit)
        elif crit == "adjr2" and before is not None:
            line = before["adj_r2" if settings.get("compare") == "adj_r2" else "r2"] + limit
    xs = [v for _, v in items] + ([line] if line is not None else [])
    if xs:
        lo, hi = min(xs), max(xs)
        if metric == "p_value" or metric not in ("r2", "adj_r2") or lo <= 0:
            lo = min(0.0, lo)
        else:  # R² near 1 differ in the third decimal: zoom to them, the values are written on the bars
            lo = max(0.0, lo - 0.5 * (hi - lo or 0.01))
        span = (hi - lo) or 1.0
        fig.update_xaxes(range=[lo, hi + 0.28 * span])  # room right of the longest bar for its label
    if line is not None:
        fig.add_vline(x=line, line=dict(color=style.TEXT, dash="dash", width=1.5))
        label += f"<br>dashed: the threshold ({sym} = {limit:g})"
    fig.update_layout(xaxis_title=label, height=max(240, 30 * len(items) + 150), yaxis_autorange="reversed",
                      showlegend=False)
    return style.apply(fig, title_text=f"Row {row['step']}: the candidates compared")


def linked() -> bool:
    """True when the address names a replay row: the page opens the replay (a copied link's view)."""
    return ui_state.url_number(ROW_PARAM, 1) is not None


def replay(model: Any, params: list[str], key: str) -> None:
    """The replay panel for *model*'s trace (*key*: unique per model version)."""
    rows = list(model.trace)
    if not rows:
        return
    settings = dict(model.settings or {})
    ss = st.session_state
    k_row, k_play, k_last = f"{key}_row", f"{key}_play", f"{key}_last"
    if k_row not in ss:
        # the session's first replay opens at the link's row (clamped to the trace); a later fit's at row 1
        linked = None if ss.get(_OPENED) else ui_state.url_number(ROW_PARAM, 1, len(rows))
        ss[k_row], ss[_OPENED] = linked or 1, True
    def restart() -> None:
        ss[k_row], ss[k_play] = 1, False

    def toggle() -> None:
        ss[k_play] = not ss.get(k_play, False)
        if ss[k_play] and ss[k_row] >= len(rows):
            ss[k_row] = 1
        ss[k_last] = time.monotonic()

    def step() -> None:
        ss[k_row], ss[k_play] = min(len(rows), ss[k_row] + 1), False

    def whole() -> None:
        ss[k_row], ss[k_play] = len(rows), False

    # callbacks change the row before anything is drawn, so every control shows the new state
    c1, c2, c3, c4, c5 = st.columns([1, 1, 1, 1, 3], vertical_alignment="bottom")
    c1.button("Restart", icon=":material/first_page:", key=f"{key}_restart", width="stretch", on_click=restart)
    playing = ss.get(k_play, False)
    c2.button("Pause" if playing else "Play", icon=":material/pause:" if playing else ":material/play_arrow:",
              key=f"{key}_toggle", width="stretch", type="primary", on_click=toggle)
    c3.button("Step", icon=":material/skip_next:", key=f"{key}_step", width="stretch",
              disabled=ss[k_row] >= len(rows), on_click=step)
    c4.button("All rows", icon=":material/last_page:", key=f"{key}_end", width="stretch", on_click=whole)
    speed = c5.select_slider("Speed (rows per second)", SPEEDS, value=1.0, key=f"{key}_speed")

    @st.fragment(run_every=1.0 / speed if playing else None)
    def panel() -> None:
        if ss.get(k_play) and time.monotonic() - ss.get(k_last, 0.0) >= 0.9 / speed:
            ss[k_row] = min(len(rows), ss[k_row] + 1)
            ss[k_last] = time.monotonic()
            if ss[k_row] >= len(rows):
                ss[k_play] = False
                st.rerun(scope="app")  # the end: the controls show Play again, the polling stops
        i = ss[k_row]
        ui_state.to_url(ROW_PARAM, i, default=1)
        row, before = rows[i - 1], rows[i - 2] if i >= 2 else None
        kind = ui.TRACE_KINDS.get(row["kind"], row["kind"])
        st.markdown(f"**Row {i} of {len(rows)}** ({ui.plain(kind)}). " + explain(row, before, settings))
        # the rows so far, the newest at the bottom, highlighted and kept in view (the table follows it);
        # the whole width, so every candidate's column shows at 1280 px; the chart of this row below
        ui.trace_table(rows[:i], params, settings=settings, current=i, follow=True,
                       height_rem=14 if ui.presenting() else 20, model_column=False)
        a, _ = st.columns([3, 2])
        ui.chart(candidates_chart(row, before, settings), a)

    panel()
