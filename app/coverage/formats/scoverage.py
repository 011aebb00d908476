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

A ``<scoverage>`` document, once :func:`~app.coverage.safexml.check` has
refused what :func:`~app.coverage.safexml.feed` would, is read from its
bytes (:func:`_read_plain`): a pattern made from the first statement's
attributes takes every statement's values, a column at a time. Wherever
that reading could differ from lxml's (a statement written otherwise, a
comment, CDATA, DOCTYPE or processing instruction, a reference or line
break in a value read, a statement that would be skipped, a limit) it
gives up and the callback path reads the document: the report, skipped
statements and errors are the same either way (docs/formats.md).
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

from app.coverage.detect import HEAD_BYTES, xml_root_name
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report, branches_of_ids
from app.coverage.safexml import ReportTarget, check, feed

FMT = "scoverage XML"
#: A branch statement's id: this prefix and the first characters of its start.
BRANCH_PREFIX, START_CHARS = "sc:", 20
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
            ident = BRANCH_PREFIX + start[:START_CHARS]
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


#: The statement attributes the byte reader takes, in the order it gives them.
_READ = (b"source", b"start", b"line", b"invocation-count", b"branch", b"ignored")
#: Those whose only plain values are ``false`` and ``true``: captured only when
#: ``true`` (an unmatched group is None, no object made).
_FLAGS = frozenset({b"branch", b"ignored"})
#: The first statement: its attributes (each double-quoted, no spaces around
#: ``=``) and how its start tag ends.
_FIRST = re.compile(rb'<statement((?:\s+[\w:.-]+="[^"<]*"){1,32})(\s*/?>)')
_ATTR = re.compile(rb'(\s+)([\w:.-]+)="')
#: What a value may hold that lxml would give otherwise: a reference, or a
#: tab or line break (attribute values are normalised to spaces).
_UNPLAIN = re.compile(rb"[&\t\n\r]")
#: A single-quoted attribute (a double quote inside it would fool the reader).
_SINGLE_QUOTED = re.compile(rb"=\s*'")
_DECLARATION = re.compile(rb"<\?xml\s")


@functools.lru_cache(maxsize=8)
def _layout(
    head: bytes, tail: bytes
) -> tuple[re.Pattern[bytes], Callable[[list[Any]], list[Any]]] | None:
    """A pattern matching a statement written exactly as the first one was
    (``head`` its attributes, ``tail`` the end of its start tag: a writer
    writes every statement alike), capturing those read, and what puts the
    columns of its captures in :data:`_READ`'s order; None when one of them is
    missing. Literals and ``[^"]*`` only: linear in the bytes."""
    spaces, names = zip(*_ATTR.findall(head), strict=True)
    if set(_READ) - set(names) or len(set(names)) != len(names):
        return None
    pattern = b"<statement"
    for space, name in zip(spaces, names, strict=True):
        pattern += re.escape(space + name + b'="')
        if name in _FLAGS:
            pattern += b'(?:false|(true))"'
        elif name in _READ:
            pattern += b'([^"]*)"'
        else:
            pattern += b'[^"]*"'
    taken = [name for name in names if name in _READ]
    return re.compile(pattern + re.escape(tail)), operator.itemgetter(
        *(taken.index(name) for name in _READ)
    )


