"""SVG drawn on the server for the repository page: coverage over time and
the file tree's treemap. Like the badge (``app/web/svg.py``), numbers are
written by this module and every text that came from an upload (a path, a
flag) is escaped; each point or region is a link, so the picture works
without JavaScript and from the keyboard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from app.web.svg import _escape, badge_colour

#: The coverage chart's size in SVG units (it scales to the page's width).
CHART_WIDTH, CHART_HEIGHT = 760, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 12, 12, 28


@dataclass(frozen=True, slots=True)
class Point:
    """One settled commit of the chart."""

    commit: str
    at: datetime | None
    coverage: float


def _scale(values: Sequence[float]) -> tuple[float, float]:
    """The y range: the values' own, widened to at least 2 points and kept in 0..100."""
    low, high = min(values), max(values)
    if high - low < 2.0:
        middle = (high + low) / 2
        low, high = middle - 1.0, middle + 1.0
    pad = (high - low) * 0.08
    return max(0.0, low - pad), min(100.0, high + pad)


def coverage_chart(points: Sequence[Point], repo: str, label: str) -> str:
    """A line of ``points`` (oldest first) with one link per point to its
    commit page; ``label`` names the series (``main``, ``main · flag unit``)."""
    title = f"Coverage of {label}"
    if not points:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {CHART_WIDTH} 40" '
            f'role="img" aria-label="{_escape(title)}: no settled commits yet"></svg>'
        )
    values = [p.coverage for p in points]
    low, high = _scale(values)
    inner_w = CHART_WIDTH - _LEFT - _RIGHT
    inner_h = CHART_HEIGHT - _TOP - _BOTTOM
    step = inner_w / max(1, len(points) - 1)

    def x(i: int) -> float:
        return round(_LEFT + (i * step if len(points) > 1 else inner_w / 2), 1)

    def y(value: float) -> float:
        return round(_TOP + inner_h * (1 - (value - low) / (high - low)), 1)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {CHART_WIDTH} '
        f'{CHART_HEIGHT}" role="group" aria-label="{_escape(title)}, {len(points)} commits">',
        f"<title>{_escape(title)}</title>",
        '<g class="axis" font-size="11" fill="#56606d">',
    ]
    for i in range(5):  # four bands between low and high
        value = low + (high - low) * i / 4
        out.append(
            f'<line x1="{_LEFT}" x2="{CHART_WIDTH - _RIGHT}" y1="{y(value)}" y2="{y(value)}" '
            f'stroke="#dfe3e8"/><text x="{_LEFT - 4}" y="{y(value) + 4}" '
            f'text-anchor="end">{value:.1f}%</text>'
        )
    for i in (0, len(points) - 1) if len(points) > 1 else (0,):
        at = points[i].at
        if at is not None:
            anchor = "start" if i == 0 else "end"
            out.append(
                f'<text x="{x(i)}" y="{CHART_HEIGHT - 8}" text-anchor="{anchor}">'
                f"{at:%Y-%m-%d}</text>"
            )
    out.append("</g>")
    path = " ".join(f"{x(i)},{y(v)}" for i, v in enumerate(values))
    out.append(f'<polyline fill="none" stroke="#1f5fbf" stroke-width="1.5" points="{path}"/>')
    radius = 3 if len(points) <= 60 else 2
    base = "/" + quote(repo, safe="/")
    for i, p in enumerate(points):
        sha = quote(p.commit, safe="")
        when = f" {p.at:%Y-%m-%d}" if p.at is not None else ""
        name = _escape(f"{p.commit[:8]}{when}: {p.coverage:.2f}%")
        out.append(
            f'<a href="{base}/commit/{sha}" aria-label="{name}"><circle cx="{x(i)}" '
            f'cy="{y(p.coverage)}" r="{radius}" fill="#1f5fbf"><title>{name}</title>'
            f"</circle></a>"
        )
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Region:
    """One rectangle of the treemap: a directory or a file, its lines and coverage."""

    name: str
    href: str
    lines: int
    coverage: float | None


