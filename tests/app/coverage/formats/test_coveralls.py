"""Coveralls JSON: real job files from coveralls-python (``coveralls --output``,
``tests/fixtures/regenerate.sh coveralls``) checked against coverage.py's own
JSON of the same run, and the shapes other Coveralls clients send."""

from __future__ import annotations

import json

import pytest

from app.coverage import parse_report
from app.coverage.detect import COVERALLS, detect_format
from app.errors import MalformedReport
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

DIR = REPORTS / "coveralls"


@pytest.mark.parametrize("mode", ["classify", "divide", "sum"])
def test_coveralls_pythons_job_gives_the_lines_and_branches_coverage_py_counted(mode: str) -> None:
    raw = (DIR / f"run-{mode}.json").read_bytes()
    assert detect_format(raw) == COVERALLS
    report = parse_report(raw)
    oracle = json.loads((DIR / f"run-{mode}.coverage.json").read_text())["files"]
    for path, data in oracle.items():
        fc = report.files.get(path)
        if not data["executed_lines"] and not data["missing_lines"]:
            assert fc is None or not fc.lines  # an empty __init__.py
            continue
        assert fc is not None
        assert {ln for ln, hits in fc.lines.items() if hits} == set(data["executed_lines"])
        assert {ln for ln, hits in fc.lines.items() if not hits} == set(data["missing_lines"])
        arcs = data["executed_branches"] + data["missing_branches"]
        total = {ln: sum(1 for a in arcs if a[0] == ln) for ln, _ in arcs}
        taken = {ln: sum(1 for a in data["executed_branches"] if a[0] == ln) for ln in total}
        assert {ln: (b.covered, b.total) for ln, b in fc.branches.items()} == {
            ln: (taken[ln], total[ln]) for ln in total
        }


def test_coverage_given_as_a_json_string_is_read_as_the_list_it_encodes() -> None:
    raw = b'{"source_files": [{"name": "lib/a.js", "coverage": "[null, 2, 0]"}]}'
    assert parse_report(raw).files["lib/a.js"].lines == {2: 2, 3: 0}


def test_a_branch_quadruple_is_a_branch_of_its_line_covered_when_its_hits_are_not_zero() -> None:
    raw = (
        b'{"source_files": [{"name": "a.rb", "coverage": [1, 1],'
        b' "branches": [2, 0, 0, 3, 2, 0, 1, 0, 2, 1, 0, null]}]}'
    )
    branches = parse_report(raw).files["a.rb"].branches[2]
    assert (branches.covered, branches.total) == (1, 3)
    assert branches.covered_ids == frozenset({"cv:0,0"})


def test_a_bad_count_or_a_nameless_file_is_skipped_and_named_and_the_rest_is_kept() -> None:
    raw = (
        b'{"source_files": [{"name": "a.py", "coverage": [1, "x", -2, 0]},'
        b' {"coverage": [1]}, {"name": "b.py", "coverage": 7},'
        b' {"name": "c.py", "coverage": [3], "branches": [1, 0]}]}'
    )
    report = parse_report(raw)
    assert report.files["a.py"].lines == {1: 1, 4: 0}
    assert report.files["c.py"].lines == {1: 3} and not report.files["c.py"].branches
    assert "b.py" not in report.files
    assert report.skipped.count == 5
    assert report.skipped.summary().startswith('5 records skipped: `line 2: "x"` at a.py')


def test_a_report_with_no_readable_record_is_refused() -> None:
    with pytest.raises(MalformedReport, match="no record could be read"):
        parse_report(b'{"source_files": [{"name": "a.py", "coverage": ["x"]}]}')
