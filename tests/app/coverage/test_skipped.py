"""SkippedRecords: a complete count, the first few records named, bounded
whatever a report holds."""

from __future__ import annotations

import pytest

from app.coverage.skipped import MAX_NAMED, MAX_SHOWN, SkippedRecords, shown, summary_of

pytestmark = pytest.mark.timeout(10)


def test_the_count_is_complete_and_only_the_first_records_are_named() -> None:
    skipped = SkippedRecords()
    for n in range(1, 10_001):
        skipped.line(b"DA:0,skipped", n)
    assert skipped.count == 10_000
    assert len(skipped.named) == MAX_NAMED == 5
    assert skipped.summary() == (
        "10000 records skipped: `DA:0,skipped` at line 1, `DA:0,skipped` at line 2, "
        "`DA:0,skipped` at line 3, `DA:0,skipped` at line 4, `DA:0,skipped` at line 5, ..."
    )


def test_one_record_is_said_in_the_singular_and_without_an_ellipsis() -> None:
    skipped = SkippedRecords()
    skipped.line(b"FNDA:,not_hit", 7)
    assert skipped.summary() == "1 record skipped: `FNDA:,not_hit` at line 7"
    assert summary_of(skipped.to_json()) == skipped.summary()


def test_a_record_is_shown_on_one_printable_line_cut_to_its_limit() -> None:
    assert shown(b"DA:1,\x00\x01\tx\r\n") == "DA:1, x"
    assert shown("\xff" * 500) == "\xff" * MAX_SHOWN + "..."
    assert shown(b"\xff\xfe") == "\ufffd\ufffd"


def test_records_of_several_coverage_files_are_named_with_their_file_and_still_bounded() -> None:
    upload = SkippedRecords()
    for name in ("a.info", "b.info"):
        one = SkippedRecords()
        for n in range(4):
            one.line(b"DA:x,1", n + 1)
        upload.extend(one, prefix=f"{name} ")
    assert upload.count == 8
    assert [where for _, where in upload.named] == [
        "a.info line 1", "a.info line 2", "a.info line 3", "a.info line 4", "b.info line 1"
    ]  # fmt: skip


def test_nothing_skipped_stores_nothing_and_a_foreign_value_shows_nothing() -> None:
    assert SkippedRecords().to_json() is None
    assert summary_of(None) is None
    assert summary_of({"count": "many"}) is None