def _worst(row: list[float], side: float) -> float:
    """The worst aspect ratio of ``row`` laid along a side of length ``side``."""
    s = sum(row)
    return max(max(side * side * v / (s * s), (s * s) / (side * side * v)) for v in row)


def _squarify(
    sizes: list[float], x: float, y: float, w: float, h: float
) -> list[tuple[float, float, float, float]]:
    """Bruls, Huizing and van Wijk's squarified layout of ``sizes`` (largest
    first, summing to ``w * h``): rows along the shorter side, each row
    grown while its worst aspect ratio improves."""
    out: list[tuple[float, float, float, float]] = []
    i = 0
    while i < len(sizes):
        short = min(w, h)
        row = [sizes[i]]
        j = i + 1
        while j < len(sizes) and _worst([*row, sizes[j]], short) <= _worst(row, short):
            row.append(sizes[j])
            j += 1
        total = sum(row)
        thick = total / short if short else 0.0
        at = 0.0
        for v in row:
            span = v / thick if thick else 0.0
            if w >= h:  # a column at the left
                out.append((x, y + at, thick, span))
            else:  # a row at the top
                out.append((x + at, y, span, thick))
            at += span
        if w >= h:
            x, w = x + thick, w - thick
        else:
            y, h = y + thick, h - thick
        i = j
    return out


#: The treemap's size in SVG units.
TREEMAP_WIDTH, TREEMAP_HEIGHT = 760, 300


def treemap(regions: Sequence[Region], label: str) -> str:
    """``regions`` as rectangles sized by lines and coloured as the badge is
    by coverage, each a link; the largest first."""
    shown = sorted((r for r in regions if r.lines > 0), key=lambda r: (-r.lines, r.name))
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="treemap" viewBox="0 0 {TREEMAP_WIDTH} '
        f'{TREEMAP_HEIGHT}" role="group" aria-label="{_escape(label)}">'
    )
    if not shown:
        return head + "</svg>"
    area = TREEMAP_WIDTH * TREEMAP_HEIGHT
    total = sum(r.lines for r in shown)
    sizes = [area * r.lines / total for r in shown]
    out = [head, f"<title>{_escape(label)}</title>"]
    for r, (rx, ry, rw, rh) in zip(
        shown, _squarify(sizes, 0.0, 0.0, TREEMAP_WIDTH, TREEMAP_HEIGHT), strict=True
    ):
        figure = "no lines" if r.coverage is None else f"{r.coverage:.2f}%"
        name = _escape(f"{r.name}: {figure} of {r.lines} lines")
        out.append(
            f'<a href="{_escape(r.href)}" aria-label="{name}"><rect x="{rx:.1f}" y="{ry:.1f}" '
            f'width="{rw:.1f}" height="{rh:.1f}" fill="{badge_colour(r.coverage)}" '
            f'stroke="#fff"><title>{name}</title></rect>'
        )
        if rw > 8 * min(len(r.name), 12) and rh > 16:  # a label only where it fits
            text = r.name if len(r.name) <= 24 or rw > 8 * len(r.name) else r.name[:22] + "\u2026"
            out.append(
                f'<text x="{rx + 4:.1f}" y="{ry + 14:.1f}" font-size="11" fill="#1c2430">'
                f"{_escape(text)}</text>"
            )
        out.append("</a>")
    out.append("</svg>")
    return "".join(out)


def treemap_of(view: dict[str, Any]) -> Markup:
    """The treemap of a file-tree view (``app.web.tree``), for the commit page."""
    regions = [Region(r["name"], r["href"], r["lines"], r["coverage"]) for r in view["regions"]]
    where = view["directory"] or "the report"
    label = f"Lines of {where} by directory and file, coloured by coverage"
    return Markup(treemap(regions, label))  # numbers and escaped names only
