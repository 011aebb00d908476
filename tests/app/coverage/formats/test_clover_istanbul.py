"""Clover XML and Istanbul JSON: the shapes each writer produces, and precise errors.

A JSON error names the line where the broken file's entry starts (each file
is decoded as one piece), an XML error the line of the broken element.
"""

from __future__ import annotations

import json

import pytest

from app.coverage import parse_report
from app.coverage.detect import CLOVER, COBERTURA, ISTANBUL, detect_format
from app.coverage.formats import istanbul
from app.coverage.limits import ParseLimits
from app.errors import MalformedReport, ReportTooLarge

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


@pytest.mark.parametrize(
    ("raw", "fmt"),
    [
        (b'<coverage generated="1"><project/></coverage>', CLOVER),
        (b'<coverage clover="3.2.0"/>', CLOVER),
        (b"<coverage><!-- c --><project timestamp='1'>", CLOVER),
        (b'<coverage version="1"><sources/><packages/></coverage>', COBERTURA),
        (b"<coverage><packages><package name='project'/></packages></coverage>", COBERTURA),
        (b'{"/a.js": {"path": "/a.js", "statementMap": {}}}', ISTANBUL),
        (b"{}", ISTANBUL),
    ],
)
def test_clover_cobertura_and_istanbul_are_told_apart_by_content(raw: bytes, fmt: str) -> None:
    assert detect_format(raw) == fmt


def test_an_empty_istanbul_report_is_refused_with_a_reason() -> None:
    with pytest.raises(MalformedReport, match="Istanbul JSON report: the report holds no files"):
        parse_report(b"{}")


ISTANBUL_FILE = (
    b'{\n"/r/a.js": {"path": "/r/a.js",\n'
    b' "statementMap": {"0": {"start": {"line": 1, "column": 0}, "end": {"line": 1, "column": 9}},'
    b' "1": {"start": {"line": 2, "column": 0}, "end": {"line": 2, "column": 5}},'
    b' "2": {"start": {"line": 2, "column": 6}, "end": {"line": 2, "column": 9}}},\n'
    b' "s": {"0": 1, "1": 4, "2": 0},\n'
    b' "branchMap": {"0": {"line": 2, "type": "if", "loc": {"start": {"line": 2, "column": 0},'
    b' "end": {"line": 2, "column": 9}}, "locations": []}},\n'
    b' "b": {"0": [4, 0]}, "fnMap": {}, "f": {}}\n}'
)


def test_istanbul_line_hits_are_the_largest_statement_count_on_the_line() -> None:
    fc = parse_report(ISTANBUL_FILE, roots=["/r"]).files["a.js"]
    assert fc.lines == {1: 1, 2: 4}
    assert fc.branches[2].covered_ids == frozenset({"lcov:0,0"})
    assert fc.branches[2].all_ids == frozenset({"lcov:0,0", "lcov:0,1"})


@pytest.mark.parametrize(
    ("raw", "reason", "line"),
    [
        (ISTANBUL_FILE.replace(b'"1": 4', b'"1": -4'), "count of statement '1'", 2),
        (
            ISTANBUL_FILE.replace(b'"loc": {"start": {"line": 2', b'"loc": {"start": {"line": 0'),
            "branch '0' of '/r/a.js' start line '0'",
            2,
        ),
        (ISTANBUL_FILE.replace(b'"b": {"0": [4, 0]}', b'"b": {"0": 4}'), "list of counts", 2),
        (ISTANBUL_FILE[:-3], "not valid JSON", 6),
        (ISTANBUL_FILE + b"x", "extra data", 7),
        (b'{"statementMap": 3}', "is not an object", 1),
    ],
)
def test_a_broken_istanbul_report_names_the_format_the_problem_and_the_line(
    raw: bytes, reason: str, line: int | None
) -> None:
    with pytest.raises(MalformedReport) as caught:
        parse_report(raw)
    assert caught.value.fmt == "Istanbul JSON"
    assert reason in caught.value.reason
    if line is not None:
        assert caught.value.line == line


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
    with pytest.raises(MalformedReport) as caught:
        parse_report(raw)
    assert caught.value.fmt == "Clover XML"
    assert reason in str(caught.value)
    assert caught.value.line is not None


def test_clover_and_istanbul_keep_to_their_limits() -> None:
    with pytest.raises(ReportTooLarge, match="Clover XML report holds more than 3 line"):
        parse_report(PHPUNIT, limits=ParseLimits(max_lines=3))
    with pytest.raises(ReportTooLarge, match="Clover XML report names more than 1 files"):
        parse_report(PHPUNIT, limits=ParseLimits(max_files=1))
    with pytest.raises(ReportTooLarge, match="Istanbul JSON report holds more than 1 line"):
        parse_report(ISTANBUL_FILE, limits=ParseLimits(max_lines=1))


def _statement(line: object, column: object = 0) -> dict[str, object]:
    loc = {"line": line, "column": column}
    return {"start": loc, "end": {"line": line, "column": None}}


def _istanbul_variants() -> list[bytes]:
    """Plain files (read by the fast path), odd but valid ones and broken ones."""
    branch = {
        "loc": _statement(3),
        "type": "if",
        "locations": [_statement(3), _statement(3)],
        "line": 3,
    }
    plain = {
        "path": "/w/a.js",
        "statementMap": {"0": _statement(2), "1": _statement(3, 4), "2": _statement(3, -1)},
        "s": {"0": 1, "1": 0, "2": 7},
        "branchMap": {"0": branch},
        "b": {"0": [2, 0]},
    }
    odd_statement = {"start": {"column": 0}, "end": {}}  # no line: skipped
    variants = [
        plain,
        {**plain, "statementMap": {**plain["statementMap"], "3": odd_statement}},  # type: ignore[dict-item]
        {**plain, "statementMap": {"0": _statement(0)}},
        {**plain, "statementMap": {"0": _statement(10**8)}},
        {**plain, "s": {"0": True}},
        {**plain, "s": {"0": -1}},
        {**plain, "s": {"0": 2.0}},
        {**plain, "b": {"0": 3}},
        {**plain, "branchMap": {"0": {**branch, "loc": _statement(0)}}},
        {**plain, "branchMap": {"0": {**branch, "type": 'if"'}}},
    ]
    out = []
    for file in variants:
        doc = {"/w/a.js": file}
        out.append(json.dumps(doc).encode())
        out.append(json.dumps(doc, separators=(",", ":")).encode())
        out.append(json.dumps(doc, indent=2).encode())
    good = json.dumps({"/w/a.js": plain}, indent=1)
    out += [
        good.replace('"line": 2', '"line": 02').encode(),  # not JSON
        good.replace('"column": 4', '"column": 4,').encode(),
        good.replace('"s": {', '"s": {,').encode(),
        good.replace('"branchMap": {', '"branchMap": {"x":').encode(),
    ]
    return out


@pytest.mark.parametrize("raw", _istanbul_variants())
def test_istanbul_plain_maps_read_by_regular_expressions_give_the_general_result(
    raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outcome() -> object:
        try:
            report = parse_report(raw, fmt=ISTANBUL)
        except MalformedReport as exc:
            return ("error", str(exc))
        return {p: (fc.lines, fc.branches) for p, fc in report.files.items()}

    fast = outcome()
    monkeypatch.setattr(istanbul, "_FAST", {})
    assert fast == outcome()
