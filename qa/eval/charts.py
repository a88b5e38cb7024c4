"""The report's plots, drawn in Python as inline SVG: grouped bars of ratios and latency
histograms (no scripts, no external resources)."""

from __future__ import annotations

import math
from html import escape

__all__ = ["bar_chart", "histogram", "pct"]

_COLORS = ("#2b6cb0", "#dd6b20", "#38a169", "#805ad5")


def pct(value: float | None) -> str:
    """A ratio as a percentage, or a dash.

    >>> pct(0.5), pct(None)
    ('50.0 %', '—')
    """
    return "—" if value is None else f"{100 * value:.1f} %"


def _title(title: str, width: int) -> str:
    attrs = f'x="{width / 2}" y="18" text-anchor="middle" font-weight="bold"'
    return f"<text {attrs}>{escape(title)}</text>"


def bar_chart(
    title: str, groups: list[str], series: dict[str, list[float | None]], *, width: int = 560
) -> str:
    """Grouped vertical bars of ratios in 0..1 as an inline SVG (a missing value draws no bar).

    >>> svg = bar_chart("acc", ["zh", "en"], {"kgqa": [0.5, None]})
    >>> svg.startswith("<svg") and svg.count("<rect") == 3  # background, one bar, one legend key
    True
    """
    height, left, bottom, top = 260, 44, 56, 30
    plot_w, plot_h = width - left - 10, height - top - bottom
    slot = plot_w / max(1, len(groups))
    bar_w = slot * 0.8 / max(1, len(series))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
        _title(title, width),
    ]
    for tick in range(0, 101, 25):
        y = top + plot_h * (1 - tick / 100)
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{tick}%</text>'
        )
    for g, group in enumerate(groups):
        x0 = left + g * slot + slot * 0.1
        for s, (name, values) in enumerate(series.items()):
            value = values[g]
            if value is None:
                continue
            h = plot_h * max(0.0, min(1.0, value))
            x, y = x0 + s * bar_w, top + plot_h - h
            color = _COLORS[s % len(_COLORS)]
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{color}">'
                f"<title>{escape(name)} · {escape(group)}: {pct(value)}</title></rect>"
            )
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                f'font-size="10">{100 * value:.0f}</text>'
            )
        parts.append(
            f'<text x="{x0 + slot * 0.4:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
            f'font-size="12">{escape(group)}</text>'
        )
    parts.append(_legend(list(series), left, height - 14))
    parts.append("</svg>")
    return "".join(parts)


def _legend(names: list[str], x: float, y: float) -> str:
    items = []
    for i, name in enumerate(names):
        cx = x + i * 130
        items.append(
            f'<rect x="{cx}" y="{y - 10}" width="12" height="12" '
            f'fill="{_COLORS[i % len(_COLORS)]}"/>'
            f'<text x="{cx + 16}" y="{y}" font-size="12">{escape(name)}</text>'
        )
    return "".join(items)


def histogram(
    title: str, series: dict[str, list[float]], *, bins: int = 24, width: int = 560
) -> str:
    """Latency histograms (ms, log-spaced bins) of several systems, overlaid, as an inline SVG.

    >>> "<polyline" in histogram("latency", {"kgqa": [1.0, 2.0, 40.0]})
    True
    """
    values = [v for vs in series.values() for v in vs if v > 0]
    height, left, bottom, top = 260, 44, 56, 30
    plot_w, plot_h = width - left - 10, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
        _title(title, width),
    ]
    if not values:
        parts.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no answers</text></svg>'
        )
        return "".join(parts)
    lo, hi = math.log10(min(values)), math.log10(max(values))
    hi = hi if hi > lo else lo + 1
    step = (hi - lo) / bins
    counts = {
        name: [
            sum(1 for v in vs if v > 0 and min(bins - 1, int((math.log10(v) - lo) / step)) == b)
            for b in range(bins)
        ]
        for name, vs in series.items()
    }
    peak = max(max(c) for c in counts.values()) or 1
    for i, (name, cs) in enumerate(counts.items()):
        points = [
            (left + plot_w * (b + 0.5) / bins, top + plot_h * (1 - c / peak))
            for b, c in enumerate(cs)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        color = _COLORS[i % len(_COLORS)]
        parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts.extend(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"><title>{escape(name)}: '
            f"{c} question(s)</title></circle>"
            for (x, y), c in zip(points, cs, strict=True)
            if c
        )
    parts.append(
        f'<line x1="{left}" x2="{width - 10}" y1="{top + plot_h}" y2="{top + plot_h}" '
        'stroke="#999"/>'
    )
    for tick in range(math.floor(lo), math.ceil(hi) + 1):
        if lo <= tick <= hi:
            x = left + plot_w * (tick - lo) / (hi - lo)
            parts.append(
                f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle" font-size="11">'
                f"{10**tick:g} ms</text>"
            )
    parts.append(
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="11">{peak}</text>'
    )
    parts.append(_legend(list(series), left, height - 14))
    parts.append("</svg>")
    return "".join(parts)
