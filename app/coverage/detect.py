"""Which format a raw report is in, from its content only (never its name);
content that matches no format exactly is refused with the formats tried.

Only the head of the report is read (and the whole, for a key its writer
puts last). XML is told apart by its root element
(``<coverage>`` is Cobertura, or Clover when a ``<project>`` element or a
``clover`` attribute follows; ``<report>`` JaCoCo, ``<CoverageSession>``
OpenCover), JSON by keys only its
format writes (Istanbul's ``"statementMap"``, coverage.py's ``"meta"`` object
naming its version beside a ``"files"`` object,
llvm-cov's top-level ``"type"``, looked for in the whole document, since
llvm-cov writes it last, after the whole of ``"data"``, gcov's ``"gcc_version"``, SimpleCov's
``"simplecov_version"`` / ``"command_name"`` or a resultset's
``{"<command>": {"coverage": {``), gcov's text by its ``-: 0:Source:``
first line, Go by its ``mode:`` first line and LCOV by its ``KEY:value``
records. A
gzip-compressed report is detected by what it holds.
"""

from __future__ import annotations

import json
import re

from app.coverage.jsontop import WS as _WS
from app.coverage.jsontop import top_level_strings as _top_level_strings
from app.coverage.jsontop import top_level_values as _top_level_values
from app.errors import UnknownFormat

COBERTURA = "cobertura"
LCOV = "lcov"
COVERAGE_JSON = "coverage.py-json"
JACOCO = "jacoco"
GO = "go-coverprofile"
CLOVER = "clover"
ISTANBUL = "istanbul-json"
LLVM_JSON = "llvm-cov-json"
GCOV_JSON = "gcov-json"
SIMPLECOV = "simplecov-json"
OPENCOVER = "opencover"
GCOV_TEXT = "gcov-text"
COVERALLS = "coveralls-json"
COVR = "covr-json"
SCALA_JSON = "scala-json"
LLVM_SHOW = "llvm-cov-show"
LUACOV = "luacov"
DOTCOVER = "dotcover-xml"
SCOVERAGE = "scoverage-xml"
XCCOVERAGE = "xccoverage-plist"
FLOW = "flow-json"
CODECOV_V1 = "codecov-v1-json"
SALESFORCE = "salesforce-json"
GAP = "gap-json"
ELM = "elm-coverage-json"
DLST = "d-lst"
BULLSEYE = "bullseye"
VISUAL_STUDIO = "visual-studio-xml"
MONO = "mono"

#: Readable names, for error messages.
FORMAT_NAMES = {
    COBERTURA: "Cobertura XML",
    LCOV: "LCOV",
    COVERAGE_JSON: "coverage.py JSON",
    JACOCO: "JaCoCo XML",
    GO: "Go coverprofile",
    CLOVER: "Clover XML",
    ISTANBUL: "Istanbul JSON",
    LLVM_JSON: "llvm-cov export JSON",
    GCOV_JSON: "gcov JSON",
    SIMPLECOV: "SimpleCov JSON",
    OPENCOVER: "OpenCover XML",
    GCOV_TEXT: "gcov text",
    COVERALLS: "Coveralls JSON",
    COVR: "covr JSON",
    SCALA_JSON: "Scala JSON",
    LLVM_SHOW: "llvm-cov show text",
    LUACOV: "luacov",
    DOTCOVER: "dotCover XML",
    SCOVERAGE: "scoverage XML",
    XCCOVERAGE: "xccoverage plist",
    FLOW: "Flow coverage JSON",
    CODECOV_V1: "Codecov v1 JSON",
    SALESFORCE: "Salesforce Apex JSON",
    GAP: "GAP coverage JSON",
    ELM: "elm-coverage JSON",
    DLST: "D coverage listing",
    BULLSEYE: "Bullseye XML",
    VISUAL_STUDIO: "Visual Studio coverage XML",
    MONO: "Mono coverage XML",
}

