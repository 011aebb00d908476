"""GAP coverage JSON lines: hand-written input, expected lines stated beside it."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import GAP
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

LINES = b"""{"Type":"S","File":"lib/group.gi","FileId":3}
{"Type":"R","Line":10,"FileId":3}
{"Type":"E","Line":10,"FileId":3}
{"Type":"R","Line":11,"FileId":3}

{"Type":"E","Line":12,"FileId":3}
{"Type":"S","File":"lib/util.g","FileId":4}
{"Type":"R","Line":1,"FileId":4}
"""


def test_read_lines_are_misses_executed_lines_hits_and_a_line_keeps_the_larger() -> None:
    report = parse_report(LINES)
    assert detect_format(LINES) == GAP
    assert report.files["lib/group.gi"].lines == {10: 1, 11: 0, 12: 1}
    assert report.files["lib/util.g"].lines == {1: 0}


def test_a_bad_line_is_skipped_and_named_with_its_line_number() -> None:
    raw = LINES.replace(b'{"Type":"R","Line":11,', b'{"Type":"R","Line":"x",').replace(
        b'{"Type":"E","Line":12,"FileId":3}', b'{"Type":"E","Line":12'
    )
    report = parse_report(raw)
    assert report.files["lib/group.gi"].lines == {10: 1}
    assert report.skipped.count == 2
    assert report.skipped.named[0][1] == "line 4" and report.skipped.named[1][1] == "line 6"
    refused(b'{"Type":"S","File":"a.g"}\n{"Type":"Q","Line":1}\n', "GAP coverage JSON", "no record")
