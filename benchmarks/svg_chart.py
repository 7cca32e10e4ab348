"""Static SVG charts for the documentation's figures, with no plotting dependency.

The dashboard and the HTML report draw with Plotly (:mod:`gpudse_core.report.figures`), which needs a
browser or kaleido to make an image; a page of ``docs/`` needs a file a Markdown viewer shows. A chart is
a list of :class:`Series` (points joined by lines, markers, or both, with optional error bars) on linear
or logarithmic axes; tick labels are written by :mod:`gpudse_core.fmt`, text is XML-escaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence
from xml.sax.saxutils import escape

from gpudse_core import fmt

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
WIDTH, HEIGHT = 760, 400
LEFT, RIGHT, TOP, BOTTOM = 72, 250, 40, 52


@dataclass
class Series:
    name: str
    x: Sequence[float]
    y: Sequence[float]
    mode: str = "lines+markers"  # "lines", "markers" or both
    low: Sequence[float] | None = None  # error bars (absolute values), optional
    high: Sequence[float] | None = None
    dash: bool = False
    style: dict = field(default_factory=dict)


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    """Round tick values covering [lo, hi]: powers of 2 or 10 on a log axis (1-2-5 steps when they would be
    fewer than three), 1-2-5 steps on a linear one."""
    if log:
        base = 2.0 if hi / lo <= 2 ** 8 and lo >= 1 else 10.0
        a, b = math.floor(math.log(lo, base) + 1e-9), math.ceil(math.log(hi, base) - 1e-9)
        ticks = [t for t in (base ** k for k in range(a, b + 1)) if lo * 0.999 <= t <= hi * 1.001]
        if len(ticks) >= 3:
            return ticks
    span = hi - lo or abs(hi) or 1.0
    raw = span / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _range(values: list[float], log: bool) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if log:
        pad = (hi / lo) ** 0.05 if hi > lo else 1.5
        return lo / pad, hi * pad
    pad = (hi - lo) * 0.05 or abs(hi) * 0.1 or 1.0
    return lo - pad, hi + pad


def chart(series: Sequence[Series], title: str, xlabel: str, ylabel: str, *, logx: bool = False,
          logy: bool = False, xticks: Sequence[float] | None = None) -> str:
    """The SVG text of a chart of *series* (non-finite points are left out)."""
    pts = [(x, y) for s in series for x, y in zip(s.x, s.y) if math.isfinite(x) and math.isfinite(y)]
    if not pts:
        raise ValueError(f"chart {title!r}: no finite points to draw")
    ys = [y for _, y in pts] + [v for s in series for v in (*(s.low or ()), *(s.high or ())) if math.isfinite(v)]
    x0, x1 = _range([x for x, _ in pts], logx)
    y0, y1 = _range(ys, logy)
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) if logx else (x - x0) / (x1 - x0)
        return LEFT + t * pw

    def sy(y: float) -> float:
        t = (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)) if logy else (y - y0) / (y1 - y0)
        return TOP + (1 - t) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>']
    for t in (xticks if xticks is not None else _ticks(x0, x1, logx)):
        if x0 <= t <= x1:
            out.append(f'<line x1="{sx(t):.1f}" y1="{TOP}" x2="{sx(t):.1f}" y2="{TOP + ph}" stroke="#ddd"/>'
                       f'<text x="{sx(t):.1f}" y="{TOP + ph + 16}" text-anchor="middle">'
                       f'{escape(fmt.fmt_number(t, sig=3))}</text>')
    for t in _ticks(y0, y1, logy):
        if y0 <= t <= y1:
            out.append(f'<line x1="{LEFT}" y1="{sy(t):.1f}" x2="{LEFT + pw}" y2="{sy(t):.1f}" stroke="#ddd"/>'
                       f'<text x="{LEFT - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">'
                       f'{escape(fmt.fmt_number(t, sig=3))}</text>')
    out.append(f'<text x="{LEFT + pw / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(16 {TOP + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f'{escape(ylabel)}</text>')
    for i, s in enumerate(series):
        c = s.style.get("color", COLORS[i % len(COLORS)])
        keep = [k for k, (x, y) in enumerate(zip(s.x, s.y)) if math.isfinite(x) and math.isfinite(y)]
        xy = [(sx(s.x[k]), sy(s.y[k])) for k in keep]
        if "lines" in s.mode and len(xy) > 1:
            dash = ' stroke-dasharray="6 4"' if s.dash else ""
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        if s.low is not None and s.high is not None:
            for k in keep:
                lo, hi = s.low[k], s.high[k]
                if math.isfinite(lo) and math.isfinite(hi):
                    x = sx(s.x[k])
                    out.append(f'<line x1="{x:.1f}" y1="{sy(lo):.1f}" x2="{x:.1f}" y2="{sy(hi):.1f}" '
                               f'stroke="{c}" stroke-width="1.5"/>')
        if "markers" in s.mode:
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{c}" fill-opacity="0.75"/>' for x, y in xy]
        ly = TOP + 8 + 18 * i
        dash = ' stroke-dasharray="4 3"' if s.dash else ""
        out.append(f'<line x1="{WIDTH - RIGHT + 12}" y1="{ly}" x2="{WIDTH - RIGHT + 32}" y2="{ly}" stroke="{c}" '
                   f'stroke-width="3"{dash}/><text x="{WIDTH - RIGHT + 38}" y="{ly + 4}">{escape(s.name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
