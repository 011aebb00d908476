"""Decoding what the Codecov uploaders PUT: several coverage files in one payload.

Two formats, told apart by content as Codecov's worker does:

- codecov-cli's v1 JSON: ``{"coverage_files": [{"filename", "format":
  "base64+compressed", "data"}], "network_files": [...], "report_fixes":
  {"format": "legacy", "value": {path: {"eof", "lines"}}}}``; each file is
  zlib-compressed, then base64-encoded.
- the legacy text: optional ``<<<<<< ENV`` and ``<<<<<< network`` sections,
  then per file ``# path=<name>`` + contents + ``<<<<<< EOF``;
  ``# path=fixes`` holds report fixes; everything after
  ``==FROMNOWONIGNOREDBYCODECOV==>>>`` is ignored. Gzipped as a whole by
  the legacy uploader.

A body that is neither is one plain coverage report. Decompression is
bounded by one budget for the whole payload (``InflateBudget``), so a small
bomb, or many small ones in one payload, cannot blow up a worker.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from app.errors import MalformedPayload, ReportTooLarge

GZIP_MAGIC = b"\x1f\x8b"
IGNORE_AFTER = b"==FROMNOWONIGNOREDBYCODECOV==>>>"
_MARKER = re.compile(rb"<<<<<< (network|ENV|EOF)[^\n]*")
_FIX_LINE = re.compile(r"^(.+?):([\d,\s]+)$")
#: Most digits of a line number in report fixes: no source file has a
#: billion lines, and Python refuses to read an int of over 4,300 digits.
_MAX_LINE_DIGITS = 9


@dataclass
class Fix:
    """Lines of one file to ignore (``report_fixes``): these lines, and all after ``eof``."""

    lines: set[int] = field(default_factory=set)
    eof: int | None = None


@dataclass
class CoverageFile:
    name: str
    data: bytes


@dataclass
class Payload:
    kind: str  # "v1", "legacy" or "plain"
    files: list[CoverageFile]
    network: list[str] = field(default_factory=list)
    fixes: dict[str, Fix] = field(default_factory=dict)


class InflateBudget:
    """What one payload may decompress to, all its compressed parts together:
    a limit per part would let 40 small parts of one payload unpack to 40
    times the limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def inflate(self, data: bytes, *, wbits: int, what: str) -> bytes:
        """zlib/gzip-decompress ``data`` within what is left of the budget."""
        left = self.limit - self.used
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(data, left + 1)
        except zlib.error as exc:
            raise MalformedPayload(f"{what} is not valid compressed data: {exc}") from None
        if len(out) > left or inflater.unconsumed_tail:
            raise ReportTooLarge(
                f"the payload decompresses to more than {self.limit} bytes in all "
                f"(reached in {what})"
            )
        self.used += len(out)
        return out


def decode_payload(raw: bytes, limit: int) -> Payload:
    """The payload's files; ``limit``: what it may decompress to, in all."""
    budget = InflateBudget(limit)
    if raw[:2] == GZIP_MAGIC:
        raw = budget.inflate(raw, wbits=16 + zlib.MAX_WBITS, what="the gzip payload")
    body = raw.strip()
    if body.startswith(b"{") and body.endswith(b"}") and b'"coverage_files"' in body:
        return decode_v1(body, budget)
    if _MARKER.search(body) or body.startswith(b"# path="):
        return decode_legacy(body)
    return Payload("plain", [CoverageFile("report", body)])


def _fixes(value: Any, where: str) -> dict[str, Fix]:
    if not isinstance(value, dict):
        raise MalformedPayload(f"{where} must be an object of path -> {{eof, lines}}")
    fixes = {}
    for path, fix in value.items():
        if not isinstance(fix, dict):
            raise MalformedPayload(f"{where}[{path!r}] must be an object with eof and lines")
        lines, eof = fix.get("lines") or [], fix.get("eof")
        if not isinstance(lines, list) or not all(isinstance(n, int) for n in lines):
            raise MalformedPayload(f"{where}[{path!r}].lines must be a list of line numbers")
        if eof is not None and not isinstance(eof, int):
            raise MalformedPayload(f"{where}[{path!r}].eof must be a line number or null")
        fixes[str(path)] = Fix(set(lines), eof)
    return fixes


