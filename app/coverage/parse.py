"""The parse entry point: limits, format detection, dispatch to one parser.

Every parser raises only ``ReportError`` subclasses on bad input; anything
else escaping one is wrapped here too, so a fuzzer (or a hostile upload)
can never crash the worker with an unexpected exception type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from app.coverage.detect import (
    COBERTURA,
    COVERAGE_JSON,
    FORMAT_NAMES,
    GO,
    JACOCO,
    LCOV,
    detect_format,
)
from app.coverage.formats import cobertura, coverage_json, go, jacoco, lcov
from app.coverage.limits import ParseLimits
from app.coverage.model import Report
from app.errors import MalformedReport, ReportError, ReportTooLarge

__all__ = ["PARSERS", "ParseLimits", "detect_format", "parse_report"]

Parser = Callable[[bytes, ParseLimits, tuple[str, ...]], Report]

PARSERS: dict[str, Parser] = {
    COBERTURA: cobertura.parse,
    LCOV: lcov.parse,
    COVERAGE_JSON: coverage_json.parse,
    JACOCO: jacoco.parse,
    GO: go.parse,
}


def parse_report(
    raw: bytes,
    *,
    limits: ParseLimits | None = None,
    roots: Iterable[str] = (),
    fmt: str | None = None,
) -> Report:
    """Parse ``raw`` (any supported format) into a Report.

    ``roots`` are absolute directories that are the repository root (e.g.
    the CI checkout); absolute paths under one become repository-relative.
    ``fmt`` is what ``detect_format(raw)`` returned, for a caller that
    already asked; it is detected here otherwise.
    """
    limits = limits or ParseLimits()
    limits.check_bytes(len(raw))
    fmt = fmt or detect_format(raw)
    parser = PARSERS[fmt]
    try:
        return parser(raw, limits, tuple(roots))
    except ReportError:
        raise
    except RecursionError:
        raise MalformedReport(FORMAT_NAMES[fmt], "the report is nested too deeply") from None
    except MemoryError:
        raise ReportTooLarge(f"{FORMAT_NAMES[fmt]} report is too large to parse") from None
    except Exception as exc:  # a parser bug must still fail only this upload
        raise MalformedReport(FORMAT_NAMES[fmt], f"unreadable report ({exc!r})") from exc
