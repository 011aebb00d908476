"""scoverage XML (Scala): the report ``sbt-scoverage`` / ``scoverage-maven``
write (``scoverage.xml``, root ``<scoverage>``, statements as attributes)
and the older statement file Codecov reads (``scoverage.coverage.xml``,
root ``<statements>``, statements as child elements).

Shapes::

    <scoverage statement-count="4" ...><packages><package><classes>
      <class filename="calc/Ops.scala"><methods><method><statements>
        <statement source="/w/src/main/scala/calc/Ops.scala" line="7" start="120"
                   branch="false" invocation-count="3" ignored="false"/>

    <statements><statement><source>/w/src/main/scala/calc/Ops.scala</source>
      <start>120</start><line>7</line><branch>false</branch><count>3</count>
      <ignored>false</ignored></statement></statements>

A statement counts on its ``line``; a line's hits are the largest count of
the statements on it (Codecov takes the larger of two counts of a line
too). A statement scoverage marks ``branch`` (the first statement of an
``if`` / ``else`` arm or a ``case``) is also a branch of its line,
``sc:<start>``, covered when it ran, as scoverage's branch rate counts
them (Codecov writes its count over 2, ``3/2``, instead). ``ignored``
statements are not read. A statement without a source, or with an
unreadable line or count, is skipped and named on the upload.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable
from typing import Any

from app.coverage.detect import HEAD_BYTES, xml_root_name
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids
from app.coverage.safexml import ReportTarget, check, feed

FMT = "scoverage XML"
#: The child elements of an older ``<statement>`` that are read.
_FIELDS = frozenset(
    {"source", "line", "count", "invocation-count", "branch", "ignored", "start", "id"}
)


class _File:
    """One source's statements read so far: its lines and, per line, its branch
    ids and those of them that ran."""

    __slots__ = ("all_ids", "covered", "lines")

    def __init__(self) -> None:
        self.lines: dict[int, int] = {}
        self.all_ids: dict[int, set[str]] = {}
        self.covered: dict[int, set[str]] = {}

    def add(self, ln: int, hits: int, branch: str | None, start: str) -> None:
        lines = self.lines
        if hits > lines.get(ln, -1):
            lines[ln] = hits
        if branch == "true":
            ident = f"sc:{start[:20]}"
            self.all_ids.setdefault(ln, set()).add(ident)
            if hits:
                self.covered.setdefault(ln, set()).add(ident)


class _Statements(ReportTarget):
    """``<scoverage>``: each ``<statement>`` carries its fields as attributes."""

    fmt = FMT
    root = "scoverage"
    record_tags = frozenset({"statement"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.files: dict[str, _File] = {}
        #: The file of a source as written (several spellings may name one file).
        self.file_of: dict[str, _File] = {}

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        """:meth:`ReportTarget.start`, with a statement of a source already met
        read here (the hot path): a call less per statement."""
        if tag != "statement" or self.records >= self.max_records:
            super().start(tag, attrib)
            return
        self.depth += 1
        self.records += 1
        file = self.file_of.get(attrib.get("source"))  # type: ignore[arg-type]
        if file is not None:
            try:
                ln, hits = int(attrib["line"]), int(attrib["invocation-count"])
            except (KeyError, ValueError):
                ln = hits = -1
            if hits >= 0 and 0 < ln <= self.max_ln and attrib.get("ignored") != "true":
                branch = attrib.get("branch")
                if branch == "false":
                    lines = file.lines
                    if hits > lines.get(ln, -1):
                        lines[ln] = hits
                else:
                    file.add(ln, hits, branch, attrib.get("start") or str(self.records))
                return
        self.record(tag, attrib)

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        self.statement(
            attrib.get("source"),
            attrib.get("line"),
            attrib.get("invocation-count"),
            attrib.get("branch"),
            attrib.get("ignored"),
            attrib.get("start"),
        )

    def statement(
        self,
        source: str | None,
        line: str | None,
        count: str | None,
        branch: str | None,
        ignored: str | None,
        start: str | None,
    ) -> None:
        """One statement's fields (strings or None); a bad one is skipped and named."""
        if ignored == "true":
            return
        try:
            ln, hits = int(line), int(count)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            ln = hits = -1
        if not source or not source.strip() or hits < 0 or not 0 < ln <= self.max_ln:
            shown = f"<statement> {(source or '')[-30:]} line {line} count {count}"
            self.report.skipped.add(shown, f"element {self.n}")
            return
        file = self.file_of.get(source)
        if file is None:
            if len(self.file_of) >= self.limits.max_files:
                raise self.limits.too_many_files(FMT)
            path = self.paths(source)
            file = self.file_of[source] = self.files.setdefault(path, _File())
        file.add(ln, hits, branch, start or str(self.records))

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        pass

    def end(self, tag: str) -> None:
        self.depth -= 1

    def finish(self) -> Report:
        report = super().finish()
        for path, file in self.files.items():
            report.files[path] = FileCoverage(
                file.lines, branches_of_ids(file.all_ids, file.covered)
            )
        return report


