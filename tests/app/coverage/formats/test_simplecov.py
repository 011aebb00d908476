"""SimpleCov JSON: real ``.resultset.json`` files from SimpleCov (Debian
ruby-simplecov, ``tests/fixtures/regenerate.sh simplecov``) checked against
SimpleCov's own result totals, and the two ``coverage.json`` shapes.

simplecov_json_formatter and simplecov-json are not packaged for this
machine, so their shapes are written here from their documented output.
"""

from __future__ import annotations

import json

import pytest

from app.coverage import Report, parse_report
from app.coverage.detect import COVERAGE_JSON, SIMPLECOV, detect_format
from tests.app.coverage.formats.conftest import refused
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

DIR = REPORTS / "simplecov"
ROOT = (DIR / "BUILD_ROOT").read_text().strip()


def parse(name: str) -> Report:
    return parse_report((DIR / f"{name}.resultset.json").read_bytes(), roots=[ROOT])


def branch_counts(report: Report) -> tuple[int, int]:
    branches = [b for fc in report.files.values() for b in fc.branches.values()]
    return sum(b.total for b in branches), sum(b.covered for b in branches)


@pytest.mark.parametrize("name", ["run-classify", "run-divide", "run-sum", "two-runs"])
def test_a_resultset_gives_simplecovs_own_line_and_branch_totals(name: str) -> None:
    raw = (DIR / f"{name}.resultset.json").read_bytes()
    assert detect_format(raw) == SIMPLECOV
    report = parse(name)
    oracle = json.loads((DIR / f"{name}.oracle.json").read_text())
    t = report.totals()
    assert set(report.files) == {"lib/calc.rb"}
    assert (t.lines, t.hits + t.partials) == (oracle["lines"], oracle["covered_lines"])
    assert branch_counts(report) == (oracle["branches"], oracle["covered_branches"])


def test_merging_two_runs_gives_what_simplecov_merges_into_one_resultset() -> None:
    merged = parse("run-classify")
    merged.merge(parse("run-sum"))
    assert merged == parse("two-runs")


FORMATTER = b"""{"meta": {"simplecov_version": "0.22.0"},
 "coverage": {"/app/lib/a.rb": {"lines": [null, 1, 0, "ignored", 2],
   "branches": [{"type": "then", "start_line": 2, "end_line": 2, "coverage": 1,
                 "inline": true, "report_line": 2},
                {"type": "else", "start_line": 2, "end_line": 2, "coverage": 0,
                 "inline": true, "report_line": 2}]}},
 "groups": {}}
"""

SIMPLECOV_JSON = b"""{"timestamp": 1700000000, "command_name": "RSpec",
 "files": [{"filename": "/app/lib/a.rb", "covered_percent": 66.7,
            "coverage": {"lines": [null, 1, 0, null, 2]}},
           {"filename": "/app/lib/old.rb", "coverage": [1, null, 0]}],
 "metrics": {"covered_percent": 60.0}}
"""


def test_the_json_formatters_coverage_json_is_read_with_its_branches() -> None:
    assert detect_format(FORMATTER) == SIMPLECOV  # not coverage.py, despite "meta"
    fc = parse_report(FORMATTER, roots=["/app"]).files["lib/a.rb"]
    assert fc.lines == {2: 1, 3: 0, 5: 2}
    assert (fc.branches[2].covered, fc.branches[2].total) == (1, 2)


def test_simplecov_jsons_files_list_is_read_in_both_its_shapes() -> None:
    assert detect_format(SIMPLECOV_JSON) == SIMPLECOV
    report = parse_report(SIMPLECOV_JSON, roots=["/app"])
    assert report.files["lib/a.rb"].lines == {2: 1, 3: 0, 5: 2}
    assert report.files["lib/old.rb"].lines == {1: 1, 3: 0}


def test_coverage_py_json_is_still_coverage_py() -> None:
    raw = b'{"meta": {"format": 3, "timestamp": "x"}, "files": {"coverage": {}}}'
    assert detect_format(raw) == COVERAGE_JSON


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (FORMATTER.replace(b'"ignored"', b"-1"), "count of line 4 of '/app/lib/a.rb'"),
        (FORMATTER.replace(b'"lines": [', b'"lines": {"x": ['), "is not a list"),
        (FORMATTER.replace(b'"report_line": 2}]', b'"report_line": 0}]'), "branch line"),
        (SIMPLECOV_JSON.replace(b'"/app/lib/old.rb"', b"null"), "without a name"),
        (SIMPLECOV_JSON.replace(b"[1, null, 0]", b"3"), "not an object or a list"),
        (
            (DIR / "run-sum.resultset.json").read_bytes().replace(b"[:if, 0,", b"[:if, x,"),
            "is not like [:if, 0, ...]",
        ),
    ],
)
def test_a_broken_simplecov_report_names_the_format_and_the_problem(
    raw: bytes, reason: str
) -> None:
    assert refused(raw, "SimpleCov JSON", reason).line is not None


def test_each_branch_is_on_the_line_simplecov_reports_it_on() -> None:
    # SimpleCov::SourceFile::Branch#report_line: the branch's start line when it
    # starts on its condition's line, else the line before it. run-classify's
    # resultset: [:if, 6, 4, ...] has then at 5 (reported on 4) and else at 6
    # (on 5); [:if, 3, 6, ...] then at 7 (on 6), else at 9 (on 8); the
    # conditions of lines 9, 14 and 21 are inline.
    fc = parse("run-classify").files["lib/calc.rb"]
    shown = {ln: (b.covered, b.total) for ln, b in fc.branches.items()}
    assert shown == {4: (1, 1), 5: (1, 1), 6: (0, 1), 8: (1, 1), 9: (1, 2), 14: (0, 2), 21: (0, 2)}
    assert fc.lines[5] > 0 and fc.branches[5].covered == fc.branches[5].total  # not partial
