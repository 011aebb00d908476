"""Codecov's v1 JSON: the three shapes of a file's lines, ``"n/m"`` branch
lines, bad lines skipped, detection. Hand-written inputs, expected lines
stated beside them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.coverage import ParseLimits, detect_format, parse_report
from app.coverage.detect import CODECOV_V1
from app.coverage.formats import codecov_v1
from app.coverage.formats.linemap import LineMap
from app.coverage.model import Report
from app.errors import MalformedReport, ReportTooLarge, UnknownFormat
from tests.app.coverage.formats.conftest import refused
from tests.support.coverage_strategies import PROPERTY_SETTINGS

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


def _one_record_at_a_time(doc: dict[str, Any]) -> Report:
    """The reading every record takes when it is not a plain count or ``"n/m"``:
    ``_line`` on each, the reference the fast path must agree with."""
    out = LineMap(codecov_v1.FMT, ParseLimits())
    for name, lines in doc["coverage"].items():
        fc = out.file(name)
        for key, value in lines.items():
            if value is not None:
                codecov_v1._line(out, fc, name, key, value)
    return out.done()


_KEYS = st.one_of(
    st.integers(-2, 40).map(str),
    st.sampled_from(["007", " 3", "3 ", "x", "", "١٢", "+4", "99999999999999999999999"]),
)
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.builds(lambda n, m: f"{n}/{m}", st.integers(-1, 5), st.integers(-1, 5)),
    st.sampled_from(["7", " 2/3", "1 /2", "1/2/3", "/", "٣/٤", "0/0", "abc"]),
)


@PROPERTY_SETTINGS
@given(
    st.dictionaries(
        st.sampled_from(["a.rb", "b.rb", "./a.rb"]),
        st.dictionaries(_KEYS, _VALUES, max_size=12),
        min_size=1,
        max_size=3,
    )
)
def test_the_fast_reading_of_plain_counts_gives_what_reading_each_record_gives(
    coverage: dict[str, dict[str, Any]],
) -> None:
    doc = {"coverage": coverage}
    try:
        expected = _one_record_at_a_time(doc)
    except MalformedReport as exc:
        with pytest.raises(MalformedReport, match=re.escape(exc.reason)):
            codecov_v1.parse(json.dumps(doc).encode(), ParseLimits())
        return
    got = codecov_v1.parse(json.dumps(doc).encode(), ParseLimits())
    assert {p: f.lines for p, f in got.files.items()} == {
        p: f.lines for p, f in expected.files.items()
    }
    assert {p: f.branches for p, f in got.files.items()} == {
        p: f.branches for p, f in expected.files.items()
    }
    assert got.skipped.count == expected.skipped.count
    assert got.skipped.summary() == expected.skipped.summary()


def test_plain_counts_still_count_against_the_record_limit() -> None:
    raw = b'{"coverage": {"a.rb": {"1": 1, "2": 0, "3": "1/2"}, "b.rb": [null, 4, 5]}}'
    assert codecov_v1.parse(raw, ParseLimits(max_lines=5)).totals().lines == 5
    with pytest.raises(ReportTooLarge):
        codecov_v1.parse(raw, ParseLimits(max_lines=4))
