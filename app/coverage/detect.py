"""Which format a raw report is in, from its content only (never its name).

Only the head of the report is read. XML is told apart by its root element
(``<coverage>`` is Cobertura, ``<report>`` JaCoCo), JSON by coverage.py's
``"meta"`` / ``"files"`` keys, Go by its ``mode:`` first line and LCOV by its
``KEY:value`` records.
"""

from __future__ import annotations

import re

from app.errors import UnknownFormat

COBERTURA = "cobertura"
LCOV = "lcov"
COVERAGE_JSON = "coverage.py-json"
JACOCO = "jacoco"
GO = "go-coverprofile"

#: Readable names, for error messages.
FORMAT_NAMES = {
    COBERTURA: "Cobertura XML",
    LCOV: "LCOV",
    COVERAGE_JSON: "coverage.py JSON",
    JACOCO: "JaCoCo XML",
    GO: "Go coverprofile",
}

HEAD_BYTES = 64 * 1024
_BOMS = (b"\xef\xbb\xbf",)
# comments, processing instructions and the DOCTYPE before the root element
_XML_PROLOG = re.compile(rb"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)", re.DOTALL)
_XML_ROOT = re.compile(rb"\s*<([A-Za-z_][\w.:-]*)")
_GO_MODE = re.compile(rb"mode:\s*\S")
_GO_BLOCK = re.compile(rb"\S+\.go:\d+\.\d+,\d+\.\d+ \d+ \d+\s*$")
_LCOV_KEYS = {b"TN", b"SF", b"VER"}
_LCOV_ANY_KEY = re.compile(rb"[A-Z]+:")


def _xml_root(head: bytes) -> bytes | None:
    pos = 0
    while m := _XML_PROLOG.match(head, pos):
        if m.end() == pos:
            break
        pos = m.end()
    root = _XML_ROOT.match(head, pos)
    return root.group(1) if root else None


def detect_format(raw: bytes) -> str:
    """The format key of ``raw``; ``UnknownFormat`` with a reason if none fits."""
    head = raw[:HEAD_BYTES]
    for bom in _BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
    head = head.lstrip()
    if not head:
        raise UnknownFormat("the report is empty")
    if head.startswith(b"<"):
        root = _xml_root(head)
        if root is None:
            raise UnknownFormat("XML without a readable root element in its first 64 KiB")
        name = root.rpartition(b":")[2]
        if name == b"coverage":
            return COBERTURA
        if name == b"report":
            return JACOCO
        shown = root[:40].decode("ascii", "replace")
        raise UnknownFormat(
            f"XML root element <{shown}> is not a known coverage format "
            "(expected <coverage> for Cobertura or <report> for JaCoCo)"
        )
    if head.startswith(b"{"):
        if b'"meta"' in head or b'"files"' in head:
            return COVERAGE_JSON
        raise UnknownFormat('JSON that is not a coverage.py report (no "meta" or "files")')
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    if _GO_MODE.match(first) or _GO_BLOCK.match(first):
        return GO
    key = first.split(b":", 1)[0]
    if key in _LCOV_KEYS or (_LCOV_ANY_KEY.match(first) and b"\nSF:" in head):
        return LCOV
    if b"\x00" in head[:1024]:
        raise UnknownFormat("binary content is not a coverage report")
    raise UnknownFormat(
        "content is not a recognised coverage format "
        "(Cobertura XML, JaCoCo XML, LCOV, coverage.py JSON or Go coverprofile)"
    )
