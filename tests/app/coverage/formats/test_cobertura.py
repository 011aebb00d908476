"""Cobertura XML: which lines count, how classes of one file add up, and its limits."""

from __future__ import annotations

import pytest

from app.coverage import Branches, parse_report
from app.errors import MalformedReport

pytestmark = pytest.mark.timeout(20)


def test_cobertura_uses_class_lines_not_the_method_lines_that_repeat_them() -> None:
    raw = b"""<coverage><packages><package name="p"><classes>
      <class filename="a.js"><methods><method name="f"><lines><line number="2" hits="5"/></lines>
      </method></methods><lines><line number="1" hits="5"/><line number="2" hits="5"/></lines>
      </class>
      <class filename="only_methods.js"><methods><method name="g"><lines>
      <line number="7" hits="0"/></lines></method></methods><lines/></class>
    </classes></package></packages></coverage>"""
    report = parse_report(raw)
    assert report.files["a.js"].lines == {1: 5, 2: 5}
    assert report.files["only_methods.js"].lines == {7: 0}


def test_cobertura_classes_of_one_file_add_up_and_keep_count_only_branches() -> None:
    raw = b"""<coverage><packages><package name="p"><classes>
      <class filename="A.java"><lines><line number="3" hits="2" branch="true"
        condition-coverage="50% (1/2)"/></lines></class>
      <class filename="A.java"><lines><line number="3" hits="1"/><line number="9" hits="1.0"/>
      </lines></class></classes></package></packages></coverage>"""
    fc = parse_report(raw).files["A.java"]
    assert fc.lines == {3: 3, 9: 1}
    assert fc.branches == {3: Branches(1, 2)}
    assert parse_report(raw).totals().partials == 1


def test_decimal_hits_are_read_and_counted_in_a_warning_and_line_zero_is_skipped() -> None:
    """Some writers put ``hits="1.0"``; generated code without a source line is line 0."""
    raw = b"""<coverage><packages><package name="p"><classes><class filename="a.py"><lines>
      <line number="0" hits="4"/><line number="1" hits="2.0"/><line number="2" hits="3"/>
      <line number="3" hits="0.0"/><line number="4" hits="1" branch="false"
        condition-coverage="0% (0/2)"/>
      </lines></class></classes></package></packages></coverage>"""
    report = parse_report(raw)
    assert report.files["a.py"].lines == {1: 2, 2: 3, 3: 0, 4: 1}
    assert report.files["a.py"].branches == {}  # branch="false" names no branches
    assert report.warnings == ["2 <line> hits written as decimals (e.g. '1.0') read as integers"]


def test_an_xml_report_in_another_declared_encoding_is_refused_as_not_utf8() -> None:
    """Every report is read as UTF-8 (app/coverage/safexml.py): a declared
    encoding must not change how the bytes are read."""
    raw = (
        '<?xml version="1.0" encoding="ISO-8859-1"?><coverage><packages><package><classes>'
        '<class filename="src/café.py"><lines><line number="1" hits="1"/></lines></class>'
        "</classes></package></packages></coverage>"
    ).encode("latin-1")
    with pytest.raises(MalformedReport, match="the report is not UTF-8"):
        parse_report(raw)
