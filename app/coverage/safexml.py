"""Streaming, safe XML for the XML formats (Cobertura, JaCoCo, Clover, OpenCover).

lxml's target parser calls back per element and builds no tree, so memory
stays near the size of the model, not several times the report. The parser
never resolves entities, never touches the network, never loads a DTD and
keeps libxml2's size guards (``huge_tree`` off).

The parser reads every report as UTF-8, whatever its XML declaration says
(every coverage tool writes UTF-8): a declared ``UTF-7`` or ``EBCDIC`` can
no longer turn bytes the checks below do not see into markup, and a report
whose bytes are not UTF-8 is malformed. A UTF-16 or UTF-32 report (a byte
order mark) is refused naming its encoding. Internal entity declarations
are refused outright: libxml2 still expands internal entities inside
attribute values, and a coverage report never needs one. Because the
parser reads exactly these bytes as UTF-8, where ``<!ENTITY`` has one
spelling, looking for it in them finds every declaration. A ``DOCTYPE``
naming an external DTD (JaCoCo writes one) is accepted and never loaded.

Callbacks raise :class:`Invalid` for a semantic problem; :func:`feed`
turns it, and every lxml or decoding error, into ``MalformedReport`` with
the source line where it can be found. :class:`ReportTarget` is what the
four coverage formats' targets share: the line-record limit, the depth and
root checks, and adding a finished file to the report.
"""

from __future__ import annotations

import io
from typing import Any, ClassVar

from lxml import etree

from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.paths import PathNormaliser
from app.errors import MalformedReport, ReportError

CHUNK = 1 << 20
#: Deepest element nesting accepted; real reports nest about a dozen deep.
MAX_DEPTH = 256
_ENTITY_DECL = b"<!ENTITY"
#: Byte order marks of the encodings the parser does not read.
_OTHER_BOMS = {
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\xfe\xff": "UTF-16",
    b"\xff\xfe": "UTF-16",
}
#: What the parser reads every report as, whatever its declaration says.
ENCODING = "utf-8"


