"""Codecov's v1 JSON: the three shapes of a file's lines, ``"n/m"`` branch
lines, bad lines skipped, detection. Hand-written inputs, expected lines
stated beside them."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import CODECOV_V1
from app.errors import UnknownFormat
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

V1 = b"""{"coverage": {
  "app/models/user.rb": {"1": 3, "2": 0, "3": "1/2", "4": null, "5": "7", "6": "2/2", "7": "0/3"},
  "lib/list.rb": [null, 1, null, 0],
  "lib/lines.rb": {"lines": [4, null, 0]},
  "lib/partly.rb": {"2": true, "3": false}
}, "messages": {}}"""


def test_each_shape_gives_the_lines_codecov_reads_from_it() -> None:
    report = parse_report(V1)
    assert detect_format(V1) == CODECOV_V1
    user = report.files["app/models/user.rb"]
    # "1/2": a hit, 1 of 2 branches; "2/2" all taken; "0/3" a miss; null no line; "7" 7 hits
    assert user.lines == {1: 3, 2: 0, 3: 1, 5: 7, 6: 1, 7: 0}
    assert {ln: (b.covered, b.total) for ln, b in user.branches.items()} == {
        3: (1, 2),
        6: (2, 2),
        7: (0, 3),
    }
    assert report.files["lib/list.rb"].lines == {1: 1, 3: 0}  # index = line, index 0 unread
    assert report.files["lib/lines.rb"].lines == {1: 4, 3: 0}  # first item is line 1
    partly = report.files["lib/partly.rb"]
    assert partly.lines == {2: 1, 3: 0}
    assert (partly.branches[2].covered, partly.branches[2].total) == (1, 2)  # true: partial
    totals = report.totals()
    assert (totals.hits, totals.misses, totals.partials) == (5, 5, 2)


def test_a_bad_line_is_skipped_and_named_and_the_rest_kept() -> None:
    raw = b'{"coverage": {"a.rb": {"0": 1, "x": 2, "3": -1, "4": "3/2", "5": 1.5, "6": 2}}}'
    report = parse_report(raw)
    assert report.files["a.rb"].lines == {6: 2}
    assert report.skipped.count == 5
    assert "`0: 1` at 'a.rb' line 0" in report.skipped.summary()
    refused(
        b'{"coverage": {"a.rb": {"0": 1, "x": 1}}}', "Codecov v1 JSON", "no record could be read"
    )


@pytest.mark.parametrize(
    "raw",
    [
        b'{"coverage": {"a.rb": {"lang": "ruby"}}}',  # not keyed by line
        b'{"coverage": 87.5}',  # a summary's percentage
        b'{"coverage": {"a.rb": 3}}',
    ],
)
def test_json_with_a_coverage_key_that_is_not_v1_is_refused(raw: bytes) -> None:
    with pytest.raises(UnknownFormat, match="matches no known coverage format"):
        detect_format(raw)
