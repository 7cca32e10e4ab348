"""THE chart style of gpudse: one Plotly template and the helpers every figure is drawn with.

Pages and the HTML report draw the same figure objects (``gpudse_core.report.figures``), and every figure
carries this style *inside* it: :func:`apply` sets the ``gpudse`` template on the figure and gives each
trace an explicit colour. Nothing depends on Plotly's global default template, which Streamlit replaces
on import with one whose colours are placeholders (``#000001`` … ``#000010``) that only its own front end
fills in — that is why the report's charts were all black. Pages show figures with
``st.plotly_chart(fig, theme=None)`` so Streamlit's theme does not restyle them either.

* :data:`PALETTE` — twelve colours, chosen greedily for the largest smallest pairwise CIELAB distance
  from well-known qualitative palettes (Tableau 10, Tol/CARTO Safe, D3), lightness 20–75 so that every
  colour reads on white; a 13th and later series repeat the colours with dashed lines or hatched bars.
* :func:`axis_for` — the axis for a design parameter: a logarithmic axis ticked exactly at the legal
  values for geometric parameters (powers of two: 1, 2, 4, 8, 16), category axes for categorical ones,
  and linear axes ticked at the values otherwise. No "2 … 9" minor-tick labels.
* :func:`log_axis` — a log axis for measured quantities, ticked 1-2-5 per decade (or per decade).
* :func:`model_line` and :func:`legal_values_trace` — a response curve as the model evaluates it between
  the legal values (dashed: those designs cannot exist) and markers at the legal values.
* :func:`apply` — template, colours, one legend entry per group, wrapped titles that are not clipped.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, Iterable, Sequence

import plotly.graph_objects as go
import plotly.io as pio

from .. import fmt

TEMPLATE = "gpudse"
PALETTE = ("#4E79A7", "#F28E2B", "#E15759", "#59A14F", "#AA4499", "#BCBD22",
           "#9C755F", "#661100", "#332288", "#17BECF", "#B07AA1", "#FF9DA7")
GREY = "#7F7F7F"
TEXT = "#1F2933"
GRID = "#E4E7EB"
SEQUENTIAL = "Viridis"  # perceptually uniform and readable in grey: heatmaps
DASHES = ("solid", "dash", "dot", "dashdot")  # the 13th series on: the colours again, another dash
PATTERNS = ("", "/", "x", ".")
SYMBOLS = ("circle", "square", "diamond", "triangle-up")  # markers of the 13th series on
FONT_FAMILY = ('"Source Sans 3", "Source Sans Pro", system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, '
               'Arial, sans-serif')  # system fonts only: nothing is fetched
FONT_SIZE = 15  # readable at 1280 px on a projector
TITLE_SIZE = 18
TITLE_WRAP = 60  # characters per title line (a half-width chart at 1280 px)
AXIS_TITLE_WRAP = 55


def rgba(color: str, alpha: float) -> str:
    """``#RRGGBB`` as ``rgba(r,g,b,alpha)`` (bands, translucent points)."""
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha:g})"


def color(i: int) -> str:
    """The *i*-th series colour (cycling)."""
    return PALETTE[i % len(PALETTE)]