class Invalid(Exception):
    """A semantic error found by a target callback at element number ``index``."""

    def __init__(self, reason: str, index: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.index = index


class ReportTarget:
    """The part of a coverage format's lxml target every XML format shares.

    :meth:`start` counts each line record (an element of ``record_tags``)
    against ``limits.max_lines`` and hands it to :meth:`record`, the format's
    hot path; any other element is checked (nesting depth, the root's name)
    and handed to :meth:`element`. Elements are counted, records apart from
    the others so that the hot path adds one number, for the element index
    :class:`Invalid` takes (:attr:`n`). A subclass's ``end`` lowers
    :attr:`depth` itself: a call per element more would cost the hot path.
    """

    #: The format's name in errors, its root element and its line records.
    fmt: ClassVar[str]
    root: ClassVar[str]
    record_tags: ClassVar[frozenset[str]] = frozenset({"line"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        self.limits = limits
        self.max_records = limits.max_lines
        self.max_ln = limits.max_line_number
        self.report = Report()
        self.paths = PathNormaliser(roots)
        self.others = 0  # elements other than line records started
        self.records = 0  # line records started
        self.depth = 0

    @property
    def n(self) -> int:
        """Elements started so far (the current one included)."""
        return self.others + self.records

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if tag in self.record_tags:
            self.records += 1
            if self.records > self.max_records:
                raise self.limits.too_many_lines(self.fmt)
            self.record(tag, attrib)
            return
        self.others += 1
        if self.depth > MAX_DEPTH:
            raise Invalid(f"elements are nested more than {MAX_DEPTH} deep", self.n)
        if self.depth == 1 and tag != self.root:
            raise Invalid(f"the root element is <{tag}>, not <{self.root}>", self.n)
        self.element(tag, attrib)

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        """One line record (the limit already checked)."""
        raise NotImplementedError

    def skip(self, tag: str, attrib: dict[str, str]) -> None:
        """A bad element skipped, counted and named (``app.coverage.skipped``)."""
        shown = " ".join(f'{k}="{v}"' for k, v in list(attrib.items())[:4])
        self.report.skipped.add(f"<{tag} {shown}>", f"element {self.n}")

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        """Any other element (depth and root already checked)."""
        raise NotImplementedError

    def close(self) -> None:
        """lxml calls this even after an error, so it must not raise."""

    def finish(self) -> Report:
        """The report, once the whole document was read (called by :func:`feed`)."""
        if self.depth != 0 or self.n == 0:
            raise Invalid(f"the document has no <{self.root}> element")
        return self.report

    def add_file(self, path: str, lines: dict[int, int], branches: dict[int, Branches]) -> None:
        """A finished file's coverage into the report; a path met again merges."""
        files = self.report.files
        fc = FileCoverage(lines, branches)
        mine = files.get(path)
        if mine is None:
            if len(files) >= self.limits.max_files:
                raise self.limits.too_many_files(self.fmt)
            files[path] = fc
        else:
            mine.merge(fc)


class FileTarget(ReportTarget):
    """A format whose line records sit in one element per source file
    (Cobertura's ``<class>``, JaCoCo's ``<sourcefile>``, Clover's ``<file>``):
    :attr:`lines` and :attr:`branches` are the current file's, ``None`` lines
    outside one."""

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.lines: dict[int, int] | None = None
        self.branches: dict[int, Branches] = {}
        self.path = ""

    def start_file(self, path: str) -> None:
        self.path = path
        self.lines, self.branches = {}, {}

    def end_file(self) -> None:
        """The current file is complete: into the report."""
        assert self.lines is not None
        self.add_file(self.path, self.lines, self.branches)
        self.lines = None


def _parser(target: Any) -> etree.XMLParser:
    return etree.XMLParser(
        target=target,
        encoding=ENCODING,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=False,
        remove_comments=True,
        remove_pis=True,
    )


def element_line(raw: bytes, index: int) -> int | None:
    """Source line of the ``index``-th element (1-based start order); error path only."""
    count = 0
    try:
        for _event, el in etree.iterparse(
            io.BytesIO(raw),
            events=("start",),
            encoding=ENCODING,
            resolve_entities=False,
            no_network=True,
        ):
            count += 1
            if count == index:
                return int(el.sourceline) if el.sourceline else None
    except etree.LxmlError:
        return None
    return None


class _Nothing:
    """A target that keeps nothing: the parser only checks the XML."""

    def close(self) -> None:
        return None

    def finish(self) -> None:
        return None


def check(raw: bytes, fmt: str) -> None:
    """Refuse ``raw`` exactly as :func:`feed` would for its XML alone (not
    well-formed, not UTF-8, an entity declaration), keeping nothing: for a
    reader that then takes the values it needs from the bytes (a few times
    faster than a callback per element, whose attributes lxml turns into a
    dict of strings) and reads any other document through :func:`feed`."""
    feed(raw, _Nothing(), fmt)


def feed(raw: bytes, target: Any, fmt: str) -> Any:
    """Parse ``raw`` into ``target`` in chunks; returns ``target.finish()``.

    lxml calls ``target.close()`` even when parsing failed, and an exception
    from it would hide the real one, so final checks live in ``finish()``.
    """
    for bom, name in _OTHER_BOMS.items():
        if raw.startswith(bom):
            raise MalformedReport(fmt, f"the XML is {name}: covworker reads UTF-8 reports")
    if raw.find(_ENTITY_DECL) != -1:
        raise MalformedReport(fmt, "entity declarations are not allowed in a coverage report")
    parser = _parser(target)
    try:
        view = memoryview(raw)
        for start in range(0, len(raw), CHUNK):
            parser.feed(bytes(view[start : start + CHUNK]))
        parser.close()
        return target.finish()
    except ReportError:
        raise
    except Invalid as exc:
        line = element_line(raw, exc.index) if exc.index else None
        raise MalformedReport(fmt, exc.reason, line=line) from None
    except etree.XMLSyntaxError as exc:
        msg = exc.msg or str(exc)
        if "Document is empty" in msg or not raw.strip():
            msg = "the document is empty"
        elif "Invalid bytes in character encoding" in msg or "not proper UTF-8" in msg:
            msg = f"the report is not UTF-8 (covworker reads UTF-8 XML reports): {msg}"
        raise MalformedReport(fmt, f"not well-formed XML: {msg}", line=exc.lineno) from None
    except (etree.LxmlError, UnicodeError, ValueError, TypeError, RecursionError) as exc:
        raise MalformedReport(fmt, f"unreadable XML: {exc}") from None
    except MemoryError:
        raise MalformedReport(fmt, "the XML is too large to parse") from None
