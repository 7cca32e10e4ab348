"""Charts of a search's history as optuna-dashboard draws a study's: parallel coordinates, parameter
importance, and the best-so-far curves of two searches on one chart.

* :func:`parallel_coordinates` — one line per successful simulation across every parameter's axis and
  the value optimised, coloured by that value (Inselberg's parallel coordinates; plotly ``Parcoords``,
  whose axes the reader can brush to keep a range). A parameter's values are evenly spaced up its axis
  (1, 2, 4 … 32 would otherwise crowd at the bottom), each labelled.
* :func:`importance_bars` — :class:`~.importance.ParameterImportance` as horizontal bars, most important
  on top.
* :func:`best_so_far` — each search's best value after each simulation (min or max by its goal).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import fmt as _fmt
from ..report import style
from ..report.plaintext import chart as plain
from .importance import encode


def valued(study: Any) -> str:
    """What a study's search optimised: ``objective`` (when it has one) or its response."""
    return "objective" if study.objective else study.response


def parallel_coordinates(study: Any) -> go.Figure:
    """A search's successful simulations as lines over its parameters and the value it optimised."""
    ok = [t for t in study.trials if t.status == "ok" and t.value is not None]
    params = [p for p in (study.params or (list(ok[0].design) if ok else [])) if all(p in t.design for t in ok)]
    dims = []
    for p in params:  # each value one step up its axis (as the forest sees it): 1, 2, 4 … 32 evenly spaced
        codes, levels = encode([t.design[p] for t in ok])
        shown = levels if len(levels) <= 16 else levels[:: -(-len(levels) // 16)]
        dims.append(dict(label=plain(p), values=codes.tolist(), range=[0, max(len(levels) - 1, 1)],
                         tickvals=[levels.index(v) for v in shown], ticktext=[plain(_fmt.fmt_value(v)) for v in shown]))
    name = valued(study)
    y = np.array([t.value for t in ok], dtype=float)
    dims.append(dict(label=plain(name), values=y.tolist()))
    if study.cost:
        dims.append(dict(label="cost", values=[float("nan") if t.cost is None else t.cost for t in ok]))
    line = dict(color=y.tolist(), colorscale="Viridis", showscale=True, reversescale=study.goal != "max",
                colorbar=dict(title=dict(text=plain(name), side="right"), thickness=14))
    fig = go.Figure(go.Parcoords(line=line, dimensions=dims, labelangle=-25, labelside="top"))
    fig.update_layout(height=520, margin=dict(l=50, r=90, b=40))
    style.apply(fig, title_text=f"Parallel coordinates: {len(ok):,} simulations, coloured by {plain(name)}")
    return fig.update_layout(margin=dict(t=fig.layout.margin.t + 60))  # the tilted axis labels below the title


def importance_bars(imp: Any) -> go.Figure:
    """Parameter importance as bars (per cent of the explained variance), the most important on top."""
    names, shares = list(imp.names)[::-1], [100 * s for s in imp.shares][::-1]
    fig = go.Figure(go.Bar(x=shares, y=[plain(n) for n in names], orientation="h",
                           marker_color=style.PALETTE[0], text=[f"{s:.1f} %" for s in shares],
                           textposition="outside", cliponaxis=False))
    fig.update_layout(xaxis_title="share of the explained variance (%)", height=max(260, 36 * len(names) + 140),
                      showlegend=False, xaxis_range=[0, min(100.0, max(shares, default=0) * 1.2 + 5)])
    return style.apply(fig, title_text=f"Parameter importance for {plain(imp.valued)}")


def best_so_far(labels: Sequence[str], studies: Sequence[Any]) -> go.Figure:
    """The best value so far of each study after each simulation (a search without a best — accuracy,
    pareto — is left out); the value each optimised on one axis, named when they differ."""
    fig = go.Figure()
    names = []
    for i, (label, study) in enumerate(zip(labels, studies)):
        if study.goal not in ("min", "max"):
            continue
        best = study.result().best_so_far()
        fig.add_trace(go.Scatter(x=list(range(1, len(best) + 1)), y=[np.nan if b is None else b for b in best],
                                 mode="lines", name=plain(label), line=dict(shape="hv", width=3,
                                                                             color=style.color(i))))
        names.append(valued(study))
    fig.update_layout(xaxis_title="simulations", yaxis_title=plain(" / ".join(dict.fromkeys(names)) or "value"),
                      height=420, legend=dict(orientation="h", yanchor="top", y=-0.2))
    return style.apply(fig, title_text="Best so far: the searches side by side")