HEAD_BYTES = 64 * 1024
_BOMS = (b"\xef\xbb\xbf",)
# comments, processing instructions and the DOCTYPE before the root element
_XML_PROLOG = re.compile(rb"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)", re.DOTALL)
_XML_ROOT = re.compile(rb"\s*<([A-Za-z_][\w.:-]*)")
# gcov's text output opens with "        -:    0:Source:<path>"
_GCOV_SOURCE = re.compile(rb"\s*-:\s*0:Source:\S")
_DLST_LINE = re.compile(rb" *\d*\|")
_DLST_SUMMARY = re.compile(rb"\n[^\n|]+ (?:is \d+% covered|has no code)[ \t\r]*(?:\n|$)")
_GO_MODE = re.compile(rb"mode:\s*\S")
_GO_BLOCK = re.compile(rb"\S+\.go:\d+\.\d+,\d+\.\d+ \d+ \d+\s*$")
_LCOV_KEYS = {b"TN", b"SF", b"VER"}
_LCOV_ANY_KEY = re.compile(rb"[A-Z]+:")
_ROOT_TAG = re.compile(rb"<[^>]*>")
_CLOVER_HINT = re.compile(rb"<(?:[\w.-]+:)?project[\s>/]")
# dotCover's <Root>: its own attributes, or its index of files
_DOTCOVER_HINT = re.compile(rb"DotCoverVersion=|ReportType=\"DetailedXml\"|<FileIndices[\s>/]")
# Xcode's xccoverage archive: an NSKeyedArchiver plist whose objects have sourceFiles
_XCCOVERAGE_HINT = re.compile(rb"<key>(?:sourceFiles|documentLocation)</key>")
_MONO_HINT = re.compile(rb"<(?:[\w.-]+:)?assembly[\s>/]")
_VS_HINT = re.compile(rb"<(?:modules|module|functions|source_files)[\s>/]")
_COBERTURA_HINT = re.compile(rb"<(?:[\w.-]+:)?(?:packages|sources)[\s>/]")
_GZIP = b"\x1f\x8b"
# llvm-cov show: "<path>:" then "    1|      5|source" (ANSI colours with -use-color)
_LLVM_SHOW_HEAD = re.compile(rb"[^|\n]+:\r?\n *\d+\|[ \d.kMGTPE]*\|")
_LLVM_SHOW_LINE = re.compile(rb" *\d+\|[ \d.kMGTPE]*\|")
_ANSI = re.compile(rb"\x1b\[[0-9;]*m")
# luacov's report: a rule of "=", a file name (or Summary), a rule
_LUACOV_HEAD = re.compile(rb"={7,}\r?\n[^\n=][^\n]*\n={7,}\r?\n")
# .resultset.json: {"<command name>": {"coverage": {...   (its "timestamp" comes last)
_RESULTSET = re.compile(rb'\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"coverage"\s*:\s*\{')


#: The top-level keys of an llvm-cov export (``llvm-cov export -format=text``).
_LLVM_KEYS = frozenset({b"data", b"type", b"version"})
#: Most unpacked bytes of a gzipped llvm-cov export read to find its ``type``
#: (and at most 64 MiB + 200 times the packed size).
LLVM_SCAN_MAX_BYTES = 256 * 1024 * 1024
_FIRST_KEY = re.compile(rb'\{\s*"((?:[^"\\]|\\.)*)"\s*:')
#: An object's first key and the opening of its value, if an array or object.
_FIRST_ENTRY = re.compile(rb'\{\s*"(?:[^"\\]|\\.)*"\s*:\s*[\[{]')


def _whole(raw: bytes) -> bytes:
    """The whole document (unpacked within ``LLVM_SCAN_MAX_BYTES`` if gzipped),
    for a key its writer puts after a long value."""
    if raw.startswith(_GZIP):
        from app.coverage.jsonstream import gunzip_head

        return gunzip_head(raw, min(LLVM_SCAN_MAX_BYTES, (64 << 20) + 200 * len(raw)))
    return raw


