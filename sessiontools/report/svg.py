"""Small inline SVG charts for the HTML report: no library, no script, every label escaped.

Each function returns an `<svg>` string sized by a viewBox, so it scales with the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sessiontools.report.text import html_text

if TYPE_CHECKING:
    from sessiontools.replay.run_document import Timeline

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


_e = html_text


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * exp:
            return m * exp
    return 10 * exp


def _nice_step(raw: float, integer: bool) -> float:
    """1, 2, 2.5 or 5 times a power of ten, at least `raw` (at least 1 for whole numbers)."""
    if raw <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(raw))
    step = next(m * exp for m in (1, 2, 2.5, 5, 10) if raw <= m * exp)
    return max(1.0, round(step)) if integer else step


def _fmt(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


class _Frame:
    """Plot area and scales of a chart."""

    def __init__(self, w: int, h: int, x0: float, x1: float, y0: float, y1: float, left: int = 70,
                 right: int = 16, top: int = 16, bottom: int = 50) -> None:
        self.w, self.h = w, h
        self.left, self.right, self.top, self.bottom = left, right, top, bottom
        self.x0, self.x1 = x0, (x1 if x1 > x0 else x0 + 1)
        self.y0, self.y1 = y0, (y1 if y1 > y0 else y0 + 1)

    def x(self, v: float) -> float:
        return self.left + (v - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)

    def y(self, v: float) -> float:
        return self.h - self.bottom - (v - self.y0) / (self.y1 - self.y0) * (self.h - self.top - self.bottom)

    def axes(self, xlabel: str, ylabel: str, yticks: int = 5, integer_x: bool = True, xticks: bool = True) -> list[str]:
        out = [f'<rect x="{self.left}" y="{self.top}" width="{self.w - self.left - self.right}" '
               f'height="{self.h - self.top - self.bottom}" fill="#fff" stroke="#bbb"/>']
        for k in range(yticks + 1):
            v = self.y0 + (self.y1 - self.y0) * k / yticks
            y = self.y(v)
            out.append(f'<line x1="{self.left}" x2="{self.w - self.right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{self.left - 4}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_e(_fmt(round(v, 6)))}</text>')
        step = _nice_step((self.x1 - self.x0) / 7, integer_x)
        v = math.ceil(self.x0 / step) * step
        while xticks and v <= self.x1 + 1e-9:
            x = self.x(v)
            label = f"{v:,.0f}" if integer_x else _fmt(v)
            out.append(f'<text x="{x:.1f}" y="{self.h - self.bottom + 18}" text-anchor="middle" class="tick">{_e(label)}</text>')
            v += step
        out.append(f'<text x="{(self.left + self.w - self.right) / 2:.0f}" y="{self.h - 6}" text-anchor="middle" '
                   f'class="label">{_e(xlabel)}</text>')
        out.append(f'<text x="16" y="{(self.top + self.h - self.bottom) / 2:.0f}" text-anchor="middle" class="label" '
                   f'transform="rotate(-90 16 {(self.top + self.h - self.bottom) / 2:.0f})">{_e(ylabel)}</text>')
        return out


def _svg(w: int, h: int, body: Sequence[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" role="img" class="chart">'
            f'<title>{_e(title)}</title>' + "".join(body) + "</svg>")


def legend_html(items: Sequence[tuple[str, str]]) -> str:
    """A legend beside a chart (HTML, so it never covers data): (colour, label) pairs."""
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{_e(c)}"></i>{_e(t)}</span>' for c, t in items) + "</div>"


def timeline_svg(tl: Timeline, title: str) -> str:
    """Context size per request (truth), the policy's own count at check points, threshold, window, compactions."""
    w, h = 760, 300
    truth = tl.truth
    xs = [p[0] for p in truth] or [0]
    ymax = _nice_max(max([p[1] for p in truth] + [tl.window]) * 1.05)
    f = _Frame(w, h, min(xs), max(xs), 0, ymax)
    body = f.axes("entry index on the path (compactions removed)", "tokens")
    for x, reason in tl.compactions:
        color = "#2ca02c" if reason == "threshold" else "#9467bd"
        body.append(f'<line x1="{f.x(x):.1f}" x2="{f.x(x):.1f}" y1="{f.top}" y2="{h - f.bottom}" stroke="{color}" '
                    f'stroke-opacity="0.6"/>')
    for v, color, dash in ((tl.threshold, "#d62728", "6 4"), (tl.window, "#000", "2 3")):
        body.append(f'<line x1="{f.left}" x2="{w - f.right}" y1="{f.y(v):.1f}" y2="{f.y(v):.1f}" stroke="{color}" '
                    f'stroke-dasharray="{dash}"/>')
    pts = " ".join(f"{f.x(x):.1f},{f.y(y):.1f}" for x, y in truth)
    body.append(f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.6"/>')
    for x, y in tl.policy_count:
        body.append(f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="2.5" fill="#ff7f0e"/>')
    for x, y in tl.recorded:
        body.append(f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="5" fill="none" stroke="#000" stroke-width="1.5"/>')
    return _svg(w, h, body, title)


TIMELINE_LEGEND = (("#1f77b4", "truth (actual prompt tokens)"), ("#ff7f0e", "the policy's own count at a check point"),
                   ("#d62728", "threshold T (the policy's)"),
                   ("#000", "window W (dotted); ring = the agent compacted here (recorded)"),
                   ("#2ca02c", "simulated compaction (threshold)"), ("#9467bd", "simulated compaction (overflow)"))


def bars_svg(labels: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], title: str,
             ylabel: str, percent: bool = True) -> str:
    """Grouped bars: one group per label, one bar per series (values may be negative)."""
    w, h = 760, 280
    vals = [v for _, s in series for v in s if v is not None]
    lo = min([0.0, *vals])
    hi = max([0.0, *vals])
    top = _nice_max(hi) if hi > 0 else 0.0
    bottom = -_nice_max(-lo) if lo < 0 else 0.0
    f = _Frame(w, h, 0, max(1, len(labels)), bottom, top if top > bottom else bottom + 1)
    body = f.axes("", ylabel, xticks=False)
    zero = f.y(0)
    body.append(f'<line x1="{f.left}" x2="{w - f.right}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="#444"/>')
    n = max(1, len(series))
    slot = (f.x(1) - f.x(0)) * 0.8 / n
    for i, label in enumerate(labels):
        cx = f.x(i + 0.5)
        body.append(f'<text x="{cx:.1f}" y="{h - f.bottom + 18}" text-anchor="middle" class="tick">{_e(label)}</text>')
        for k, (_, s) in enumerate(series):
            v = s[i]
            if v is None:
                continue
            x = cx - slot * n / 2 + k * slot
            y0, y1 = sorted((zero, f.y(v)))
            body.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{slot * 0.9:.1f}" height="{max(0.5, y1 - y0):.1f}" '
                        f'fill="{PALETTE[k % len(PALETTE)]}"><title>{_e(f"{label}: {v:.1%}" if percent else f"{label}: {v:g}")}</title></rect>')
    return _svg(w, h, body, title)


def lines_svg(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], title: str, xlabel: str,
              ylabel: str, ymax: float = 1.0) -> str:
    """Lines with markers (decay curves: share retained by summary position)."""
    w, h = 760, 280
    xs = [x for _, pts in series for x, _ in pts] or [1, 2]
    f = _Frame(w, h, min(xs), max(xs), 0, ymax)
    body = f.axes(xlabel, ylabel)
    for k, (_, pts) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        body.append(f'<polyline points="{" ".join(f"{f.x(x):.1f},{f.y(y):.1f}" for x, y in pts)}" fill="none" '
                    f'stroke="{color}" stroke-width="1.6"/>')
        for x, y in pts:
            body.append(f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="3" fill="{color}"/>')
    return _svg(w, h, body, title)


def heat_color(v: float, lo: float, hi: float) -> str:
    """A light-to-mid blue for v in [lo, hi] (for table cells: dark text stays readable on every shade)."""
    t = 0.0 if hi <= lo else max(0.0, min(1.0, (v - lo) / (hi - lo))) * 0.55
    r, g, b = (int(247 - t * (247 - 33)), int(251 - t * (251 - 113)), int(255 - t * (255 - 181)))
    return f"#{r:02x}{g:02x}{b:02x}"
