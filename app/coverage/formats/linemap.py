"""What the formats that give a line's hits and nothing more share (Flow,
Codecov's v1 JSON, Salesforce, GAP, Elm, dlst, Mono, Visual Studio):
files by normalised path, a line met twice keeps its largest count (as
Codecov reads a line a report names twice), each record checked and counted
against the limits, a bad one skipped and named (``app.coverage.skipped``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.paths import PathNormaliser
from app.errors import MalformedReport

#: What reads a record ``LineMap.counts`` does not keep itself: ``(line, hits)``.
Other = Callable[[object, object], object]


class LineMap:
    """Per file, per line: the largest count any record gave it (and, for the
    formats that mark a line partly run, a count-only partial)."""

    __slots__ = ("fmt", "limits", "max_ln", "normalise", "records", "report")

    def __init__(self, fmt: str, limits: ParseLimits, roots: tuple[str, ...] = ()) -> None:
        self.fmt = fmt
        self.limits = limits
        self.max_ln = limits.max_line_number
        self.normalise = PathNormaliser(roots)
        self.report = Report()
        self.records = 0

    def file(self, name: str) -> FileCoverage:
        """The coverage of the file ``name`` (normalised; a path met again is the same file)."""
        path = self.normalise(name)
        files = self.report.files
        fc = files.get(path)
        if fc is None:
            if len(files) >= self.limits.max_files:
                raise self.limits.too_many_files(self.fmt)
            fc = files[path] = FileCoverage()
        return fc

    def count(self, records: int = 1) -> None:
        """``records`` line records more, against the limit."""
        self.records += records
        if self.records > self.limits.max_lines:
            raise self.limits.too_many_lines(self.fmt)

    def hit(self, fc: FileCoverage, ln: object, hits: object, record: object, where: str) -> bool:
        """Line ``ln`` of ``fc`` ran ``hits`` times; a line number or count that
        is not a whole number in range skips ``record`` (named by ``where``)."""
        self.count()
        if type(ln) is not int or type(hits) is not int or not 0 < ln <= self.max_ln or hits < 0:
            self.report.skipped.add(str(record), where)
            return False
        lines = fc.lines
        if hits > lines.get(ln, -1):
            lines[ln] = hits
        return True

    def counts(
        self, fc: FileCoverage, items: Iterable[tuple[object, object]], other: Other
    ) -> None:
        """Each ``(line, hits)`` of ``items`` for ``fc``. A whole count of 0
        or more on a line number in range, given plainly (an int, or a string
        of at most 20 ASCII digits), nearly every record of a big report, is
        kept here without naming it; ``other(line, hits)`` reads or skips and
        names every other record (``hit``), so the result is the same as
        reading each through ``hit``, without two strings built per record
        (BENCHMARKS.md, "Big reports parsed faster")."""
        lines, max_ln, kept = fc.lines, self.max_ln, 0
        for key, hits in items:
            if type(key) is int:
                ln = key
            elif type(key) is str and key.isdigit() and key.isascii() and len(key) <= 20:
                ln = int(key)
            else:
                ln = 0
            if 0 < ln <= max_ln and type(hits) is int and hits >= 0:
                kept += 1
                if hits > lines.get(ln, -1):
                    lines[ln] = hits
            else:
                other(key, hits)
        self.count(kept)

    def partial(self, fc: FileCoverage, ln: int) -> None:
        """Line ``ln`` of ``fc`` ran in part (the tool says so, giving no count
        of what did not): 1 of 2, count-only, so it is a partial line."""
        br = Branches(1, 2)
        old = fc.branches.get(ln)
        fc.branches[ln] = br if old is None else old.merged(br)
        if fc.lines.get(ln, 0) < 1:
            fc.lines[ln] = 1

    def done(self) -> Report:
        """The report; refused when every record was skipped."""
        report = self.report
        report.files = {p: fc for p, fc in report.files.items() if fc.lines}
        if report.skipped and not report.files:
            raise MalformedReport(self.fmt, f"no record could be read; {report.skipped.summary()}")
        return report


def whole(value: object) -> int | None:
    """An int, or a string of one (``"12"``); None otherwise (not a bool)."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] == "-" else text
        if len(text) <= 20 and digits.isascii() and digits.isdigit():
            return int(text)
    return None
