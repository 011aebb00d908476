"""One upload's payload -> one report: parse each file, merge, fix paths, apply fixes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from app.coverage import ParseLimits, Report, detect_format, parse_report
from app.coverage.network_paths import NetworkPaths
from app.errors import MalformedPayload, ReportError
from app.ingest.payload import Fix, decode_payload


@dataclass
class ParsedUpload:
    report: Report
    formats: list[str]
    warnings: list[str] = field(default_factory=list)
    #: The uploader's names of the coverage files, in payload order.
    names: list[str] = field(default_factory=list)


def apply_fixes(report: Report, fixes: dict[str, Fix]) -> None:
    """Drop the lines the uploader says to ignore (and all after ``eof``)."""
    for path, fix in fixes.items():
        coverage = report.files.get(path)
        if coverage is None:
            continue
        drop = {ln for ln in coverage.lines if ln in fix.lines}
        if fix.eof is not None:
            drop |= {ln for ln in coverage.lines if ln > fix.eof}
        for ln in drop:
            coverage.lines.pop(ln, None)
            coverage.branches.pop(ln, None)


def parse_payload(raw: bytes, limits: ParseLimits) -> ParsedUpload:
    """Every coverage file of the payload merged into one report.

    A file that does not parse fails the whole upload (``ReportError``
    naming the file): half an upload would silently lower the coverage.
    """
    payload = decode_payload(raw, limits.max_bytes)
    if not payload.files:
        raise MalformedPayload("the payload holds no coverage files")
    merged, formats, warnings = Report(), [], list[str]()
    records = 0  # the line records of the files so far: the limit is the payload's
    for item in payload.files:
        left = replace(limits, max_lines=limits.max_lines - records)
        try:
            fmt = detect_format(item.data)
            report = parse_report(item.data, limits=left, fmt=fmt)
        except ReportError as exc:
            raise ReportError(f"coverage file {item.name}: {exc}") from None
        records += sum(len(fc.lines) for fc in report.files.values())
        merged.merge(report)  # a parser's warnings are the upload's, named by file
        warnings.extend(f"coverage file {item.name}: {w}" for w in report.warnings)
        formats.append(fmt)
    if payload.network:
        warnings.extend(NetworkPaths(payload.network).apply(merged).warnings())
    apply_fixes(merged, payload.fixes)
    return ParsedUpload(merged, formats, warnings, [item.name for item in payload.files])
