"""elm-coverage JSON: hand-written input, expected lines stated beside it."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import ELM
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

ELM_JSON = b"""{"coverageData": {"Calc": [
  {"type": "declaration", "name": "classify", "complexity": 2, "count": 3,
   "from": {"line": 4, "column": 1}, "to": {"line": 8, "column": 20}},
  {"type": "caseBranch", "count": 0,
   "from": {"line": 7, "column": 9}, "to": {"line": 7, "column": 20}},
  {"type": "caseBranch", "count": 5,
   "from": {"line": 6, "column": 9}, "to": {"line": 6, "column": 18}},
  {"type": "declaration", "name": "unused", "count": 0,
   "from": {"line": 11, "column": 1}, "to": {"line": 12, "column": 7}}
 ]},
 "moduleMap": {"Calc": "src/Calc.elm"}}"""


def test_every_line_an_expression_spans_takes_its_count_and_a_line_the_largest() -> None:
    report = parse_report(ELM_JSON)
    assert detect_format(ELM_JSON) == ELM
    # 4..8 from the declaration (3), 6 from its branch (5), 7 keeps 3 over 0; 11..12 unused
    assert report.files["src/Calc.elm"].lines == {4: 3, 5: 3, 6: 5, 7: 3, 8: 3, 11: 0, 12: 0}


def test_a_bad_expression_or_unmapped_module_is_skipped_and_named() -> None:
    raw = ELM_JSON.replace(b'"from": {"line": 11,', b'"from": {"line": "11",').replace(
        b'"coverageData": {', b'"coverageData": {"Ghost": [], '
    )
    report = parse_report(raw)
    assert 11 not in report.files["src/Calc.elm"].lines
    assert report.skipped.count == 2
    assert "Calc annotation 3" in report.skipped.summary()
    refused(
        b'{"coverageData": {"A": [{"from": {"line": 2}, "to": {"line": 1}}]},'
        b' "moduleMap": {"A": "a"}}',
        "elm-coverage JSON",
        "no record could be read",
    )