def _is_coverage_py(raw: bytes, head: bytes) -> bool:
    """coverage.py's JSON exactly: a top-level ``"meta"`` object naming its
    ``version`` (or ``format``) beside a ``"files"`` object, and no key of
    another format (Flow's ``flowStatus`` has ``files`` too)."""
    values, complete = _top_level_values(head, 0)
    if not complete and (b"meta" not in values or b"files" not in values):
        whole = _whole(raw)
        values, _ = _top_level_values(whole, whole.find(b"{"))
        head = whole
    meta, files = values.get(b"meta"), values.get(b"files")
    if meta is None or files is None or head[files[0] : files[0] + 1] != b"{":
        return False
    if head[meta[0] : meta[0] + 1] != b"{" or b"flowStatus" in values:
        return False
    try:
        fields = json.loads(head[meta[0] : meta[1]])
    except ValueError:
        return False
    return isinstance(fields, dict) and ("version" in fields or "format" in fields)


#: A top-level key (and the start of its value) only one format writes.
_TOP_LEVEL_KEYS = (
    (b"source_files", b"[", COVERALLS),
    (b"uploader", b'"R"', COVR),
    (b"fileReports", b"[", SCALA_JSON),
)


def _by_top_level_key(raw: bytes, head: bytes) -> str | None:
    """The format whose own top-level key the JSON object has (its value of
    the right kind), read in the whole document when the head is cut short."""
    values, complete = _top_level_values(head, 0)
    if not complete and not any(key in values for key, _, _ in _TOP_LEVEL_KEYS):
        head = _whole(raw)
        values, _ = _top_level_values(head, head.find(b"{"))
    for key, value, fmt in _TOP_LEVEL_KEYS:
        at = values.get(key)
        if at is not None and head[at[0] : at[0] + len(value)] == value:
            return fmt
    return None


def _llvm_show(probe: bytes) -> str | None:
    """llvm-cov show's text: a ``<path>:`` line, then ``N|count|source``
    (colours dropped); a view without the path line is refused, naming why."""
    if b"\x1b" in probe:
        probe = _ANSI.sub(b"", probe)
    if _LLVM_SHOW_HEAD.match(probe):
        return LLVM_SHOW
    if _LLVM_SHOW_LINE.match(probe):
        raise UnknownFormat(
            "llvm-cov show text without a `<path>:` line names no source file (llvm-cov "
            "writes one per file only when it shows several; name the source twice, or "
            "show the whole binary)"
        )
    return None


def _top_keys(raw: bytes, head: bytes, *keys: bytes) -> bool:
    """Whether the JSON object has every one of ``keys`` at its top level. A
    head cut short must hold one of them at the top level, and the whole
    document the others as keys (``"key":``; a byte search, not a walk, so a
    large report is not stepped through in Python)."""
    values, complete = _top_level_values(head, 0)
    if complete or all(k in values for k in keys):
        return all(k in values for k in keys)
    if not any(k in values for k in keys):
        return False
    whole = _whole(raw)
    return all(
        k in values or re.search(rb'"' + re.escape(k) + rb'"\s*:', whole) is not None for k in keys
    )


def _is_codecov_v1(raw: bytes, head: bytes) -> bool:
    """Codecov's v1 JSON: a top-level ``"coverage"`` object whose first file's
    lines are an object keyed by line number (or ``"lines"``) or a list."""
    values, complete = _top_level_values(head, 0)
    doc = head
    if b"coverage" not in values:
        if complete or not _top_keys(raw, head, b"coverage"):
            return False
        doc = _whole(raw)
        values, _ = _top_level_values(doc, doc.find(b"{"))
        if b"coverage" not in values:
            return False
    start = values[b"coverage"][0]
    entry = _FIRST_ENTRY.match(doc, start)
    if entry is None:  # no file, or not an object
        return _WS.sub(b"", doc[start : start + 8]).startswith(b"{}")
    lines = entry.end() - 1
    if doc[lines : lines + 1] == b"[":
        return True
    first = _FIRST_KEY.match(doc, lines)
    return _WS.sub(b"", doc[lines : lines + 8]).startswith(b"{}") or (
        first is not None and (first.group(1).isdigit() or first.group(1) == b"lines")
    )


