"""Clover XML (PHPUnit, OpenClover, Istanbul's clover reporter): the shapes
each writer produces, and errors that name the problem and its line."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.detect import CLOVER, detect_format
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

PHPUNIT = b"""<?xml version="1.0" encoding="UTF-8"?>
<coverage generated="1700000000">
  <project timestamp="1700000000">
    <package name="App">
      <file name="/build/src/Calc.php">
        <class name="App\\Calc" namespace="App"><metrics complexity="2" methods="1"/></class>
        <line num="9" type="method" name="add" visibility="public" crap="1" count="3"/>
        <line num="11" type="stmt" count="3"/>
        <line num="12" type="stmt" count="0"/>
        <metrics loc="20" ncloc="20" statements="2" coveredstatements="1"/>
      </file>
    </package>
    <file name="/build/src/util.php"><line num="2" type="stmt" count="1"/></file>
    <metrics files="2"/>
  </project>
</coverage>
"""

OPENCLOVER = b"""<coverage clover="4.4.1" generated="1"><project name="p">
  <package name="a"><file name="A.java" path="/w/src/a/A.java">
    <line num="3" count="5" type="method"/>
    <line num="4" truecount="2" falsecount="0" type="cond"/>
    <line num="5" truecount="1" falsecount="4" type="cond"/>
  </file></package></project>
  <testproject name="t"><package name="a"><file name="ATest.java" path="/w/test/a/ATest.java">
    <line num="1" count="1" type="stmt"/></file></package></testproject>
</coverage>
"""

ISTANBUL_CLOVER = b"""<?xml version="1.0" encoding="UTF-8"?>
<coverage generated="1" clover="3.2.0"><project timestamp="1" name="All files">
  <file name="a.js" path="/r/src/a.js">
    <line num="1" count="2" type="stmt"/>
    <line num="1" count="5" type="stmt"/>
    <line num="2" count="4" type="cond" truecount="2" falsecount="1"/>
    <line num="3" count="0" type="cond" truecount="0" falsecount="2"/>
  </file>
</project></coverage>
"""


def test_phpunit_clover_is_detected_and_read_with_method_lines_as_lines() -> None:
    assert detect_format(PHPUNIT) == CLOVER
    report = parse_report(PHPUNIT, roots=["/build"])
    assert report.files["src/Calc.php"].lines == {9: 3, 11: 3, 12: 0}
    assert report.files["src/util.php"].lines == {2: 1}


def test_openclover_conditions_are_two_branches_covered_per_side_that_ran() -> None:
    report = parse_report(OPENCLOVER, roots=["/w"])
    assert set(report.files) == {"src/a/A.java"}  # the test project is not coverage
    fc = report.files["src/a/A.java"]
    assert fc.lines == {3: 5, 4: 2, 5: 5}
    assert [(fc.branches[ln].covered, fc.branches[ln].total) for ln in (4, 5)] == [(1, 2), (2, 2)]


def test_istanbul_clover_conditions_count_covered_and_uncovered_branches() -> None:
    """Istanbul writes a count on a condition line, and in ``truecount`` /
    ``falsecount`` how many of its branches ran and did not; a line listed
    twice keeps its largest count (one source line, one count)."""
    fc = parse_report(ISTANBUL_CLOVER, roots=["/r"]).files["src/a.js"]
    assert fc.lines == {1: 5, 2: 4, 3: 0}
    assert [(fc.branches[ln].covered, fc.branches[ln].total) for ln in (2, 3)] == [(2, 3), (0, 2)]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (PHPUNIT.replace(b'count="0"', b'count="x"'), "count 'x' is not a whole number"),
        (PHPUNIT.replace(b'num="12"', b'num="0"'), "line number 0"),
        (PHPUNIT.replace(b'num="12" type="stmt" count="0"', b'num="12" type="stmt"'), "no count"),
        (PHPUNIT.replace(b'<file name="/build/src/util.php">', b"<file>"), "without a path"),
        (PHPUNIT.replace(b"</project>", b""), "not well-formed"),
    ],
)
def test_a_broken_clover_report_names_the_format_and_the_problem(raw: bytes, reason: str) -> None:
    assert refused(raw, "Clover XML", reason).line is not None
