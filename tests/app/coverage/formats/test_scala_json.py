"""Scala JSON (scct / older sbt-scoverage ``fileReports``): no tool that writes
it runs here, so the inputs are written by hand with the lines they mean."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.detect import SCALA_JSON, detect_format
from app.errors import MalformedReport

pytestmark = pytest.mark.timeout(60)

REPORT = b"""{"fileReports": [
  {"filename": "src/main/scala/calc/Ops.scala", "coverage": {"3": 2, "4": 0, "7": 1}},
  {"filename": "src/main/scala/calc/Main.scala", "coverage": {"5": 1}}
]}"""


def test_each_file_report_maps_its_line_numbers_to_their_hits() -> None:
    assert detect_format(REPORT) == SCALA_JSON
    files = parse_report(REPORT).files
    assert files["src/main/scala/calc/Ops.scala"].lines == {3: 2, 4: 0, 7: 1}
    assert files["src/main/scala/calc/Main.scala"].lines == {5: 1}


def test_a_bad_line_number_or_count_is_skipped_and_named_and_the_rest_is_kept() -> None:
    raw = REPORT.replace(b'"7": 1', b'"7": 1, "0": 1, "x": 2, "9": -1, "10": 2.0')
    report = parse_report(raw)
    assert report.files["src/main/scala/calc/Ops.scala"].lines == {3: 2, 4: 0, 7: 1, 10: 2}
    assert report.skipped.count == 3
    assert '`"0": 1` at src/main/scala/calc/Ops.scala' in report.skipped.summary()


def test_a_report_of_only_bad_records_is_refused() -> None:
    with pytest.raises(MalformedReport, match="no record could be read"):
        parse_report(b'{"fileReports": [{"filename": "a.scala", "coverage": {"a": 1}}]}')