def symbol(i: int) -> str:
    """The marker symbol of the *i*-th series: circles for the first twelve, then other shapes."""
    return SYMBOLS[(i // len(PALETTE)) % len(SYMBOLS)]


_NUMBERS = dict(separatethousands=True, exponentformat="SI", minexponent=6)  # 210,512 and 21.05M, as fmt does


def _axis_defaults() -> dict:
    return dict(automargin=True, showline=True, linecolor="#5F6B7A", ticks="outside", tickcolor="#5F6B7A",
                gridcolor=GRID, zeroline=False, title=dict(font=dict(size=FONT_SIZE), standoff=8),
                tickfont=dict(size=FONT_SIZE - 1), **_NUMBERS,
                hoverformat=",.4~r", minor=dict(ticks="", showgrid=False))


def template() -> go.layout.Template:
    """The ``gpudse`` Plotly template (also registered as ``plotly.io.templates["gpudse"]``)."""
    return go.layout.Template(
        layout=go.Layout(
            colorway=list(PALETTE),
            font=dict(family=FONT_FAMILY, size=FONT_SIZE, color=TEXT),
            # the title sits at the top of the figure; apply() sizes the top margin to its lines
            title=dict(font=dict(size=TITLE_SIZE), x=0, xanchor="left", xref="paper", yref="container", y=1,
                       yanchor="top", pad=dict(t=12)),
            paper_bgcolor="white", plot_bgcolor="white",
            margin=dict(l=70, r=30, t=70, b=60, pad=2),
            legend=dict(font=dict(size=FONT_SIZE - 2), bgcolor="rgba(255,255,255,0.85)", itemsizing="constant",
                        tracegroupgap=2),
            hoverlabel=dict(font=dict(family=FONT_FAMILY, size=FONT_SIZE - 1)),
            xaxis=_axis_defaults(), yaxis=_axis_defaults(),
            colorscale=dict(sequential=SEQUENTIAL),
            coloraxis=dict(colorbar=dict(outlinewidth=0, tickfont=dict(size=FONT_SIZE - 2), **_NUMBERS)),
            separators=".,",
        ),
        data=dict(
            scatter=[go.Scatter(line=dict(width=2.5), marker=dict(size=7))],
            scattergl=[go.Scattergl(line=dict(width=2.5), marker=dict(size=6))],
            bar=[go.Bar(marker=dict(line=dict(width=0)))],
            heatmap=[go.Heatmap(colorscale=SEQUENTIAL, colorbar=dict(outlinewidth=0, **_NUMBERS))],
            box=[go.Box(boxpoints="outliers", line=dict(width=1.5))],
        ),
    )


def register() -> str:
    """Register the template once per process (idempotent); returns its name. Does not touch the default."""
    if TEMPLATE not in pio.templates:
        pio.templates[TEMPLATE] = template()
    return TEMPLATE


register()


def wrap(text: str, width: int) -> str:
    """Plotly does not wrap titles: break long ones into lines (``<br>``) so none is clipped."""
    if not text or len(text) <= width or "<br>" in text:
        return text
    return "<br>".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False))


def title(text: str, source: str | None = None) -> dict:
    """A title, wrapped, with its source (the paper's figure) as a smaller grey subtitle."""
    out: dict = dict(text=wrap(text, TITLE_WRAP))
    if source:
        out["subtitle"] = dict(text=source, font=dict(size=FONT_SIZE - 2, color="#5F6B7A"))
    return out


# -- axes ------------------------------------------------------------------------------------------------------

def is_geometric(values: Sequence[Any]) -> bool:
    """Positive numbers, three or more, each about a constant factor ≥ 1.5 times the previous (1, 2, 4, 8)."""
    try:
        xs = sorted(float(v) for v in values)
    except (TypeError, ValueError):
        return False
    if len(xs) < 3 or xs[0] <= 0:
        return False
    ratios = [b / a for a, b in zip(xs, xs[1:])]
    return min(ratios) >= 1.5 and max(ratios) / min(ratios) <= 1.1


def label(param: Any) -> str:
    """A parameter's axis label: its display name and unit, ``#blk (blocks/core)``."""
    from .plaintext import chart

    unit = getattr(param, "unit", "")
    name = getattr(param, "display", None) or getattr(param, "name", str(param))
    return chart(f"{name} ({unit})" if unit else name)


