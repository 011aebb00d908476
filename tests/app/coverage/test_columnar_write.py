"""Writing the binary form: from a report's dicts or straight from a parser, a
block at a time, the same bytes either way."""

from __future__ import annotations

import tracemalloc
import zlib

import pytest

from app.coverage import (
    Branches,
    FileCoverage,
    Report,
    codec,
    columnar_read,
    columnar_write,
    detect_format,
    parse_report,
)
from app.coverage.columnar import MAGIC_V4, Part
from app.coverage.parse import parse_into
from tests.app.coverage.test_columnar import corpus_reports
from tests.support.writers import WRITERS

pytestmark = pytest.mark.timeout(300)


def test_a_report_is_written_straight_from_its_dicts_in_the_same_form_as_its_columns() -> None:
    for report in corpus_reports():
        from_report = zlib.decompress(codec.dump(report))
        from_columns = zlib.decompress(codec.dump_columns(Part.from_report(report).files))
        assert from_report.startswith(MAGIC_V4)
        assert from_report == from_columns


def big_report() -> Report:
    """200,000 line records: 3.2 MB of numbers as 64-bit integers."""
    return Report(
        {
            f"f{f}.py": FileCoverage({ln: (ln * 7 + f) % 5 for ln in range(1, 101)})
            for f in range(2000)
        }
    )


#: The numbers of ``big_report``, in bytes.
BIG_REPORT_NUMBERS = 8 * 2 * 200_000


def test_a_report_written_by_its_parser_holds_its_numbers_once() -> None:
    # Encoding used to hold them three times more (column lists, ``tobytes``, the join).
    report = big_report()
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        blob = codec.dump(report)
        written = tracemalloc.get_traced_memory()[1] - held
    finally:
        tracemalloc.stop()
    assert codec.load(blob) == report
    assert written < 1.5 * BIG_REPORT_NUMBERS, (
        f"encoding peaked at {written / BIG_REPORT_NUMBERS:.1f}x the numbers"
    )


def test_a_merged_report_is_encoded_and_decoded_a_block_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A merge pass holds the merged report's lists; its numbers as bytes are
    # never whole beside them, only a block of them (64 KiB here).
    monkeypatch.setattr(columnar_write, "ENCODE_BLOCK", 8192)
    monkeypatch.setattr(columnar_read, "DECODE_BLOCK", 1 << 16)
    report = big_report()
    files = Part.from_report(report).files
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        blob = codec.dump_columns(files)
        written = tracemalloc.get_traced_memory()[1] - held - 2 * len(blob)  # its pieces, joined
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        part = codec.load_part(blob)
        read_peak = tracemalloc.get_traced_memory()[1] - held
        read_held = tracemalloc.get_traced_memory()[0] - held
    finally:
        tracemalloc.stop()
    assert part.files == files
    # the form the parser's writer gives, across many blocks
    assert zlib.decompress(blob) == zlib.decompress(codec.dump(report))
    assert written < 0.2 * BIG_REPORT_NUMBERS, (
        f"encoding peaked at {written / BIG_REPORT_NUMBERS:.2f}x the numbers"
    )
    beyond = read_peak - read_held  # beyond the column lists it keeps
    assert beyond < 0.2 * BIG_REPORT_NUMBERS, (
        f"decoding peaked at {beyond / BIG_REPORT_NUMBERS:.2f}x the numbers beyond what it keeps"
    )


def test_a_count_beyond_64_bits_is_written_in_the_json_form() -> None:
    big = Report({"f.py": FileCoverage({1: 2**70})})
    blob = codec.dump(big)
    assert not zlib.decompress(blob).startswith(MAGIC_V4)
    assert codec.load(blob) == big


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_format_parsed_into_the_writer_reads_back_as_its_parsed_report(fmt: str) -> None:
    report = Report(
        {
            f"src/m{f}.py": FileCoverage(
                {ln: (ln * 3 + f) % 4 for ln in range(1, 30)},
                {ln: Branches(1, 2) for ln in range(5, 30, 10)},
            )
            for f in range(3)
        }
    )
    raw = WRITERS[fmt](report)
    writer = codec.IntermediateWriter()
    name = parse_into(raw, writer)
    assert codec.load(writer.finish()) == parse_report(raw)
    assert name == detect_format(raw)


@pytest.mark.slow  # a memory measurement under tracemalloc: 4 s of CPU
def test_an_lcov_report_is_parsed_into_the_writer_without_holding_its_report() -> None:
    # 2,000 files x 100 lines. As a Report the parse holds about 60 bytes a
    # line; handed to the writer section by section it holds the numbers (16
    # bytes a line), one section and one chunk of the input at a time (both
    # parses hold a chunk's lines: about 4 MB here, a third of the report).
    report = Report(
        {
            f"src/f{f}.py": FileCoverage({ln: (ln * 7 + f) % 5 for ln in range(1, 101)})
            for f in range(2000)
        }
    )
    raw = WRITERS["lcov"](report)
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        writer = codec.IntermediateWriter()
        parse_into(raw, writer)
        parse_peak = tracemalloc.get_traced_memory()[1] - held
        tracemalloc.reset_peak()
        held = tracemalloc.get_traced_memory()[0]
        whole = parse_report(raw)
        report_peak = tracemalloc.get_traced_memory()[1] - held
    finally:
        tracemalloc.stop()
    assert codec.load(writer.finish()) == whole
    assert parse_peak < 0.8 * report_peak, (
        f"parsing into the writer peaked at {parse_peak / report_peak:.2f}x parsing a report"
    )


def test_an_lcov_file_in_two_sections_is_written_once_with_both_sections_merged() -> None:
    raw = (
        b"TN:unit\nSF:a.py\nDA:1,1\nDA:2,0\nBRDA:2,0,0,1\nBRDA:2,0,1,0\nend_of_record\n"
        b"SF:b.py\nDA:1,0\nend_of_record\n"
        b"TN:e2e\nSF:a.py\nDA:2,3\nDA:3,1\nBRDA:2,0,1,1\nend_of_record\n"
    )
    writer = codec.IntermediateWriter()
    parse_into(raw, writer)
    got = codec.load(writer.finish())
    assert list(got.files) == ["a.py", "b.py"]
    assert got.files["a.py"].lines == {1: 1, 2: 3, 3: 1}
    assert got.files["a.py"].branches[2] == Branches(2, 2, frozenset({"lcov:0,0", "lcov:0,1"}))
    assert got == parse_report(raw)
