"""dotCover's detailed XML report (``dotCover cover ... --ReportType=DetailedXML``,
JetBrains' ``Root`` report), Codecov's "jetbrainsxml".

Shape::

    <Root CoveredStatements="3" TotalStatements="4" CoveragePercent="75"
          ReportType="DetailedXml" DotCoverVersion="2023.3">
      <FileIndices><File Index="1" Name="C:\\src\\Calc\\Ops.cs"/></FileIndices>
      <Assembly Name="Calc"><Namespace Name="Calc"><Type Name="Ops">
        <Method Name="Sign(int):int">
          <Statement FileIndex="1" Line="7" Column="9" EndLine="9" EndColumn="10"
                     Covered="True"/>

A statement counts on every line from ``Line`` to ``EndLine``, 1 hit if
covered, else 0; a line several statements touch is covered if any of them
is, as ReportGenerator reads dotCover (Codecov marks only a statement's
first line). dotCover records no visit counts, only ``Covered``. A
statement of a file the report does not index, or with an unreadable line
or ``Covered``, is skipped and named on the upload.
"""

from __future__ import annotations

from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.coverage.safexml import Invalid, ReportTarget, feed

FMT = "dotCover XML"
_COVERED = {"True": 1, "False": 0, "true": 1, "false": 0}


class _Target(ReportTarget):
    fmt = FMT
    root = "Root"
    record_tags = frozenset({"Statement"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.index: dict[str, dict[int, int]] = {}  # FileIndex -> its lines
        self.paths_of: dict[str, str] = {}

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        lines = self.index.get(attrib.get("FileIndex", ""))
        covered = _COVERED.get(attrib.get("Covered", ""))
        try:
            start = int(attrib["Line"])
        except (KeyError, ValueError):
            start = -1
        if lines is None or covered is None or not 0 < start <= self.max_ln:
            self.skip(tag, attrib)
            return
        end = attrib.get("EndLine")
        last = start
        if end is not None and end != attrib["Line"]:
            try:
                last = int(end)
            except ValueError:
                last = start
            if last <= start or last > self.max_ln:
                last = start
            self.records += last - start  # the lines a span adds count against the limit
            if self.records > self.max_records:
                raise self.limits.too_many_lines(FMT)
        for ln in range(start, last + 1):
            if covered > lines.get(ln, -1):
                lines[ln] = covered

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag != "File":
            return
        index, name = attrib.get("Index"), attrib.get("Name")
        if not index or not name or not name.strip():
            raise Invalid("<File> without an Index or a Name", self.n)
        if index not in self.index:
            if len(self.index) >= self.limits.max_files:
                raise self.limits.too_many_files(FMT)
            self.index[index] = {}
            self.paths_of[index] = self.paths(name)

    def end(self, tag: str) -> None:
        self.depth -= 1

    def finish(self) -> Report:
        report = super().finish()
        for index, lines in self.index.items():  # a file without statements too
            path = self.paths_of[index]
            mine = report.files.get(path)
            if mine is None:
                report.files[path] = FileCoverage(lines)
            else:  # two indices of one path: a line covered by either is
                for ln, hits in lines.items():
                    mine.lines[ln] = max(hits, mine.lines.get(ln, 0))
        return report


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
