"""The Jinja2 environment of the pages: autoescaped, with number filters."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from jinja2.runtime import Context
from markupsafe import Markup

from app.pullrequests.numbers import DisplayRounding, Rounding, rounded, shown
from app.pullrequests.visible import visible
from app.web import svg
from app.web.chart import treemap_of

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"
#: Shown for a value that is not known (no lines, no base).
UNKNOWN = "\u2013"  # en dash
MINUS = "\u2212"  # typographic minus


def pct(value: float | None) -> str:
    """A percentage that is not a coverage (a failure rate): two decimals."""
    return UNKNOWN if value is None else f"{value:.2f}%"


def _rounding(context: Context) -> Rounding:
    """The page's ``rounding`` (the repository's ``coverage.precision`` and
    ``coverage.round``), else Codecov's defaults."""
    found = context.get("rounding")
    return found if found is not None else DisplayRounding()


@jinja2.pass_context
def cov(context: Context, value: float | None) -> str:
    """A coverage as every surface shows it (``app.pullrequests.numbers.shown``)."""
    figure = shown(_rounding(context), value)
    return UNKNOWN if figure is None else f"{figure}%"


@jinja2.pass_context
def delta(context: Context, value: float | None) -> str:
    """A change of coverage, in percentage points, with its unit: ``+25.00%``,
    ``±0.00%`` and, with a typographic minus, ``-1.20%``; rounded as coverage is."""
    if value is None:
        return UNKNOWN
    figure = rounded(_rounding(context), value)
    if figure == 0:
        return f"±{abs(figure)}%"
    return f"{'+' if figure > 0 else MINUS}{abs(figure)}%"


@jinja2.pass_context
def delta_class(context: Context, value: float | None) -> str:
    if value is None or rounded(_rounding(context), value) == 0:
        return "flat"
    return "up" if value > 0 else "down"


def when(iso: str | None) -> str:
    if not iso:
        return UNKNOWN
    at = datetime.fromisoformat(iso)
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _parse(iso: str) -> datetime:
    at = datetime.fromisoformat(iso)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def after(iso: str | None, start: str | None) -> str:
    """How long after ``start`` a pipeline step happened: ``+1.25 s``."""
    if not iso or not start:
        return UNKNOWN
    seconds = (_parse(iso) - _parse(start)).total_seconds()
    return f"+{seconds:.2f} s" if seconds < 120 else f"+{seconds / 60:.1f} min"


def short(sha: str | None) -> str:
    return (sha or "")[:8]


#: Paths the front door's URL folding would change (``app/api/urls.py``
#: collapses ``//`` and treats ``/upload/`` and ``/healthz`` as a prefix end).
_FOLDED = ("//", "/upload/", "/healthz")


def file_url(repo: str, sha: str, path: str) -> str:
    """The file page of ``path``: ``.../file/<path>``, or ``.../file?path=``
    for a path that URL folding would change (absolute, ``//``, ...)."""
    base = f"/{repo}/commit/{sha}/file"
    probe = f"/{path}/"
    if path.startswith("/") or any(marker in probe for marker in _FOLDED):
        return f"{base}?path={quote(path, safe='')}"
    return f"{base}/{quote(path, safe='/')}"


def query(base: dict[str, Any], **changes: Any) -> str:
    merged = {k: v for k, v in {**base, **changes}.items() if v not in (None, "")}
    return "?" + urlencode(merged) if merged else "?"


def spark(values: list[float]) -> Markup:
    return Markup(svg.sparkline(values))  # numbers and an escaped label only


def printable(value: Any) -> Any:
    """Every value a page prints: text with its control characters written
    as escapes (``app.pullrequests.visible``); markup covworker built itself is kept."""
    return visible(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=printable,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=pct,
        cov=cov,
        delta=delta,
        delta_class=delta_class,
        when=when,
        after=after,
        short=short,
    )
    env.globals.update(query=query, spark=spark, file_url=file_url, treemap_of=treemap_of)
    return env