def _read_plain(raw: bytes, limits: ParseLimits, roots: tuple[str, ...]) -> Report | None:
    """The statements of a checked ``<scoverage>`` document read from its bytes
    (no dict of strings per element, which is most of the callback path's
    cost), or None where this reading could differ from :class:`_Statements`:
    a statement written another way, a single-quoted attribute, a comment,
    CDATA, DOCTYPE or processing instruction (which could hold markup or
    declare attributes), an entity or a whitespace character a value would be
    normalised from, a statement that would be skipped, or a limit reached.
    The callback path then reads the document and says what it says."""
    declared = _DECLARATION.match(raw) is not None
    if b"!" in raw and b"<!" in raw:
        return None
    body = raw.find(b"?>") + 2 if declared else 0
    if raw.find(b"?", body) != -1 and raw.find(b"<?", body) != -1:
        return None
    if b"'" in raw and _SINGLE_QUOTED.search(raw, body):
        return None
    first = _FIRST.search(raw)
    layout = first and _layout(first.group(1), first.group(2))
    if not layout:
        return None
    pattern, in_order = layout
    # One flat list, the text between statements and each statement's
    # captures in turn, taken a column at a time: a tuple per statement
    # would double the cost, most of it the collector's.
    parts = pattern.split(raw)
    width = pattern.groups + 1
    found = len(parts) // width
    # Every element starting <statement is one of them: none written otherwise.
    if found != raw.count(b"<statement") - raw.count(b"<statements"):
        return None
    if found > limits.max_lines:
        return None
    sources, starts, line_col, count_col, branches, ignored = in_order(
        [parts[column::width] for column in range(1, width)]
    )
    if b"true" in ignored:
        keep = list(map(operator.not_, ignored))
        sources, starts, line_col, count_col, branches = (
            tuple(itertools.compress(col, keep))
            for col in (sources, starts, line_col, count_col, branches)
        )
    target = _Statements(limits, roots)
    target.records = found
    target.others = 1
    if not sources:
        return target.finish()
    try:
        lns, hits = _ints(line_col), _ints(count_col)
    except ValueError:
        return None
    if min(hits) < 0 or min(lns) < 1 or max(lns) > target.max_ln:
        return None
    file_of: dict[bytes, _File] = {}
    at = 0
    for source, run in itertools.groupby(sources):
        end = at + len(list(run))
        file = file_of.get(source)
        if file is None:
            if _UNPLAIN.search(source) or not source.strip() or len(file_of) >= limits.max_files:
                return None
            path = target.paths(source.decode())
            file = file_of[source] = target.files.setdefault(path, _File())
        _add_lines(file.lines, lns[at:end], hits[at:end])
        at = end
    report = target.report
    made = _branches(file_of, sources, lns, hits, starts, branches) if b"true" in branches else {}
    if made is None:
        return None
    for path, file in target.files.items():
        report.files[path] = FileCoverage(file.lines, made.get(file, {}))
    return report


def _branches(
    file_of: dict[bytes, _File],
    sources: Sequence[bytes],
    lns: list[int],
    hits: list[int],
    starts: Sequence[bytes],
    flags: Sequence[bytes | None],
) -> dict[_File, dict[int, Branches]] | None:
    """Per file, the branches of the statements whose flag is set (``true``),
    ``sc:<start>`` each, made a line at a time; None where a start would read
    otherwise (empty, a reference, a tab or line break)."""
    b_sources = list(itertools.compress(sources, flags))
    b_lns = list(itertools.compress(lns, flags))
    b_hits = list(itertools.compress(hits, flags))
    b_starts = list(itertools.compress(starts, flags))
    joined = b'"'.join(b_starts)  # a quote is in no value: one search, one decode
    if b"" in b_starts or _UNPLAIN.search(joined):
        return None
    texts = joined.decode().split('"')
    if max(map(len, texts)) > START_CHARS:
        texts = [text[:START_CHARS] for text in texts]
    idents = list(map(BRANCH_PREFIX.__add__, texts))
    made: dict[_File, dict[int, Branches]] = {}
    at = 0
    for (source, ln), run in itertools.groupby(zip(b_sources, b_lns, strict=True)):
        end = at + len(list(run))
        ids = frozenset(idents[at:end])
        covered = frozenset(itertools.compress(idents[at:end], b_hits[at:end]))
        file = file_of[source]
        lines = made.get(file)
        if lines is None:
            lines = made[file] = {}
        old = lines.get(ln)
        if old is not None:  # the line's statements met again further on
            assert old.all_ids is not None and old.covered_ids is not None
            ids, covered = ids | old.all_ids, covered | old.covered_ids
        lines[ln] = Branches.of_one_scheme(covered, ids)
        at = end
    return made


def _ints(values: Sequence[bytes]) -> list[int]:
    """``values`` as numbers, each distinct one converted once (a writer
    repeats a few counts and line numbers many times)."""
    number = {value: int(value) for value in set(values)}
    return list(map(number.__getitem__, values))


def _add_lines(lines: dict[int, int], lns: list[int], hits: list[int]) -> None:
    """A run of statements' lines into ``lines``: a line's hits the largest of
    its statements' counts, lines in the order they first come."""
    new = dict(zip(lns, hits, strict=True))  # each line where it first came
    if len(new) != len(lns):
        # Several statements on a line: the last one's count is kept, so
        # those counting more than it are taken again, only they in Python.
        above = map(operator.gt, hits, map(new.__getitem__, lns))
        for ln, n in itertools.compress(zip(lns, hits, strict=True), above):
            if n > new[ln]:
                new[ln] = n
    if not lines:
        lines.update(new)
        return
    for ln, n in new.items():
        if n > lines.get(ln, -1):
            lines[ln] = n


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
