"""SVG drawn on the server: the coverage badge and the trend sparkline."""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from app.pullrequests.numbers import DisplayRounding, Rounding, shown

#: Badge colours by coverage, as shields.io's coverage badges use them.
BADGE_COLOURS = ((95.0, "#4c1"), (90.0, "#97ca00"), (75.0, "#a4a61d"), (60.0, "#dfb317"))
BADGE_LOW = "#e05d44"
BADGE_UNKNOWN = "#9f9f9f"
_CODECOV_DEFAULT = DisplayRounding()


def badge_colour(coverage: float | None) -> str:
    if coverage is None:
        return BADGE_UNKNOWN
    return next((colour for floor, colour in BADGE_COLOURS if coverage >= floor), BADGE_LOW)


def _escape(text: str) -> str:
    """Text for an element or a double-quoted attribute: ``&``, ``<``, ``>`` and ``"``."""
    return escape(text, {'"': "&quot;"})


def _text_width(text: str) -> int:
    return 7 * len(text) + 10  # Verdana 11px is close to 7 px a character


def badge(
    coverage: float | None, rounding: Rounding = _CODECOV_DEFAULT, label: str = "coverage"
) -> str:
    """``coverage`` as the pages show it (``rounding``: the repository's
    ``coverage.precision`` and ``coverage.round``), coloured by its value."""
    figure = shown(rounding, coverage)
    value = "unknown" if figure is None else f"{figure}%"
    left, right = _text_width(label), _text_width(value)
    width = left + right
    colour = badge_colour(coverage)
    label_e, value_e = _escape(label), _escape(value)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" '
        f'aria-label="{label_e}: {value_e}"><title>{label_e}: {value_e}</title>'
        f'<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
        f'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<rect width="{width}" height="20" fill="url(#s)"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,sans-serif" '
        f'font-size="11"><text x="{left / 2}" y="14">{label_e}</text>'
        f'<text x="{left + right / 2}" y="14">{value_e}</text></g></svg>'
    )


def sparkline(values: Sequence[float], *, width: int = 120, height: int = 28) -> str:
    """A polyline of coverage values (percent) scaled to their own range."""
    label = "no settled commits yet"
    if values:
        label = f"coverage trend of the last {len(values)} commits, latest {values[-1]:.2f}%"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{_escape(label)}">'
    )
    if not values:
        return head + "</svg>"
    low, high = min(values), max(values)
    if high == low:  # a flat line (or one point) sits in the middle
        low, high = low - 1.0, high + 1.0
    span = high - low
    step = width / max(1, len(values) - 1)
    pad = 3
    points = [
        (
            round(i * step if len(values) > 1 else width / 2, 1),
            round(pad + (height - 2 * pad) * (1 - (v - low) / span), 1),
        )
        for i, v in enumerate(values)
    ]
    path = " ".join(f"{x},{y}" for x, y in points)
    last_x, last_y = points[-1]
    return (
        head + f'<polyline fill="none" stroke="#2f6fdd" stroke-width="1.5" points="{path}"/>'
        f'<circle cx="{min(last_x, width - 2.5)}" cy="{last_y}" r="2.5" fill="#2f6fdd"/></svg>'
    )
