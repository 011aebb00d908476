"""What each parser makes of the shapes real tools emit, and the per-report limits."""

from __future__ import annotations

import pytest

from app.coverage import Branches, ParseLimits, parse_report
from app.errors import MalformedReport, ReportTooLarge

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


def test_lcov_sections_of_one_file_add_hits_and_union_branches_by_identity() -> None:
    raw = (
        b"TN:unit\nSF:a.c\nDA:1,2\nDA:2,0\nBRDA:1,0,0,1\nBRDA:1,0,1,-\nend_of_record\n"
        b"TN:integration\nSF:./a.c\nDA:1,1\nDA:2,4\nBRDA:1,0,0,0\nBRDA:1,0,1,7\nend_of_record\n"
    )
    fc = parse_report(raw).files["a.c"]
    assert fc.lines == {1: 3, 2: 4}
    assert (fc.branches[1].covered, fc.branches[1].total) == (2, 2)


def test_lcov_function_records_and_checksums_do_not_change_line_coverage() -> None:
    raw = (
        b"TN:\nSF:a.c\nFN:3,5,main\nFNL:0,3,5\nFNA:0,1,main\nFNDA:1,main\nFNF:1\nFNH:1\n"
        b"DA:3,1,abcdef\nDA:4,0\nDA:0,9\nLF:2\nLH:1\nBRF:0\nBRH:0\nend_of_record\n"
    )
    assert parse_report(raw).files["a.c"].lines == {3: 1, 4: 0}


def test_coverage_json_arcs_become_branches_of_their_source_line() -> None:
    raw = b"""{"meta": {"format": 3, "branch_coverage": true}, "files": {"m.py": {
      "executed_lines": [1, 2, 4], "missing_lines": [3],
      "executed_branches": [[2, 4], [-1, 1]], "missing_branches": [[2, 3], [4, -1]]}}}"""
    fc = parse_report(raw).files["m.py"]
    assert fc.lines == {1: 1, 2: 1, 3: 0, 4: 1}
    assert fc.branches[2] == Branches.from_ids(frozenset({"arc:4"}), frozenset({"arc:4", "arc:3"}))
    assert (fc.branches[4].covered, fc.branches[4].total) == (0, 1)
    assert parse_report(raw).totals().partials == 2


def test_go_repeated_blocks_add_in_count_mode_and_or_in_set_mode() -> None:
    body = b"a.go:3.10,4.2 1 %d\na.go:3.10,4.2 1 %d\n"
    count = parse_report(b"mode: count\n" + body % (2, 3))
    assert count.files["a.go"].lines == {3: 5, 4: 5}
    single = parse_report(b"mode: set\n" + body % (0, 1) + b"mode: set\n" + body % (1, 0))
    assert single.files["a.go"].lines == {3: 1, 4: 1}


def test_a_go_block_spanning_lines_covers_each_of_them() -> None:
    report = parse_report(b"mode: atomic\nx/a.go:10.5,14.2 4 7\nx/a.go:14.2,16.3 1 0\n")
    fc = report.files["x/a.go"]
    assert fc.lines == {10: 7, 11: 7, 12: 7, 13: 7, 14: 7, 15: 0, 16: 0}
    assert set(fc.branches) == {14}
    assert report.totals().partials == 1


def test_a_go_profile_of_a_package_without_statements_is_an_empty_report() -> None:
    assert parse_report(b"mode: set\n").files == {}


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


@pytest.mark.parametrize(
    "raw",
    [
        b"SF:a.c\n" + b"".join(b"DA:%d,1\n" % i for i in range(1, 12)) + b"end_of_record\n",
        b"mode: set\na.go:1.1,11.2 1 1\n",
        b"<coverage><packages><package><classes><class filename='a'><lines>"
        + b"".join(b'<line number="%d" hits="1"/>' % i for i in range(1, 12))
        + b"</lines></class></classes></package></packages></coverage>",
        b'{"meta": {}, "files": {"a": {"executed_lines": [1,2,3,4,5,6,7,8,9,10,11]}}}',
        b"<report><package name='p'><sourcefile name='A'>"
        + b"".join(b'<line nr="%d" ci="1"/>' % i for i in range(1, 12))
        + b"</sourcefile></package></report>",
    ],
    ids=["lcov", "go", "cobertura", "coverage.py-json", "jacoco"],
)
def test_a_report_over_the_line_limit_is_refused(raw: bytes) -> None:
    assert parse_report(raw, limits=ParseLimits(max_lines=11)).totals().lines == 11
    with pytest.raises(ReportTooLarge, match="more than 10 line records"):
        parse_report(raw, limits=ParseLimits(max_lines=10))


@pytest.mark.parametrize(
    "raw",
    [
        b"".join(b"SF:f%d.c\nDA:1,1\nend_of_record\n" % i for i in range(4)),
        b"mode: set\n" + b"".join(b"f%d.go:1.1,1.2 1 1\n" % i for i in range(4)),
        b"<coverage>"
        + b"".join(b"<class filename='f%d'><lines/></class>" % i for i in range(4))
        + b"</coverage>",
        b'{"files": {"a": {}, "b": {}, "c": {}, "d": {}}}',
        b"<report><package name='p'>"
        + b"".join(b"<sourcefile name='f%d'/>" % i for i in range(4))
        + b"</package></report>",
    ],
    ids=["lcov", "go", "cobertura", "coverage.py-json", "jacoco"],
)
def test_a_report_naming_too_many_files_is_refused(raw: bytes) -> None:
    assert len(parse_report(raw, limits=ParseLimits(max_files=4)).files) == 4
    with pytest.raises(ReportTooLarge, match="more than 3 files"):
        parse_report(raw, limits=ParseLimits(max_files=3))


def test_a_report_over_the_byte_limit_is_refused_before_it_is_read() -> None:
    with pytest.raises(ReportTooLarge, match="over the limit of 10 bytes"):
        parse_report(b"\x00" * 11, limits=ParseLimits(max_bytes=10))


def test_line_numbers_beyond_the_configured_maximum_are_malformed() -> None:
    raw = b"SF:a.c\nDA:501,1\nend_of_record\n"
    assert parse_report(raw).files["a.c"].lines == {501: 1}
    with pytest.raises(MalformedReport, match=r"outside 1\.\.500"):
        parse_report(raw, limits=ParseLimits(max_line_number=500))


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
