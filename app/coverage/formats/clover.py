"""Clover XML (PHPUnit ``--coverage-clover``, Istanbul's ``clover`` reporter
in nyc / Jest, OpenClover).

Shape::

    <coverage generated="..." clover="3.2.0"><project name="...">
      <package name="..."><file name="a.php" path="/abs/a.php">
        <line num="3" type="method" name="f" count="2"/>
        <line num="4" type="stmt" count="2"/>
        <line num="5" type="cond" count="2" truecount="1" falsecount="1"/>

It shares its ``<coverage>`` root with Cobertura; ``detect.py`` tells them
apart by the ``<project>`` element (and the ``clover`` attribute).
``<file>`` elements sit in a ``<package>`` or directly in ``<project>``;
the file is its ``path`` attribute, else its ``name``. ``<testproject>``
(OpenClover's coverage of the tests themselves) is skipped.

Every ``<line>`` is a line record with ``count`` hits (method lines too, as
Codecov reads them). Condition lines are count-only branches, read by which
writer wrote them: Istanbul writes ``count`` on a ``cond`` line and puts
the number of branches covered / not covered in ``truecount`` /
``falsecount``; OpenClover writes no ``count`` there and puts how often the
condition was true / false, so such a line has 2 branches, one covered per
non-zero side (and ``truecount + falsecount`` hits).
"""

from __future__ import annotations

from app.coverage.formats.cobertura import whole_number
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, Report
from app.coverage.safexml import FileTarget, Invalid, feed

FMT = "Clover XML"


class _Target(FileTarget):
    """lxml target: a ``<file>`` outside ``<testproject>`` is a file."""

    fmt = FMT
    root = "coverage"

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.in_test_project = 0

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "testproject":
            self.in_test_project += 1
        elif tag == "file" and not self.in_test_project:
            if self.lines is not None:
                raise Invalid("<file> nested in another <file>", self.n)
            name = attrib.get("path") or attrib.get("name")
            if not name or not name.strip():
                raise Invalid("<file> without a path or name attribute", self.n)
            self.start_file(self.paths(name))

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        lines = self.lines
        if lines is None:  # outside a <file>, or in OpenClover's <testproject>
            return
        if attrib.get("type") == "stmt":  # the hot path: a plain statement line
            try:
                num, hits = int(attrib["num"]), int(attrib["count"])
            except (KeyError, ValueError):
                pass
            else:
                if 0 < num <= self.max_ln and hits >= 0:
                    if hits > lines.get(num, -1):
                        lines[num] = hits
                    return
        try:
            ln = whole_number(attrib.get("num"), "line number (num)")
            kind = attrib.get("type", "stmt")
            count_text = attrib.get("count")
            count = whole_number(count_text, "count") if count_text is not None else None
            if kind == "cond":
                yes = whole_number(attrib.get("truecount", "0"), "truecount")
                no = whole_number(attrib.get("falsecount", "0"), "falsecount")
            else:
                yes = no = 0
        except ValueError as exc:
            raise Invalid(f"<line> in {self.path!r}: {exc}", self.n) from None
        if ln < 1 or ln > self.max_ln:
            raise Invalid(f"line number {ln} in {self.path!r} is out of range", self.n)
        if (count or 0) < 0 or yes < 0 or no < 0:
            raise Invalid(f"negative count on line {ln} of {self.path!r}", self.n)
        if kind == "cond":
            if count is None:  # OpenClover: times true / times false
                count = yes + no
                br = Branches((yes > 0) + (no > 0), 2)
            else:  # Istanbul: branches covered / not covered
                br = Branches(yes, yes + no)
            if br.total:
                old = self.branches.get(ln)
                self.branches[ln] = br if old is None else old.merged(br)
        elif count is None:
            raise Invalid(f"<line num={ln}> in {self.path!r} has no count", self.n)
        lines[ln] = max(lines.get(ln, 0), count)  # one source line, one count

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "testproject":
            self.in_test_project -= 1
        elif tag == "file" and self.lines is not None:
            self.end_file()

    def data(self, text: str) -> None:
        """Text is never meaningful in Clover."""


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
