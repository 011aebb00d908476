"""Bullseye XML (``covxml -b``): hand-written input, expected lines stated
beside it (Bullseye does not run here)."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import BULLSEYE
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

XML = b"""<?xml version="1.0" encoding="UTF-8"?>
<!-- BullseyeCoverage XML -->
<BullseyeCoverage name="t.cov" dir="/w/" buildId="1a2b_2020-10-28_17:55:47" version="6"
    xmlns="https://www.bullseye.com/covxml">
  <folder name="src"><folder name="calc">
    <src name="core.cpp">
      <fn name="apply(int)">
        <probe line="10" column="4" kind="function" event="full"/>
        <probe line="12" kind="decision" event="true"/>
        <probe line="12" kind="condition" event="full"/>
        <probe line="15" kind="switch-label" event="none"/>
        <probe line="16" kind="switch-label" event="full"/>
        <probe line="20" kind="decision" event="none"/>
        <block line="11" entered="1"/>
        <block line="21" entered="0"/>
      </fn>
    </src>
  </folder>
  <src name="main.cpp"><fn name="main()"><probe line="3" kind="function" event="none"/></fn></src>
  </folder>
</BullseyeCoverage>"""


def test_probes_and_blocks_give_lines_and_each_outcome_a_branch() -> None:
    report = parse_report(XML)
    assert detect_format(XML) == BULLSEYE
    core = report.files["src/calc/core.cpp"]
    # function 10 ran; 12's decision took only true, its condition both; 15's
    # label never reached, 16's reached; decision 20 never evaluated; blocks 11 (ran), 21 (not)
    assert core.lines == {10: 1, 11: 1, 12: 1, 15: 0, 16: 1, 20: 0, 21: 0}
    assert {ln: (b.covered, b.total) for ln, b in core.branches.items()} == {
        12: (3, 4),
        15: (0, 1),
        16: (1, 1),
        20: (0, 2),
    }
    assert report.files["src/main.cpp"].lines == {3: 0}


def test_the_other_outcome_in_another_run_covers_the_decision() -> None:
    first = parse_report(XML)
    first.merge(
        parse_report(XML.replace(b'kind="decision" event="true"', b'kind="decision" event="false"'))
    )
    assert first.files["src/calc/core.cpp"].branches[12].covered == 4


def test_a_probe_with_an_unknown_event_or_no_line_is_skipped_and_named() -> None:
    raw = XML.replace(
        b'line="16" kind="switch-label" event="full"', b'line="16" kind="x" event="maybe"'
    )
    raw = raw.replace(b'<block line="21"', b'<block line="zero"')
    report = parse_report(raw)
    assert report.skipped.count == 2
    assert 16 not in report.files["src/calc/core.cpp"].lines
    assert 'event="maybe"' in report.skipped.summary()
    refused(
        b'<BullseyeCoverage xmlns="https://www.bullseye.com/covxml"><src name="a.c">'
        b'<probe line="0" kind="function" event="full"/></src></BullseyeCoverage>',
        "Bullseye XML",
        "no record could be read",
    )
