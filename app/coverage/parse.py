"""The parse entry point: limits, format detection, dispatch to one parser.

Every parser raises only ``ReportError`` subclasses on bad input; anything
else escaping one is wrapped here too, so a fuzzer (or a hostile upload)
can never crash the worker with an unexpected exception type.

A report that names no file is refused (a report of another format that
happens to share a root element, or one written before the tests ran,
would otherwise merge as nothing, silently) unless the report itself says
the project has no code (``limits.NO_CODE`` among its warnings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from app.coverage.detect import (
    BULLSEYE,
    CLOVER,
    COBERTURA,
    CODECOV_V1,
    COVERAGE_JSON,
    COVERALLS,
    COVR,
    DLST,
    DOTCOVER,
    ELM,
    FLOW,
    FORMAT_NAMES,
    GAP,
    GCOV_JSON,
    GCOV_TEXT,
    GO,
    ISTANBUL,
    JACOCO,
    LCOV,
    LLVM_JSON,
    LLVM_SHOW,
    LUACOV,
    MONO,
    OPENCOVER,
    SALESFORCE,
    SCALA_JSON,
    SCOVERAGE,
    SIMPLECOV,
    VISUAL_STUDIO,
    XCCOVERAGE,
    detect_format,
)
from app.coverage.formats import (
    bullseye,
    clover,
    cobertura,
    codecov_v1,
    coverage_json,
    coveralls,
    covr,
    dlst,
    dotcover,
    elm,
    flow,
    gap,
    gcov,
    gcov_json,
    go,
    istanbul,
    jacoco,
    lcov,
    llvm_json,
    llvm_show,
    luacov,
    mono,
    opencover,
    salesforce,
    scala_json,
    scoverage,
    simplecov,
    visualstudio,
    xccoverage,
)
from app.coverage.jsonstream import GZIP_MAGIC, gunzip
from app.coverage.limits import NO_CODE, ParseLimits
from app.coverage.model import FileSink, Report
from app.errors import MalformedReport, ReportError, ReportTooLarge

__all__ = ["PARSERS", "ParseLimits", "detect_format", "parse_into", "parse_report"]

Parser = Callable[[bytes, ParseLimits, tuple[str, ...]], Report]

PARSERS: dict[str, Parser] = {
    COBERTURA: cobertura.parse,
    LCOV: lcov.parse,
    COVERAGE_JSON: coverage_json.parse,
    JACOCO: jacoco.parse,
    GO: go.parse,
    CLOVER: clover.parse,
    ISTANBUL: istanbul.parse,
    LLVM_JSON: llvm_json.parse,
    GCOV_JSON: gcov_json.parse,
    GCOV_TEXT: gcov.parse,
    SIMPLECOV: simplecov.parse,
    OPENCOVER: opencover.parse,
    COVERALLS: coveralls.parse,
    COVR: covr.parse,
    SCALA_JSON: scala_json.parse,
    LLVM_SHOW: llvm_show.parse,
    LUACOV: luacov.parse,
    DOTCOVER: dotcover.parse,
    SCOVERAGE: scoverage.parse,
    XCCOVERAGE: xccoverage.parse,
    FLOW: flow.parse,
    CODECOV_V1: codecov_v1.parse,
    SALESFORCE: salesforce.parse,
    GAP: gap.parse,
    ELM: elm.parse,
    DLST: dlst.parse,
    BULLSEYE: bullseye.parse,
    VISUAL_STUDIO: visualstudio.parse,
    MONO: mono.parse,
}

StreamingParser = Callable[[bytes, FileSink, ParseLimits, tuple[str, ...]], None]

#: Parsers that hand each file on as they finish it (``parse_into``); the
#: others build a whole :class:`Report` first.
STREAMING_PARSERS: dict[str, StreamingParser] = {
    LCOV: lcov.parse_into,
    GCOV_TEXT: gcov.parse_into,
}


def _unpacked(raw: bytes, limits: ParseLimits, fmt: str) -> bytes:
    """``raw`` gunzipped if it is gzip (``.gcov.json.gz`` and any gzip-compressed
    upload), within the limit of what it may unpack to."""
    return gunzip(raw, limits, FORMAT_NAMES[fmt]) if raw.startswith(GZIP_MAGIC) else raw


@contextmanager
def _failures_named(fmt: str) -> Iterator[None]:
    """Whatever a parser raises leaves as a ``ReportError`` naming the format."""
    try:
        yield
    except ReportError:
        raise
    except RecursionError:
        raise MalformedReport(FORMAT_NAMES[fmt], "the report is nested too deeply") from None
    except MemoryError:
        raise ReportTooLarge(f"{FORMAT_NAMES[fmt]} report is too large to parse") from None
    except Exception as exc:  # a parser bug must still fail only this upload
        raise MalformedReport(FORMAT_NAMES[fmt], f"unreadable report ({exc!r})") from exc


def parse_into(
    raw: bytes,
    sink: FileSink,
    *,
    limits: ParseLimits | None = None,
    roots: Iterable[str] = (),
    fmt: str | None = None,
) -> str:
    """Parse ``raw`` into ``sink`` (its files, then its warnings); the format's name.

    What :func:`parse_report` does, for a caller that does not need the
    report as objects (the processor writes its intermediate): a streaming
    parser (``STREAMING_PARSERS``) hands each file on as it ends, so the
    whole report is never held as a :class:`Report`; any other parser's
    report is handed on file by file once parsed. The same errors as
    :func:`parse_report`; the files of a report that fails are partly in
    ``sink``, which the caller then drops.
    """
    limits = limits or ParseLimits()
    limits.check_bytes(len(raw))  # before anything reads it
    fmt = fmt or detect_format(raw)
    streaming = STREAMING_PARSERS.get(fmt)
    if streaming is None:
        report = parse_report(raw, limits=limits, roots=roots, fmt=fmt)
        bases = report.bases
        for path, fc in report.files.items():
            if path not in sink and sink.file_count() >= limits.max_files:
                raise limits.too_many_files(FORMAT_NAMES[fmt])
            sink.add_file(path, fc, bases.get(path, ()))
        sink.warnings.extend(report.warnings)
        sink.skipped.extend(report.skipped)
        return fmt
    raw = _unpacked(raw, limits, fmt)
    with _failures_named(fmt):
        streaming(raw, sink, limits, tuple(roots))
    return fmt


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
    limits.check_bytes(len(raw))  # before anything reads it
    fmt = fmt or detect_format(raw)
    raw = _unpacked(raw, limits, fmt)
    with _failures_named(fmt):
        report = PARSERS[fmt](raw, limits, tuple(roots))
    if report.skipped and not any(fc.lines for fc in report.files.values()):
        raise MalformedReport(
            FORMAT_NAMES[fmt], f"no record could be read; {report.skipped.summary()}"
        )
    if not report.files and NO_CODE not in report.warnings:
        raise MalformedReport(
            FORMAT_NAMES[fmt],
            "the report holds no files and no lines, and does not say the project has no "
            "code; refusing it rather than merging nothing (was it written by another "
            "tool, or before the tests ran?)",
        )
    return report
