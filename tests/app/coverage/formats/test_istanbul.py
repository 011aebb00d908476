"""Istanbul JSON (coverage-final.json): what a file's maps give, and precise errors.

An error names the line where the broken file's entry starts (each file is
decoded as one piece).
"""

from __future__ import annotations

import json

import pytest

from app.coverage import parse_report
from app.coverage.detect import ISTANBUL
from app.coverage.formats import istanbul
from app.errors import MalformedReport
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)


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
    raw: bytes, reason: str, line: int
) -> None:
    assert refused(raw, "Istanbul JSON", reason).line == line


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
