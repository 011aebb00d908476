"""The stored forms of a report: what ``codec`` reads back."""

from __future__ import annotations

from app.coverage import FileCoverage, Report, codec


def test_a_count_past_64_bits_reads_back_as_the_largest_column_value_not_an_error() -> None:
    report = Report()
    report.files["a.py"] = FileCoverage({1: 2**70, 2: 0, 3: 5})
    lines, hits, _ = codec.file_columns(codec.dump(report), "a.py") or ((), (), {})
    assert list(lines) == [1, 2, 3]
    assert list(hits) == [codec.MAX_COUNT, 0, 5]
    assert codec.load(codec.dump(report)).files["a.py"].lines[1] == 2**70  # the report keeps it