def _is_salesforce(head: bytes) -> bool:
    """Salesforce's list of classes: the first an object with ``name`` and ``lines``."""
    first = _WS.match(head, 1).end()  # type: ignore[union-attr]
    values, _ = _top_level_values(head, first)
    return b"name" in values and b"lines" in values


def _is_gap(head: bytes) -> bool:
    """GAP's JSON lines: the first a ``{"Type":"S","File":...}`` object."""
    key = _FIRST_KEY.match(head)
    line = head[:4096].split(b"\n", 1)[0]  # a GAP record is short; a long line is not one
    if key is None or key.group(1) != b"Type" or len(line) >= 4096:
        return False
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(first, dict) and first.get("Type") == "S" and "File" in first


def _is_dlst(raw: bytes, first: bytes) -> bool:
    """D's listing: a first line ``   12|source`` and a summary line
    ``<path> is N% covered`` (or ``has no code``) somewhere (a listing cut
    short after it is still D's, and its parser says what is missing)."""
    return _DLST_LINE.match(first) is not None and _DLST_SUMMARY.search(_whole(raw)) is not None


def tried() -> str:
    """The formats detection knows, for the error of content matching none."""
    return ", ".join(FORMAT_NAMES.values())


def _xml_root(head: bytes) -> tuple[bytes | None, int]:
    """The root element's name, and where its start tag begins."""
    pos = 0
    while m := _XML_PROLOG.match(head, pos):
        if m.end() == pos:
            break
        pos = m.end()
    root = _XML_ROOT.match(head, pos)
    return (root.group(1), root.start(1) - 1) if root else (None, pos)


def xml_root_name(head: bytes) -> bytes | None:
    """The local name of the root element of the XML document ``head`` starts."""
    for bom in _BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
    root, _ = _xml_root(head.lstrip())
    return root.rpartition(b":")[2] if root else None


def _coverage_root(head: bytes, at: int) -> str:
    """Cobertura or Clover, both ``<coverage>``: Clover's root has a ``clover``
    attribute or a ``<project>`` child, Cobertura's ``<sources>`` / ``<packages>``."""
    tag = _ROOT_TAG.match(head, at)
    if tag and b"clover=" in tag.group(0):
        return CLOVER
    mono = _MONO_HINT.search(head, at)
    if mono and not any(h.search(head, at, mono.start()) for h in (_CLOVER_HINT, _COBERTURA_HINT)):
        return MONO  # monocov: <assembly> before any Cobertura or Clover element
    project = _CLOVER_HINT.search(head, at)
    if project is None:
        return COBERTURA
    cobertura = _COBERTURA_HINT.search(head, at)
    return CLOVER if cobertura is None or project.start() < cobertura.start() else COBERTURA


