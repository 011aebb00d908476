"""JaCoCo XML (``jacoco:report``, the JaCoCo CLI / report API, Gradle, Maven).

Shape::

    <report name="..."><sessioninfo .../>
      <package name="com/example"><class ...><method ...><counter .../></method></class>
        <sourcefile name="Foo.java"><line nr="3" mi="0" ci="4" mb="1" cb="1"/>...

Only ``<sourcefile>`` lines are read: the file is ``package/sourcefile``
(JaCoCo gives paths relative to the source root, e.g. ``src/main/java``,
which the report does not name). JaCoCo counts instructions, not
executions, so a line with covered instructions has 1 hit, else 0.
Branches are count-only: ``cb`` covered of ``mb + cb``.

gcovr's JaCoCo writer puts no instruction counters (``mi`` / ``ci``) on its
``<line>`` elements at all: such a line's hits are unknown, so it is not a
line record (not a miss); its branches still count, and a covered branch
makes it a hit. Each such line is counted in the report's warnings.
"""

from __future__ import annotations

from app.coverage.formats.cobertura import whole_number
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, Report
from app.coverage.paths import join
from app.coverage.safexml import FileTarget, Invalid, feed

FMT = "JaCoCo XML"


class _Target(FileTarget):
    """lxml target: a ``<sourcefile>`` of a ``<package>`` is a file."""

    fmt = FMT
    root = "report"

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.package: str | None = None
        self.uncounted = 0  # <line>s without mi/ci

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        lines = self.lines  # the hot path: keep it inline and lean
        if lines is None:
            return
        try:  # JaCoCo always writes all five as plain integers
            ln = int(attrib["nr"])
            mi, ci = int(attrib["mi"]), int(attrib["ci"])
            mb, cb = int(attrib["mb"]), int(attrib["cb"])
        except (KeyError, ValueError):
            numbers = self._slow_numbers(attrib)
            if numbers is None:
                self.skip(tag, attrib)
                return
            ln, mi, ci, mb, cb = numbers
        if (mi | ci | mb | cb) < 0 or ln < 1 or ln > self.max_ln:
            self.skip(tag, attrib)  # <line nr="0">: skipped, as Codecov and ReportGenerator do
            return
        if "ci" not in attrib and "mi" not in attrib:
            self.uncounted += 1
            if cb:
                lines[ln] = lines.get(ln, 0) + 1
        else:
            lines[ln] = lines.get(ln, 0) + (1 if ci else 0)
        if mb or cb:
            old = self.branches.get(ln)
            br = Branches(cb, mb + cb)
            self.branches[ln] = br if old is None else old.merged(br)

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "package":
            name = attrib.get("name")
            if name is None:
                raise Invalid("<package> without a name attribute", self.n)
            self.package = name
        elif tag == "sourcefile":
            name = attrib.get("name")
            if not name or not name.strip():
                raise Invalid("<sourcefile> without a name attribute", self.n)
            if self.package is None:
                raise Invalid(f"<sourcefile name={name!r}> outside a <package>", self.n)
            if self.lines is not None:
                raise Invalid("<sourcefile> nested in another <sourcefile>", self.n)
            self.start_file(self.paths(join(self.package, name)))

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "sourcefile":
            self.end_file()
        elif tag == "package":
            self.package = None

    def finish(self) -> Report:
        report = super().finish()
        if self.uncounted:
            report.warnings.append(
                f"{FMT}: {self.uncounted} <line> elements without instruction counters "
                "(mi/ci) were not counted as lines"
            )
        return report

    def _slow_numbers(self, attrib: dict[str, str]) -> tuple[int, int, int, int, int] | None:
        """The numbers of a ``<line>`` missing some; None if one is unreadable."""
        try:
            ln = whole_number(attrib.get("nr"), "line number (nr)")
            mi, ci, mb, cb = (
                whole_number(attrib.get(key, "0"), key) for key in ("mi", "ci", "mb", "cb")
            )
        except ValueError:
            return None
        return ln, mi, ci, mb, cb


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
