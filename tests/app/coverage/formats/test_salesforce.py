"""Salesforce Apex JSON (the CLI's ``test-result-codecoverage.json``):
hand-written input, expected lines stated beside it."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import SALESFORCE
from app.errors import UnknownFormat
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

APEX = b"""[
 {"id": "01p000000000001", "name": "AccountService", "totalLines": 4,
  "lines": {"3": 1, "4": 0, "7": 12, "9": 0}, "totalCovered": 2, "coveredPercent": 50},
 {"id": "01q000000000002", "name": "AccountTrigger.trigger", "totalLines": 1,
  "lines": {"1": 5}, "totalCovered": 1, "coveredPercent": 100},
 {"id": "01p000000000003", "name": "Unused", "totalLines": 0, "lines": {},
  "totalCovered": 0, "coveredPercent": 0}
]"""


def test_each_class_is_a_file_named_with_cls_unless_it_has_an_extension() -> None:
    report = parse_report(APEX)
    assert detect_format(APEX) == SALESFORCE
    assert report.files["AccountService.cls"].lines == {3: 1, 4: 0, 7: 12, 9: 0}
    assert report.files["AccountTrigger.trigger"].lines == {1: 5}
    assert "Unused.cls" not in report.files  # no lines: nothing


def test_a_bad_line_or_entry_is_skipped_and_named() -> None:
    raw = b'[{"name": "A", "lines": {"0": 1, "2": "x", "3": 4}}, 7, {"name": "B"}]'
    report = parse_report(raw)
    assert report.files["A.cls"].lines == {3: 4}
    assert report.skipped.count == 4
    assert "`0: 1` at 'A' line 0" in report.skipped.summary()
    refused(b'[{"name": "A", "lines": {"0": 1}}]', "Salesforce Apex JSON", "no record")


def test_a_list_of_other_objects_is_not_salesforce() -> None:
    with pytest.raises(UnknownFormat):
        detect_format(b'[{"name": "test_a", "status": "passed"}]')
