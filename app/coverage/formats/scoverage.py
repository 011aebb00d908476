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

from app.coverage.detect import HEAD_BYTES, xml_root_name
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids
from app.coverage.safexml import ReportTarget, feed

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


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    older = xml_root_name(raw[:HEAD_BYTES]) == b"statements"
    target = (_OlderStatements if older else _Statements)(limits, roots)
    report: Report = feed(raw, target, FMT)
    return report
