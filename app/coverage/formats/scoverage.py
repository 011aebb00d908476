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


class _Files:
    """The statements read so far, per file."""

    def __init__(self) -> None:
        self.lines: dict[str, dict[int, int]] = {}
        self.all_ids: dict[str, dict[int, set[str]]] = {}
        self.covered: dict[str, dict[int, set[str]]] = {}


class _Statements(ReportTarget):
    """``<scoverage>``: each ``<statement>`` carries its fields as attributes."""

    fmt = FMT
    root = "scoverage"
    record_tags = frozenset({"statement"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.files = _Files()
        self.path_of: dict[str, str] = {}

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        path = self.path_of.get(attrib.get("source", ""))
        if path is not None and attrib.get("branch") == "false":  # the hot path
            try:
                ln, hits = int(attrib["line"]), int(attrib["invocation-count"])
            except (KeyError, ValueError):
                ln = hits = -1
            if hits >= 0 and 0 < ln <= self.max_ln and attrib.get("ignored") != "true":
                lines = self.files.lines[path]
                if hits > lines.get(ln, -1):
                    lines[ln] = hits
                return
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
        path = self.path_of.get(source)
        if path is None:
            if len(self.path_of) >= self.limits.max_files:
                raise self.limits.too_many_files(FMT)
            path = self.path_of[source] = self.paths(source)
        files = self.files
        lines = files.lines.setdefault(path, {})
        if hits > lines.get(ln, -1):
            lines[ln] = hits
        if branch == "true":
            ident = f"sc:{(start or str(self.records))[:20]}"
            files.all_ids.setdefault(path, {}).setdefault(ln, set()).add(ident)
            if hits:
                files.covered.setdefault(path, {}).setdefault(ln, set()).add(ident)

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        pass

    def end(self, tag: str) -> None:
        self.depth -= 1

    def finish(self) -> Report:
        report = super().finish()
        files = self.files
        for path, lines in files.lines.items():
            report.files[path] = FileCoverage(
                lines, branches_of_ids(files.all_ids.get(path, {}), files.covered.get(path, {}))
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