def detect_format(raw: bytes) -> str:
    """The format key of ``raw``; ``UnknownFormat`` with a reason if none fits."""
    head = raw[:HEAD_BYTES]
    if head.startswith(_GZIP):
        from app.coverage.jsonstream import gunzip_head

        head = gunzip_head(raw, HEAD_BYTES)
        if not head:
            raise UnknownFormat("gzip data that cannot be unpacked")
        if head.startswith(_GZIP):
            raise UnknownFormat("gzip inside gzip is not a coverage report")
    for bom in _BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
    head = head.lstrip()
    if not head:
        raise UnknownFormat("the report is empty")
    if head.startswith(b"<"):
        root, at = _xml_root(head)
        if root is None:
            raise UnknownFormat("XML without a readable root element in its first 64 KiB")
        name = root.rpartition(b":")[2]
        if name == b"coverage":
            return _coverage_root(head, at)
        if name == b"report":
            return JACOCO
        if name == b"CoverageSession":
            return OPENCOVER
        if name == b"Root" and _DOTCOVER_HINT.search(head, at):
            return DOTCOVER
        if name in (b"scoverage", b"statements"):
            return SCOVERAGE
        if name == b"plist" and b"NSKeyedArchiver" in head and _XCCOVERAGE_HINT.search(_whole(raw)):
            return XCCOVERAGE
        if name == b"BullseyeCoverage":
            return BULLSEYE
        if name == b"CoverageDSPriv" or (name == b"results" and _VS_HINT.search(head, at)):
            return VISUAL_STUDIO
        shown = root[:40].decode("ascii", "replace")
        raise UnknownFormat(
            f"XML root element <{shown}> is not a known coverage format "
            "(expected <coverage> for Cobertura, Clover or Mono, <report> for JaCoCo, "
            "<CoverageSession> for OpenCover, <Root> for dotCover, <scoverage> or <statements> "
            "for scoverage, <plist> for Xcode's xccoverage, <BullseyeCoverage> for Bullseye, "
            "<results> or <CoverageDSPriv> for Visual Studio)"
        )
    if head.startswith(b"bplist00"):
        if b"NSKeyedArchiver" in head and b"sourceFiles" in _whole(raw):
            return XCCOVERAGE
        raise UnknownFormat("a binary plist that is not Xcode's coverage archive")
    if head.startswith(b"{"):
        first_key = _FIRST_KEY.match(head)
        if first_key and first_key.group(1) in _LLVM_KEYS:
            # llvm-cov export writes "data" first and "type" last: the whole
            # document is read, not its head, and the keys in any order.
            whole = _whole(raw)
            start = whole.find(b"{")
            if _top_level_strings(whole, start).get(b"type") == b"llvm.coverage.json.export":
                return LLVM_JSON
            if b'"llvm.coverage.json.export"' in whole:  # a broken one: its parser says how
                return LLVM_JSON
        if b'"statementMap"' in head:
            return ISTANBUL
        if b'"gcc_version"' in head or (b'"format_version"' in head and b'"line_number"' in head):
            return GCOV_JSON
        if b'"simplecov_version"' in head or b'"command_name"' in head:
            return SIMPLECOV
        if _is_gap(head):
            return GAP
        if _top_keys(raw, head, b"flowStatus", b"files"):
            return FLOW
        if _top_keys(raw, head, b"coverageData", b"moduleMap"):
            return ELM
        if fmt := _by_top_level_key(raw, head):
            return fmt
        if _is_coverage_py(raw, head):
            return COVERAGE_JSON
        if _RESULTSET.match(head):
            return SIMPLECOV
        if head.rstrip() == b"{}":  # nyc / c8 with no instrumented file
            return ISTANBUL
        if _is_codecov_v1(raw, head):
            return CODECOV_V1
        raise UnknownFormat(
            f"JSON that matches no known coverage format exactly (tried: {tried()})"
        )
    if head.startswith(b"[") and _is_salesforce(head):
        return SALESFORCE
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    if _GCOV_SOURCE.match(first):
        return GCOV_TEXT
    if b"|" in first and _is_dlst(raw, first):
        return DLST
    if b"|" in head[:4096] and (fmt := _llvm_show(head[:4096])):
        return fmt
    if _LUACOV_HEAD.match(head):
        return LUACOV
    if _GO_MODE.match(first) or _GO_BLOCK.match(first):
        return GO
    key = first.split(b":", 1)[0]
    if key in _LCOV_KEYS or (_LCOV_ANY_KEY.match(first) and b"\nSF:" in head):
        return LCOV
    if b"\x00" in head[:1024]:
        raise UnknownFormat("binary content is not a coverage report")
    raise UnknownFormat(f"content is not a recognised coverage format (tried: {tried()})")
