"""Flow coverage JSON (flow-coverage-report ``-t json``): flow-bin's own report
of ``tests/fixtures/programs/flow``, detection beside coverage.py JSON, bad
expressions skipped."""

from __future__ import annotations

import json

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import FLOW
from tests.app.coverage.formats.conftest import refused
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

REPORT = (REPORTS / "flow" / "flow-coverage.json").read_bytes()


def test_flows_own_report_marks_the_line_each_expression_starts_on() -> None:
    """src/calc.js: ``add`` is typed (lines 2, 3 covered); ``loose(x: any)``
    leaves ``x.foo`` (line 7) untyped while its signature line 6 has a typed
    name; ``multi``'s ``a: any`` (line 12) and ``a.value +`` (line 15) are
    ``any``, ``b`` on line 16 is typed. src/plain.js has no ``@flow``: no lines."""
    report = parse_report(REPORT)
    assert detect_format(REPORT) == FLOW
    assert set(report.files) == {"src/calc.js"}
    assert report.files["src/calc.js"].lines == {
        2: 1, 3: 1, 6: 1, 7: 0, 8: 1, 11: 1, 12: 0, 13: 1, 15: 0, 16: 1,
    }  # fmt: skip
    assert not report.files["src/calc.js"].branches


def test_every_expression_flow_counted_is_read() -> None:
    doc = json.loads(REPORT)
    expressions = doc["files"]["src/calc.js"]["expressions"]
    assert (expressions["covered_count"], expressions["uncovered_count"]) == (11, 10)
    starts = {loc["start"]["line"] for key in ("covered_locs", "uncovered_locs")
              for loc in expressions[key]}  # fmt: skip
    assert set(parse_report(REPORT).files["src/calc.js"].lines) == starts


def test_a_flow_report_is_never_taken_for_coverage_py_json() -> None:
    """Flow's ``files`` is keyed by path like coverage.py's; without
    coverage.py's ``meta`` it is Flow's, and with neither it is refused."""
    doc = json.loads(REPORT)
    doc["meta"] = {"version": "7.6.1"}
    assert detect_format(json.dumps(doc).encode()) == FLOW
    del doc["flowStatus"], doc["meta"]
    with pytest.raises(Exception, match="matches no known coverage format"):
        detect_format(json.dumps(doc).encode())


def test_flow_status_written_after_a_long_files_object_is_found() -> None:
    doc = json.loads(REPORT)
    files = {f"src/f{i}.js": doc["files"]["src/calc.js"] for i in range(60)}
    late = {"files": files, "flowStatus": doc["flowStatus"]}
    raw = json.dumps(late).encode()
    assert len(raw) > 64 * 1024
    assert detect_format(raw) == FLOW
    assert len(parse_report(raw).files) == 60


def test_an_unreadable_expression_is_skipped_and_named() -> None:
    doc = json.loads(REPORT)
    locs = doc["files"]["src/calc.js"]["expressions"]["uncovered_locs"]
    locs[0]["start"]["line"] = "six"
    locs[1]["start"] = None
    report = parse_report(json.dumps(doc).encode())
    assert report.skipped.count == 2
    assert "uncovered_locs[0] of 'src/calc.js'" in report.skipped.summary()
    assert report.files["src/calc.js"].lines[7] == 0  # its other expressions still count


def test_a_flow_report_none_of_whose_expressions_can_be_read_is_refused() -> None:
    raw = (
        b'{"flowStatus": {}, "files": {"a.js": {"expressions": {"covered_locs": [{"start": 1}]}}}}'
    )
    refused(raw, "Flow coverage JSON", "no record could be read; 1 record skipped")
    refused(b'{"flowStatus": {}, "files": []}', "Flow coverage JSON", '"files" object')
