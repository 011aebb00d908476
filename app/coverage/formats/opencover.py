"""OpenCover XML (.NET: OpenCover, coverlet ``--format opencover``, AltCover).

Shape::

    <CoverageSession><Modules><Module hash="...">
      <Files><File uid="1" fullPath="C:\\src\\Calc.cs"/></Files>
      <Classes><Class><Methods><Method><FileRef uid="1"/>
        <SequencePoints><SequencePoint vc="4" sl="7" el="7" fileid="1" .../></SequencePoints>
        <BranchPoints><BranchPoint vc="0" sl="9" path="1" offset="12" offsetend="14"
                                   fileid="1"/></BranchPoints>

A sequence point is a statement; it counts on every line from its start
line (``sl``) to its end line (``el``), as Codecov and ReportGenerator read
it, and a line's hits are the largest ``vc`` of the statements on it.
Branch points are identity-known: the branch at IL ``offset`` taking
``path`` is ``oc:<offset>,<offsetend>,<path>`` on line ``sl``. File ids are
looked up in the module that declares them; a point without ``fileid``
uses its method's ``<FileRef>``. Modules that OpenCover skipped
(``skippedDueTo``) and points of no file are not read.
"""

from __future__ import annotations

from app.coverage.formats.cobertura import whole_number
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids
from app.coverage.safexml import Invalid, ReportTarget, feed

FMT = "OpenCover XML"


class _FileData:
    __slots__ = ("all_ids", "covered_ids", "lines")

    def __init__(self) -> None:
        self.lines: dict[int, int] = {}
        self.all_ids: dict[int, set[str]] = {}
        self.covered_ids: dict[int, set[str]] = {}


class _Target(ReportTarget):
    fmt = FMT
    root = "CoverageSession"
    record_tags = frozenset({"SequencePoint", "BranchPoint"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.skipped_module = False
        self.module_files: dict[str, str] = {}  # uid -> repository path
        self.module_data: dict[str | None, _FileData] = {}  # uid -> its file, once seen
        self.method_file: str | None = None
        self.files: dict[str, _FileData] = {}

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        if self.skipped_module:
            return
        if tag == "SequencePoint":  # the hot path: a point of a file already seen
            data = self.module_data.get(attrib.get("fileid") or self.method_file)
            end = attrib.get("el")
            if data is not None and (end is None or end == attrib.get("sl")):
                try:
                    ln, visits = int(attrib["sl"]), int(attrib["vc"])
                except (KeyError, ValueError):
                    ln = visits = -1
                if 0 < ln <= self.max_ln and visits >= 0:
                    if visits > data.lines.get(ln, -1):
                        data.lines[ln] = visits
                    return
        self._point(tag, attrib)

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "Module":
            self.skipped_module = bool(attrib.get("skippedDueTo"))
            self.module_files = {}
            self.module_data = {}
        elif tag == "File" and not self.skipped_module:
            uid, full = attrib.get("uid"), attrib.get("fullPath")
            if not uid or not full or not full.strip():
                raise Invalid("<File> without a uid or a fullPath", self.n)
            self.module_files[uid] = self.paths(full)
            self.module_data.pop(uid, None)
        elif tag == "Method":
            self.method_file = None
        elif tag == "FileRef":
            self.method_file = attrib.get("uid")

    def _point(self, tag: str, attrib: dict[str, str]) -> None:
        uid = attrib.get("fileid") or self.method_file
        if uid is None:
            return
        path = self.module_files.get(uid)
        if path is None:
            if uid == "0":  # compiler-generated code with no source file
                return
            raise Invalid(
                f"<{tag}> names fileid {uid[:20]!r}, which its module does not declare", self.n
            )
        try:  # the hot path: plain integers
            ln, visits = int(attrib["sl"]), int(attrib["vc"])
        except (KeyError, ValueError):
            try:
                ln = whole_number(attrib.get("sl"), "start line (sl)")
                visits = whole_number(attrib.get("vc"), "visit count (vc)")
            except ValueError as exc:
                raise Invalid(f"<{tag}> in {path!r}: {exc}", self.n) from None
        if ln < 1 or ln > self.max_ln:
            if ln == 0 or (ln == 16707566 and tag == "SequencePoint"):  # hidden lines (0xFEEFEE)
                return
            raise Invalid(f"line number {ln} in {path!r} is out of range", self.n)
        if visits < 0:
            raise Invalid(f"negative visit count on line {ln} of {path!r}", self.n)
        data = self.files.get(path)
        if data is None:
            if len(self.files) >= self.limits.max_files:
                raise self.limits.too_many_files(FMT)
            data = self.files[path] = _FileData()
        self.module_data[uid] = data
        if tag == "SequencePoint":
            lines = data.lines
            for line in range(ln, self._end_line(attrib, ln) + 1):
                if visits > lines.get(line, -1):
                    lines[line] = visits
            return
        ident = "oc:{},{},{}".format(
            attrib.get("offset", "")[:20],
            attrib.get("offsetend", "")[:20],
            attrib.get("path", "")[:20],
        )
        data.all_ids.setdefault(ln, set()).add(ident)
        if visits:
            data.covered_ids.setdefault(ln, set()).add(ident)

    def _end_line(self, attrib: dict[str, str], start: int) -> int:
        """A sequence point's last line (``el``): ``start`` when it has none or
        an unreadable one; the lines after ``start`` count against the limit."""
        try:
            end = int(attrib.get("el") or start)
        except ValueError:
            return start
        if end <= start or end > self.max_ln:
            return start
        self.records += end - start
        if self.records > self.max_records:
            raise self.limits.too_many_lines(self.fmt)
        return end

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "Module":
            self.skipped_module = False

    def finish(self) -> Report:
        report = super().finish()
        for path, data in self.files.items():
            report.files[path] = FileCoverage(
                data.lines, branches_of_ids(data.all_ids, data.covered_ids)
            )
        return report


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