class _OlderStatements(_Statements):
    """``<statements>``: each ``<statement>``'s fields are child elements."""

    root = "statements"

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.fields: dict[str, str] | None = None
        self.field: str | None = None

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        self.fields = {}

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if self.fields is not None and tag in _FIELDS and self.depth == 3:
            self.field = tag
            self.fields[tag] = ""

    def data(self, text: str) -> None:
        if self.field is not None and self.fields is not None:
            value = self.fields[self.field]
            if len(value) < 4096:
                self.fields[self.field] = value + text

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == self.field:
            self.field = None
        elif tag == "statement" and self.fields is not None:
            f, self.fields = {k: v.strip() for k, v in self.fields.items()}, None
            self.statement(
                f.get("source"),
                f.get("line"),
                f.get("count", f.get("invocation-count")),
                f.get("branch"),
                f.get("ignored"),
                f.get("start") or f.get("id"),
            )


#: The statement attributes the byte reader takes, in the order it takes them.
_READ = (b"source", b"start", b"line", b"branch", b"invocation-count", b"ignored")
#: The first statement's attributes: each double-quoted, no spaces around ``=``.
_FIRST = re.compile(rb'<statement((?:\s+[\w:.-]+="[^"<]*"){1,32})\s*/?>')
_NAME = re.compile(rb'\s+([\w:.-]+)="')


#: What a value may hold that lxml would give otherwise: a reference, or a
#: tab or line break (attribute values are normalised to spaces).
_UNPLAIN = re.compile(rb"[&\t\n\r]")


@functools.lru_cache(maxsize=8)
def _layout(
    names: tuple[bytes, ...],
) -> tuple[re.Pattern[bytes], Callable[..., Any] | None] | None:
    """A pattern matching a statement whose attributes are exactly ``names``
    in this order (a writer writes every statement alike), capturing those
    read, and the getter putting them in :data:`_READ`'s order; None when one
    of them is missing. Literals and ``[^"<]*`` only: linear in the bytes."""
    if set(_READ) - set(names) or len(set(names)) != len(names):
        return None
    parts = [
        rb"\s+" + re.escape(name) + (rb'="([^"<]*)"' if name in _READ else rb'="[^"<]*"')
        for name in names
    ]
    taken = [name for name in names if name in _READ]
    pattern = re.compile(b"<statement" + b"".join(parts) + rb"\s*/?>")
    if taken == list(_READ):
        return pattern, None
    return pattern, operator.itemgetter(*(taken.index(name) for name in _READ))


def _read_plain(raw: bytes, limits: ParseLimits, roots: tuple[str, ...]) -> Report | None:
    """The statements of a checked ``<scoverage>`` document read from its bytes
    (no dict of strings per element, which is most of the callback path's
    cost), or None where this reading could differ from :class:`_Statements`:
    a statement written another way, a comment, CDATA, DOCTYPE or processing
    instruction (which could hold markup or declare attributes),
    an entity or a whitespace character a value would be normalised from, a
    statement that would be skipped, or a limit reached. The callback path
    then reads the document and says what it says."""
    declared = raw.lstrip().startswith(b"<?xml")
    if b"<!" in raw or raw.count(b"<?") > declared:
        return None
    first = _FIRST.search(raw)
    layout = first and _layout(tuple(_NAME.findall(first.group(1))))
    if not layout:
        return None
    pattern, in_order = layout
    rows = pattern.findall(raw)
    # Every element starting <statement is one of them: none written otherwise.
    if len(rows) != raw.count(b"<statement") - raw.count(b"<statements"):
        return None
    if len(rows) > limits.max_lines:
        return None
    target = _Statements(limits, roots)
    seen: set[bytes] = set()
    for source, group in itertools.groupby(rows if in_order is None else map(in_order, rows), _SOURCE):
        if source not in seen:
            if _UNPLAIN.search(source) or not source.strip() or len(seen) >= limits.max_files:
                return None
            seen.add(source)
        if not _read_file(target, source.decode(), list(group)):
            return None
    target.records = len(rows)
    target.others = 1
    return target.finish()


_SOURCE = operator.itemgetter(0)


def _read_file(target: _Statements, source: str, rows: list[tuple[bytes, ...]]) -> bool:
    """A run of one source's statements into its file; False where the
    callback path could read them otherwise (see :func:`_read_plain`)."""
    _, starts, line_col, branch_col, count_col, ignored_col = zip(*rows, strict=True)
    if ignored_col.count(b"false") != len(rows):
        kept = [row for row in rows if row[5] != b"true"]
        if not kept:
            return True
        _, starts, line_col, branch_col, count_col, ignored_col = zip(*kept, strict=True)
    try:
        lns, hits = list(map(int, line_col)), list(map(int, count_col))
    except ValueError:
        return False
    if min(hits) < 0 or min(lns) < 1 or max(lns) > target.max_ln:
        return False
    path = target.paths(source)
    file = target.files.get(path)
    if file is None:
        file = target.files[path] = _File()
    lines = file.lines
    if not lines and len(set(lns)) == len(lns):
        lines.update(zip(lns, hits))
    else:
        for ln, n in zip(lns, hits):
            if n > lines.get(ln, -1):
                lines[ln] = n
    if branch_col.count(b"false") == len(branch_col):
        return True
    for i, branch in enumerate(branch_col):
        if branch == b"false":
            continue
        if branch != b"true" or _UNPLAIN.search(starts[i]) or not starts[i]:
            return False
        file.add(lns[i], hits[i], "true", starts[i].decode())
    return True


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    root = xml_root_name(raw[:HEAD_BYTES])
    older = root == b"statements"
    if root == b"scoverage":
        check(raw, FMT)
        plain = _read_plain(raw, limits, roots)
        if plain is not None:
            return plain
    target = (_OlderStatements if older else _Statements)(limits, roots)
    report: Report = feed(raw, target, FMT)
    return report