def axis_for(param: Any, title_text: str | None = None) -> dict:
    """The axis for a design parameter (a ``Parameter``): log with ticks at the legal values when they are
    geometric, category when categorical, linear ticked at the values otherwise. Use it as
    ``fig.update_xaxes(**style.axis_for(p))``."""
    values = list(param.values)
    text = title_text or label(param)
    if getattr(param, "kind", "numeric") == "categorical" or any(isinstance(v, str) for v in values):
        return dict(type="category", categoryorder="array", categoryarray=[str(v) for v in values],
                    title=dict(text=wrap(text, AXIS_TITLE_WRAP)))
    nums = sorted(float(v) for v in values)
    ticks = dict(tickmode="array", tickvals=nums, ticktext=[fmt.fmt_value(v) for v in sorted(values)])
    if is_geometric(nums):
        lo, hi = math.log10(nums[0]), math.log10(nums[-1])
        pad = 0.05 * (hi - lo or 1)
        return dict(type="log", range=[lo - pad, hi + pad], title=dict(text=wrap(text, AXIS_TITLE_WRAP)), **ticks)
    out = dict(type="linear", title=dict(text=wrap(text, AXIS_TITLE_WRAP)))
    if len(nums) <= 12:
        out.update(ticks)
    return out


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis covering [lo, hi] (positive): 1-2-5 per decade when it spans fewer than three
    decades, each decade otherwise, from the last tick at or below *lo* to the first at or above *hi*
    (so the range can end on labelled ticks); never the 2 … 9 clutter."""
    if not (lo > 0 and hi > 0) or not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if d1 - d0 < 3 else (1,)
    ticks = [m * 10.0 ** d for d in range(d0, d1 + 1) for m in steps]
    below = [t for t in ticks if t <= lo * 1.0001]
    above = [t for t in ticks if t >= hi / 1.0001]
    first, last = (below[-1] if below else ticks[0]), (above[0] if above else ticks[-1])
    out = [t for t in ticks if first <= t <= last]
    if len(out) < 2:  # a single value: the ticks either side of it
        i = ticks.index(out[0])
        out = ticks[max(0, i - 1):i + 2]
    return out


def log_axis(values: Iterable[float], title_text: str = "", unit: str | None = None) -> dict:
    """A log axis for measured values (errors, cycles) ticked by :func:`log_ticks` with the range ending on
    labelled ticks, labels by the formatter."""
    pos = []
    for v in values:
        f = fmt._as_float(v)
        if f is not None and math.isfinite(f) and f > 0:
            pos.append(f)
    out: dict = dict(type="log", title=dict(text=wrap(title_text, AXIS_TITLE_WRAP)))
    if pos:
        ticks = log_ticks(min(pos), max(pos))
        pad = 0.02 * (math.log10(ticks[-1]) - math.log10(ticks[0]) or 1)
        out.update(tickmode="array", tickvals=ticks, range=[math.log10(ticks[0]) - pad, math.log10(ticks[-1]) + pad],
                   ticktext=[fmt.fmt_number(t, sig=3) if unit != "%" else fmt.fmt_percent(t, fraction=False)
                             for t in ticks])
    return out


# -- response curves -------------------------------------------------------------------------------------------

def model_line(x: Sequence[Any], y: Sequence[float], *, name: str = "model", color_: str | None = None,
               between_legal: bool = True, group: str | None = None, showlegend: bool = True) -> go.Scatter:
    """The model's curve on a fine grid; dashed when the grid runs between legal values (designs that
    cannot exist), solid when every point on it is a design."""
    return go.Scatter(x=list(x), y=list(y), mode="lines", name=name, legendgroup=group or name,
                      showlegend=showlegend, hoverinfo="skip" if between_legal else None,
                      line=dict(color=color_ or PALETTE[0], width=2.5, dash="dash" if between_legal else "solid"))


def legal_values_trace(x: Sequence[Any], y: Sequence[float], *, name: str = "at legal values",
                       color_: str | None = None, group: str | None = None, showlegend: bool = True,
                       x_label: str = "x", y_label: str = "y", unit: str | None = None,
                       symbol_: str = "circle") -> go.Scatter:
    """Markers where the parameter takes a legal value: the designs the model actually predicts."""
    text = [f"{x_label} = {fmt.fmt_value(a)}<br>{y_label} = {fmt.fmt_number(b, unit)}" for a, b in zip(x, y)]
    c = color_ or PALETTE[0]
    return go.Scatter(x=list(x), y=list(y), mode="markers", name=name, legendgroup=group or name,
                      showlegend=showlegend, text=text, hovertemplate="%{text}<extra></extra>",
                      marker=dict(color=c, size=10, symbol=symbol_, line=dict(color="white", width=1.5)))


# -- applying the style ----------------------------------------------------------------------------------------

_COLOURED = ("scatter", "scattergl", "bar", "box", "histogram", "violin")


def _has_colour(tr: Any) -> bool:
    t = tr.type
    if t in ("scatter", "scattergl"):
        if tr.fill not in (None, "none") and tr.fillcolor is not None:
            return True
        mode = tr.mode or "lines+markers"
        line_set = tr.line.color is not None if "lines" in mode else True
        marker_set = (tr.marker.color is not None) if "markers" in mode else True
        return line_set and marker_set
    if t == "box":
        return tr.marker.color is not None or tr.line.color is not None
    return getattr(tr, "marker", None) is not None and tr.marker.color is not None


def _set_colour(tr: Any, c: str, cycle: int) -> None:
    t = tr.type
    if t in ("scatter", "scattergl"):
        mode = tr.mode or "lines+markers"
        if "lines" in mode and tr.line.color is None:
            tr.line.color = c
            if cycle and tr.line.dash is None:
                tr.line.dash = DASHES[cycle % len(DASHES)]
        if "markers" in mode and tr.marker.color is None:
            tr.marker.color = c
    elif t == "box":
        tr.marker.color = c
        tr.line.color = c
    else:
        tr.marker.color = c
        if cycle and t in ("bar", "histogram") and tr.marker.pattern.shape is None:
            tr.marker.pattern.shape = PATTERNS[cycle % len(PATTERNS)]


def apply(fig: go.Figure, *, title_text: str | None = None, source: str | None = None,
          height: int | None = None, legend: bool | None = None, one_entry_per_group: bool = True) -> go.Figure:
    """Style *fig* in place (and return it): the template, an explicit colour for every series (one per
    legend group, so a term or application keeps its colour across traces), one legend entry per group
    (unless *one_entry_per_group* is False), titles wrapped with room above them, axis titles wrapped."""
    fig.update_layout(template=register())
    keys: dict[Any, int] = {}
    seen_groups: set[str] = set()
    for i, tr in enumerate(fig.data):
        if tr.type not in _COLOURED:
            continue
        key = tr.legendgroup or tr.name or f"#{i}"
        if key not in keys:
            keys[key] = len(keys)
        k = keys[key]
        if not _has_colour(tr):
            _set_colour(tr, color(k), k // len(PALETTE))
        if tr.legendgroup and one_entry_per_group:
            if tr.legendgroup in seen_groups and tr.showlegend is not False:
                tr.showlegend = False
            seen_groups.add(tr.legendgroup)
    if title_text is not None:
        fig.update_layout(title=title(title_text, source))
    text = fig.layout.title.text if fig.layout.title is not None else None
    if text:
        if "<br>" not in text:
            fig.layout.title.text = wrap(text, TITLE_WRAP)
        text_lines = fig.layout.title.text.count("<br>") + 1
        lines = text_lines + bool(fig.layout.title.subtitle.text)
        # Plotly places a title of several lines by its first line's height, so the top of the first
        # line was clipped by the figure's edge (seen in Chromium): 10 px more room per extra line
        extra = 10 * (text_lines - 1)
        fig.update_layout(margin=dict(t=28 + 25 * lines + extra), title_pad_t=12 + extra)
    else:
        fig.update_layout(margin=dict(t=30))
    for ax in (*fig.select_xaxes(), *fig.select_yaxes()):
        if ax.title is not None and ax.title.text:
            ax.title.text = wrap(ax.title.text, AXIS_TITLE_WRAP)
    from .plaintext import neutralise_links

    neutralise_links(fig)  # a user's label never becomes a link in a chart
    if height is not None:
        fig.update_layout(height=height)
    if legend is not None:
        fig.update_layout(showlegend=legend)
    return fig


TOOLBAR_ROOM = 26  # px: Plotly's toolbar, shown at the top right on hover, is about this tall


def toolbar_room(fig: go.Figure) -> go.Figure:
    """Move the title (and the plot) down by the toolbar's height, so the toolbar Plotly shows on hover
    never covers the title's first line. Idempotent: a figure drawn twice moves once."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    if meta.get("toolbar_room"):
        return fig
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 70  # the template's
    pad = fig.layout.title.pad.t if fig.layout.title.pad.t is not None else 12
    fig.update_layout(margin_t=top + TOOLBAR_ROOM, meta={**meta, "toolbar_room": True})
    if fig.layout.title.text:
        fig.update_layout(title_pad_t=pad + TOOLBAR_ROOM)
    return fig

