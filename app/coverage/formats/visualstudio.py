"""Visual Studio coverage XML, both of its shapes.

``dotnet-coverage merge -f xml`` / ``CodeCoverage.exe analyze /output``
(root ``<results>``)::

    <results><modules><module name="calc.dll" lines_covered="3"
        lines_partially_covered="1" lines_not_covered="2" ...>
      <functions><function name="Add" ...><ranges>
        <range source_id="0" covered="yes" start_line="12" end_line="12" .../>
      </ranges></function></functions>
      <source_files><source_file id="0" path="C:\\src\\Calc.cs"/></source_files>
    </module></modules></results>

and the older ``.coveragexml`` export (root ``<CoverageDSPriv>``), whose
``<Lines>`` hold ``LnStart``, ``LnEnd``, ``Coverage`` (0 covered, 1 partly,
2 not covered) and ``SourceFileID``, named by ``<SourceFileNames>``.

The rules (Codecov's worker, ``services/report/languages/vb.py`` and
``vb2.py``, and Visual Studio's own meaning where Codecov's differs):

- a range marks every line from its start to its end line: covered 1 hit
  (Visual Studio counts no runs), not covered 0, partly covered a partial;
- a line that ranges both covered and not covered touch is partly covered,
  as Visual Studio's own ``lines_partially_covered`` counts it (Codecov
  takes the covered one);
- ``\\`` in a path is ``/``; a file is named by its module's
  ``source_file`` (the ids are the module's own);
- a range with unreadable lines or an unknown ``covered`` value, or naming
  no source file, is skipped and named.
"""

from __future__ import annotations

from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, Report
from app.coverage.safexml import ReportTarget, feed

FMT = "Visual Studio coverage XML"
_RESULTS = {"yes": 0, "no": 1, "partial": 2}  # ran, did not, partly
_DSPRIV = {"0": 0, "2": 1, "1": 2}
_FIELDS = frozenset({"LnStart", "LnEnd", "Coverage", "SourceFileID", "SourceFileName"})

Range = tuple[int, int, int, str]  # first line, last line, state, the record for errors


class _Lines(ReportTarget):
    """What both shapes share: ranges by source id, and files named by id."""

    fmt = FMT

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.ranges: dict[str, list[Range]] = {}
        self.names: dict[str, str] = {}

    def add_range(self, sid: str, first: str, last: str, state: int | None, shown: str) -> None:
        try:
            a, b = int(first), int(last)
        except ValueError:
            a = b = 0
        if state is None or not 0 < a <= b <= self.max_ln:
            self.report.skipped.add(shown, f"element {self.n}")
            return
        self.records += b - a  # the lines a range adds count against the limit
        if self.records > self.max_records:
            raise self.limits.too_many_lines(self.fmt)
        self.ranges.setdefault(sid, []).append((a, b, state, shown))

    def flush(self) -> None:
        """The ranges read so far into their files (a module, or the document, ended)."""
        for sid, ranges in self.ranges.items():
            name = self.names.get(sid)
            if name is None or not name.strip():
                for _, _, _, shown in ranges[:5]:
                    self.report.skipped.add(shown, f"source id {sid[:20]!r} names no file")
                self.report.skipped.count += max(len(ranges) - 5, 0)
                continue
            states: dict[int, int] = {}
            for a, b, state, _ in ranges:
                for ln in range(a, b + 1):
                    states[ln] = states.get(ln, 0) | (1 << state)
            lines = {ln: 1 if bits & 0b101 else 0 for ln, bits in states.items()}
            branches = {
                ln: Branches(1, 2)
                for ln, bits in states.items()
                if bits & 0b100 or bits & 0b011 == 0b011  # partly, or run and not run
            }
            self.add_file(self.paths(name.replace("\\", "/")), lines, branches)
        self.ranges, self.names = {}, {}

    def finish(self) -> Report:
        self.flush()
        return super().finish()

    def end(self, tag: str) -> None:
        self.depth -= 1


class _Results(_Lines):
    root = "results"
    record_tags = frozenset({"range"})

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        shown = " ".join(f'{k}="{v}"' for k, v in list(attrib.items())[:5])
        self.add_range(
            attrib.get("source_id", ""), attrib.get("start_line", ""), attrib.get("end_line", ""),
            _RESULTS.get(attrib.get("covered", "")), f"<range {shown}>",
        )  # fmt: skip

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "source_file":
            self.names[attrib.get("id", "")] = attrib.get("path", "")

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "module":
            self.flush()

    def data(self, text: str) -> None:
        """Text is never meaningful in ``<results>``."""


class _DSPriv(_Lines):
    root = "CoverageDSPriv"
    record_tags = frozenset({"Lines"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.fields: dict[str, str] | None = None
        self.field: str | None = None

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        self.fields = {}

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "SourceFileNames":
            self.fields = {}
        elif self.fields is not None and tag in _FIELDS:
            self.field = tag
            self.fields[tag] = ""

    def data(self, text: str) -> None:
        if self.field is not None and self.fields is not None:
            self.fields[self.field] += text

    def end(self, tag: str) -> None:
        self.depth -= 1
        fields = self.fields
        if tag in _FIELDS:
            self.field = None
        elif fields is None:
            return
        elif tag == "Lines":
            shown = " ".join(f"{k}={v.strip()[:20]}" for k, v in fields.items())
            self.add_range(
                fields.get("SourceFileID", "").strip(), fields.get("LnStart", ""),
                fields.get("LnEnd", ""), _DSPRIV.get(fields.get("Coverage", "").strip()),
                f"<Lines {shown}>",
            )  # fmt: skip
            self.fields = None
        elif tag == "SourceFileNames":
            self.names[fields.get("SourceFileID", "").strip()] = fields.get(
                "SourceFileName", ""
            ).strip()
            self.fields = None


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    head = raw[:4096]
    target = _DSPriv(limits, roots) if b"<CoverageDSPriv" in head else _Results(limits, roots)
    report: Report = feed(raw, target, FMT)
    return report