def json_object(body: bytes, what: str = "the payload") -> dict[str, Any]:
    """``body`` as a JSON object; a clear refusal for anything else."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedPayload(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:  # ``[[[[...`` nested deeper than the C decoder recurses
        raise MalformedPayload(f"{what}'s JSON is nested too deeply") from None
    if not isinstance(doc, dict):
        raise MalformedPayload(f"{what} must be a JSON object")
    return doc


def decode_files(doc: dict[str, Any], key: str, budget: InflateBudget) -> list[tuple[str, bytes]]:
    """The (name, bytes) of each entry of ``doc[key]``, codecov-cli's list of
    ``{"filename", "format", "data"}``: ``base64+compressed`` data inflated
    within ``budget``, any other format taken as the data itself."""
    entries = doc.get(key)
    if not isinstance(entries, list):
        raise MalformedPayload(f"{key} must be a list")
    files = []
    for i, entry in enumerate(entries):
        where = f"{key}[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
            raise MalformedPayload(f"{where} must be an object with a string data field")
        name = str(entry.get("filename") or f"file-{i}")
        data: str = entry["data"]
        if entry.get("format") == "base64+compressed":
            try:
                packed = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise MalformedPayload(f"{where}.data ({name}) is not base64: {exc}") from None
            raw = budget.inflate(packed, wbits=zlib.MAX_WBITS, what=f"{where}.data ({name})")
        else:  # as Codecov does: an unknown format is the data itself
            raw = data.encode()
        files.append((name, raw))
    return files


def decode_v1(body: bytes, budget: InflateBudget) -> Payload:
    doc = json_object(body)
    if not isinstance(doc.get("coverage_files"), list):
        raise MalformedPayload("coverage_files must be a list")
    network = doc.get("network_files") or []
    if not isinstance(network, list) or not all(isinstance(p, str) for p in network):
        raise MalformedPayload("network_files must be a list of paths")
    fixes_doc = doc.get("report_fixes", doc.get("path_fixes")) or {}
    fixes: dict[str, Fix] = {}
    if fixes_doc:
        if not isinstance(fixes_doc, dict):
            raise MalformedPayload("report_fixes must be an object")
        fixes = _fixes(fixes_doc.get("value") or {}, "report_fixes.value")
    files = [CoverageFile(name, raw) for name, raw in decode_files(doc, "coverage_files", budget)]
    return Payload("v1", files, [p for p in network if p], fixes)


def _legacy_fixes(section: bytes) -> dict[str, Fix]:
    fixes: dict[str, Fix] = {}
    for line in section.decode("utf-8", "replace").splitlines():
        m = _FIX_LINE.match(line.strip())
        if m:
            digits = [n for n in m.group(2).replace(" ", "").split(",") if n.strip()]
            if any(len(n.strip()) > _MAX_LINE_DIGITS for n in digits):
                raise MalformedPayload(
                    f"report fixes of {m.group(1)[:200]!r} name a line number of more than "
                    f"{_MAX_LINE_DIGITS} digits"
                )
            nums = {int(n) for n in digits}
            fixes.setdefault(m.group(1), Fix()).lines |= nums
    return fixes


def decode_legacy(body: bytes) -> Payload:
    cut = body.find(IGNORE_AFTER)
    if cut >= 0:
        body = body[:cut]
    parts = _MARKER.split(body)
    # [content, marker, content, marker, ..., tail]: each content ends at its marker
    files: list[CoverageFile] = []
    network: list[str] = []
    fixes: dict[str, Fix] = {}
    pieces = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    pieces.append((parts[-1], b"EOF"))
    for content, marker in pieces:
        content = content.strip()
        if marker == b"network":
            network = [p.strip() for p in content.decode("utf-8", "replace").splitlines()]
        elif marker == b"EOF" and content.startswith(b"# path="):
            head, _, data = content.partition(b"\n")
            name = head[len(b"# path=") :].decode("utf-8", "replace").strip()
            if name == "fixes":
                fixes.update(_legacy_fixes(data))
            else:
                files.append(CoverageFile(name, data.strip()))
        elif marker == b"EOF" and content:
            files.append(CoverageFile(f"report-{len(files)}", content))
    return Payload("legacy", files, [p for p in network if p], fixes)
