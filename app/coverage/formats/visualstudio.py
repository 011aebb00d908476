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
- a range with unreadable lines or an unknown ``covered`` value is skipped
  and named, and so are the lines of a source id that names no file.
"""

from __future__ import annotations

from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, Report
from app.coverage.safexml import ReportTarget, feed

FMT = "Visual Studio coverage XML"
_RESULTS = {"yes": 1, "no": 2, "partial": 4}  # ran, did not, partly: bits of a line's state
_DSPRIV = {"0": 1, "2": 2, "1": 4}
_FIELDS = frozenset({"LnStart", "LnEnd", "Coverage", "SourceFileID", "SourceFileName"})


class _Lines(ReportTarget):
    """What both shapes share: per source id, each line's state (the bits of
    every range touching it), and files named by id."""

    fmt = FMT
    record_name: str

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.states: dict[str, dict[int, int]] = {}
        self.names: dict[str, str] = {}

    def add_range(
        self, sid: str, first: str, last: str, bit: int | None, record: dict[str, str]
    ) -> None:
        try:
            a, b = int(first), int(last)
        except ValueError:
            a = b = 0
        if bit is None or not 0 < a <= b <= self.max_ln:
            self.skip(self.record_name, record)
            return
        states = self.states.get(sid)
        if states is None:
            states = self.states[sid] = {}
        if a == b:
            states[a] = states.get(a, 0) | bit
            return
        self.records += b - a  # the lines a range adds count against the limit
        if self.records > self.max_records:
            raise self.limits.too_many_lines(self.fmt)
        for ln in range(a, b + 1):
            states[ln] = states.get(ln, 0) | bit

    def flush(self) -> None:
        """The lines read so far into their files (a module, or the document, ended)."""
        for sid, states in self.states.items():
            name = self.names.get(sid)
            if name is None or not name.strip():
                skipped = self.report.skipped
                for ln in list(states)[:5]:
                    skipped.add(f"line {ln} of source id {sid[:20]!r}", "it names no file")
                skipped.count += max(len(states) - 5, 0)
                continue
            lines = {ln: 1 if bits & 0b101 else 0 for ln, bits in states.items()}
            branches = {
                ln: _PARTIAL
                for ln, bits in states.items()
                if bits & 0b100 or bits & 0b011 == 0b011  # partly, or run and not run
            }
            self.add_file(self.paths(name.replace("\\", "/")), lines, branches)
        self.states, self.names = {}, {}

    def finish(self) -> Report:
        self.flush()
        return super().finish()

    def end(self, tag: str) -> None:
        self.depth -= 1


_PARTIAL = Branches(1, 2)


class _Results(_Lines):
    root = "results"
    record_tags = frozenset({"range"})
    record_name = "range"

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        get = attrib.get
        try:  # the hot path: a range of one line
            ln = int(attrib["start_line"])
            if attrib["end_line"] == attrib["start_line"] and 0 < ln <= self.max_ln:
                bit = _RESULTS[attrib["covered"]]
                states = self.states.get(attrib["source_id"])
                if states is not None:
                    states[ln] = states.get(ln, 0) | bit
                    return
        except (KeyError, ValueError):
            pass
        self.add_range(get("source_id", ""), get("start_line", ""), get("end_line", ""),
                       _RESULTS.get(get("covered", "")), attrib)  # fmt: skip

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
    record_name = "Lines"

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
            self.add_range(
                fields.get("SourceFileID", "").strip(), fields.get("LnStart", ""),
                fields.get("LnEnd", ""), _DSPRIV.get(fields.get("Coverage", "").strip()),
                {k: v.strip()[:20] for k, v in fields.items()},
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
