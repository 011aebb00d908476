"""What a parser forgives (and says so in the report's warnings) and what it refuses.

Real tools write odd output that Codecov reads leniently: a negative gcov
count, a count written ``1e+0``, JaCoCo lines without instruction counters.
A report that names no file at all is refused with a reason, unless the
report itself says the project has no code.
"""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.limits import NO_CODE
from app.errors import MalformedReport

pytestmark = pytest.mark.timeout(60)


def test_a_negative_lcov_count_is_read_as_zero_and_counted_as_a_warning() -> None:
    raw = b"SF:a.c\nDA:1,3\nDA:2,-1\nDA:3,-20\nBRDA:1,0,0,-2\nBRDA:1,0,1,1\nend_of_record\n"
    report = parse_report(raw)
    fc = report.files["a.c"]
    assert fc.lines == {1: 3, 2: 0, 3: 0}
    assert (fc.branches[1].covered, fc.branches[1].total) == (1, 2)
    assert report.warnings == ["LCOV: 3 negative counts read as 0 (first at line 3)"]


def test_an_lcov_count_written_with_an_exponent_counts_and_is_counted_as_a_warning() -> None:
    report = parse_report(b"SF:a.c\nDA:2,1e+0\nDA:3,0\nDA:4,2.0\nend_of_record\n")
    assert report.files["a.c"].lines == {2: 1, 3: 0, 4: 2}
    assert report.warnings == [
        "LCOV: 2 counts that are not integers (like 1e+0) rounded down (first at line 2)"
    ]


def test_a_clean_lcov_report_has_no_warnings() -> None:
    assert parse_report(b"SF:a.c\nDA:1,1\nend_of_record\n").warnings == []


def test_jacoco_lines_without_instruction_counters_are_not_misses() -> None:
    raw = (
        b'<report name="GCOVR report"><package name=""><sourcefile name="main.cpp">'
        b'<line nr="6"/><line nr="7" mb="1" cb="1"/><line nr="8" mb="2" cb="0"/>'
        b'<line nr="9" mi="0" ci="2"/></sourcefile></package></report>'
    )
    report = parse_report(raw)
    fc = report.files["main.cpp"]
    assert fc.lines == {7: 1, 9: 1}  # 6 and 8 have unknown hits; 7 took a branch
    assert (fc.branches[8].covered, fc.branches[8].total) == (0, 2)
    t = report.totals()
    assert (t.lines, t.hits, t.misses, t.partials) == (2, 1, 0, 1)
    assert report.warnings == [
        "JaCoCo XML: 3 <line> elements without instruction counters (mi/ci) were not counted "
        "as lines"
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b'<?xml version="1.0"?><coverage line-rate="0"><packages/></coverage>',
        b'<report name="x"><sessioninfo id="a" start="1" dump="2"/></report>',
        b'{"meta": {"format": 3}, "files": {}}',
    ],
    ids=["cobertura", "jacoco", "coverage.py-json"],
)
def test_a_report_that_names_no_file_is_an_error_with_a_reason(raw: bytes) -> None:
    with pytest.raises(MalformedReport, match="holds no files and no lines"):
        parse_report(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'<coverage lines-valid="0" lines-covered="0"><sources/><packages/></coverage>',
        b"mode: set\n",
        b'{"meta": {"format": 3}, "files": {}, "totals": {"num_statements": 0}}',
    ],
    ids=["cobertura", "go", "coverage.py-json"],
)
def test_a_report_that_says_the_project_has_no_code_is_accepted_with_a_warning(
    raw: bytes,
) -> None:
    report = parse_report(raw)
    assert report.files == {}
    assert report.warnings == [NO_CODE]


