"""R covr's JSON: the report covr writes for Codecov (``covr:::to_codecov``,
``tests/fixtures/regenerate.sh covr``, Debian r-cran-covr) checked against
covr's own per-line tally of the same coverage."""

from __future__ import annotations

import csv

import pytest

from app.coverage import parse_report
from app.coverage.detect import COVR, detect_format
from app.errors import MalformedReport
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

DIR = REPORTS / "covr"


def test_covrs_report_gives_covrs_own_tally_line_by_line() -> None:
    raw = (DIR / "codecov.json").read_bytes()
    assert detect_format(raw) == COVR
    report = parse_report(raw)
    with (DIR / "tally.csv").open() as f:
        tally = {int(row["line"]): int(row["value"]) for row in csv.DictReader(f)}
    assert report.files["calc.R"].lines == tally
    assert set(report.files) == {"calc.R"}


def test_the_first_entry_is_line_zero_so_a_count_there_is_skipped_and_named() -> None:
    raw = b'{"files": [{"name": "R/a.R", "coverage": [4, null, 1, "x"]}], "uploader": "R"}'
    report = parse_report(raw)
    assert report.files["R/a.R"].lines == {2: 1}
    assert report.skipped.count == 2
    assert report.skipped.summary() == (
        '2 records skipped: `line 0: 4` at R/a.R, `line 3: "x"` at R/a.R'
    )


def test_a_report_of_only_bad_records_is_refused() -> None:
    with pytest.raises(MalformedReport, match="no record could be read"):
        parse_report(b'{"files": [{"coverage": [null, 1]}], "uploader": "R"}')
