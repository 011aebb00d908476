"""Format detection and the parse entry point.

PROVISIONAL: a minimal Cobertura/LCOV reader so the pipeline can run; the
formats issue replaces it with the full parsers.
"""

from __future__ import annotations

from dataclasses import dataclass

from defusedxml import ElementTree as SafeET

from app.coverage.model import Branches, FileCoverage, Report
from app.errors import MalformedReport, ReportTooLarge, UnknownFormat

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_FILES = 100_000
DEFAULT_MAX_LINES = 20_000_000


@dataclass(frozen=True, slots=True)
class ParseLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_lines: int = DEFAULT_MAX_LINES


def detect_format(raw: bytes) -> str:
    head = raw[:4096].lstrip()
    if not head:
        raise UnknownFormat("empty report")
    if head.startswith(b"<"):
        if b"<coverage" in head:
            return "cobertura"
        raise UnknownFormat("XML document that is not a known coverage format")
    if b"SF:" in head or head.startswith(b"TN:"):
        return "lcov"
    raise UnknownFormat("content is not a recognised coverage format")


def parse_report(raw: bytes, *, limits: ParseLimits | None = None) -> Report:
    limits = limits or ParseLimits()
    if len(raw) > limits.max_bytes:
        raise ReportTooLarge(f"report is {len(raw)} bytes, over the limit of {limits.max_bytes}")
    fmt = detect_format(raw)
    if fmt == "cobertura":
        return _parse_cobertura(raw)
    return _parse_lcov(raw)


def _parse_cobertura(raw: bytes) -> Report:
    try:
        root = SafeET.fromstring(raw, forbid_dtd=True)
    except Exception as exc:
        raise MalformedReport("cobertura", str(exc)) from exc
    report = Report()
    for cls in root.iter("class"):
        path = cls.get("filename")
        if not path:
            raise MalformedReport("cobertura", "class without filename")
        fc = report.files.setdefault(path, FileCoverage())
        for line in cls.iter("line"):
            try:
                ln, hits = int(line.get("number", "")), int(line.get("hits", ""))
            except ValueError as exc:
                raise MalformedReport("cobertura", f"bad line record: {exc}") from exc
            fc.lines[ln] = fc.lines.get(ln, 0) + hits
    return report


def _parse_lcov(raw: bytes) -> Report:
    report = Report()
    fc: FileCoverage | None = None
    for no, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        if line.startswith("SF:"):
            fc = report.files.setdefault(line[3:].strip(), FileCoverage())
        elif line.startswith("DA:") and fc is not None:
            try:
                ln, hits = line[3:].split(",")[:2]
                fc.lines[int(ln)] = fc.lines.get(int(ln), 0) + int(hits)
            except ValueError as exc:
                raise MalformedReport("lcov", f"bad DA record {line!r}", line=no) from exc
        elif line.startswith("BRDA:") and fc is not None:
            ln, block, branch, taken = line[5:].split(",")
            bid = f"{block}:{branch}"
            old = fc.branches.get(int(ln)) or Branches(0, 0, frozenset(), frozenset())
            cov = old.covered_ids or frozenset()
            if taken not in ("-", "0"):
                cov = cov | {bid}
            all_ids = (old.all_ids or frozenset()) | {bid}
            fc.branches[int(ln)] = Branches(len(cov), len(all_ids), cov, all_ids)
    return report