def test_coverage_py_cobertura_shards_merge_missed_branches_by_identity() -> None:
    def shard(missed: str) -> bytes:
        return (
            b'<coverage version="7.6"><sources><source>/r</source></sources><packages>'
            b'<package name="."><classes><class name="a.py" filename="a.py"><lines>'
            b'<line number="10" hits="1" branch="true" condition-coverage="50% (1/2)" '
            b'missing-branches="' + missed.encode() + b'"/>'
            b"</lines></class></classes></package></packages></coverage>"
        )

    first, second = parse_report(shard("12")), parse_report(shard("exit"))
    first.merge(second)
    br = first.files["a.py"].branches[10]
    assert (br.covered, br.total) == (2, 2)
    assert first.totals().partials == 0
    # the same shard twice stays partial: it is the same missed branch
    again = parse_report(shard("12"))
    again.merge(parse_report(shard("12")))
    assert again.totals().partials == 1


def test_missing_branches_that_disagree_with_the_counts_fall_back_to_counts() -> None:
    raw = (
        b'<coverage><packages><package name="."><classes><class name="a" filename="a.py">'
        b'<lines><line number="1" hits="1" branch="true" condition-coverage="33% (1/3)" '
        b'missing-branches="exit,exit"/></lines></class></classes></package></packages></coverage>'
    )
    br = parse_report(raw).files["a.py"].branches[1]
    assert (br.covered, br.total, br.missed_ids) == (1, 3, None)


def test_a_multi_source_cobertura_that_lost_files_says_so_in_a_warning() -> None:
    raw = (
        b'<coverage lines-valid="5"><sources><source>/a/x</source><source>/b/y</source>'
        b'</sources><packages><package name="."><classes><class name="__init__.py" '
        b'filename="__init__.py"><lines><line number="1" hits="1"/></lines></class>'
        b"</classes></package></packages></coverage>"
    )
    report = parse_report(raw)
    assert set(report.files) == {"__init__.py"}
    assert len(report.warnings) == 1
    assert 'lines-valid="5" but holds only 1 line records' in report.warnings[0]


def test_bad_cobertura_records_are_skipped_counted_and_named_and_the_rest_is_kept() -> None:
    """As Codecov and ReportGenerator read them: a line without a number is
    lost, a condition-coverage without ``(n/m)`` loses only its branches, a
    class without a filename loses its own lines."""
    raw = (
        b'<coverage version="7"><packages><package name="p"><classes>'
        b'<class name="a" filename="a.py"><lines>'
        b'<line number="undefined" hits="1"/>'
        b'<line number="2" hits="3" branch="true" condition-coverage="50%"/>'
        b'<line number="3" hits="0"/>'
        b"</lines></class>"
        b'<class name="b" filename=""><lines><line number="1" hits="1"/></lines></class>'
        b"</classes></package></packages></coverage>"
    )
    report = parse_report(raw)
    assert set(report.files) == {"a.py"}
    assert report.files["a.py"].lines == {2: 3, 3: 0}
    assert report.files["a.py"].branches == {}
    assert report.skipped.summary() == (
        '3 records skipped: `<line number="undefined" hits="1">` at element 7, '
        '`<line number="2" hits="3" branch="true" condition-coverage="...` at element 8, '
        '`<class name="b" filename="">` at element 10'
    )  # elements counted from the root, 1; a record cut at 60 characters


def test_a_jacoco_line_zero_is_skipped_counted_and_named_and_the_rest_is_kept() -> None:
    raw = (
        b'<report name="r"><package name="com/x"><sourcefile name="A.java">'
        b'<line nr="0" mi="0" ci="1" mb="0" cb="0"/><line nr="4" mi="0" ci="2" mb="1" cb="1"/>'
        b"</sourcefile></package></report>"
    )
    report = parse_report(raw)
    fc = report.files["com/x/A.java"]
    assert fc.lines == {4: 1}
    assert (fc.branches[4].covered, fc.branches[4].total) == (1, 2)
    assert report.skipped.count == 1
    assert report.skipped.named == [('<line nr="0" mi="0" ci="1" mb="0">', "element 4")]
