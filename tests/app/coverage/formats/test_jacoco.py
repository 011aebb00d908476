"""JaCoCo XML: lines hit when instructions ran, count-only branches, and the limits."""

from __future__ import annotations

import pytest

from app.coverage import Branches, parse_report

pytestmark = pytest.mark.timeout(20)


def test_jacoco_lines_are_hit_when_instructions_ran_and_branches_are_counted() -> None:
    raw = b"""<report name="r"><group name="m"><package name="org/x">
      <class name="org/x/A"><method name="f" line="3"><counter type="LINE" missed="0" covered="1"/>
      </method></class><sourcefile name="A.java">
      <line nr="3" mi="0" ci="4" mb="1" cb="3"/><line nr="4" mi="2" ci="0" mb="0" cb="0"/>
      <line nr="5" mi="1" ci="1" mb="0" cb="0"/><counter type="LINE" missed="1" covered="2"/>
      </sourcefile></package></group></report>"""
    fc = parse_report(raw).files["org/x/A.java"]
    assert fc.lines == {3: 1, 4: 0, 5: 1}
    assert fc.branches == {3: Branches(3, 4)}


def test_a_source_file_listed_in_two_groups_adds_its_lines_and_merges_its_branches() -> None:
    """A multi-module report lists a package per module; one source file in
    two of them is one file of the repository."""
    unit = b'<line nr="3" mi="0" ci="1" mb="1" cb="1"/><line nr="4" mi="1" ci="0"/>'
    other = b'<line nr="3" mi="1" ci="0" mb="0" cb="2"/><line nr="4" mi="0" ci="1"/>'
    raw = b"<report name='r'>%s%s</report>" % tuple(
        b"<group name='g'><package name='p'><sourcefile name='A.java'>%s</sourcefile>"
        b"</package></group>" % lines
        for lines in (unit, other)
    )
    fc = parse_report(raw).files["p/A.java"]
    assert fc.lines == {3: 1, 4: 1}
    assert fc.branches == {3: Branches(2, 2)}
