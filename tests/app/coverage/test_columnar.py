"""The columnar merge and the binary serialised form against the model they replace.

The finisher merges with :mod:`app.coverage.columnar` and writes version 4
(binary columns); the model (:meth:`Report.merge`, version 3 JSON) is the
reference. On every report of the public corpus and on generated reports,
both must give the same report, the same totals and the same bytes' meaning.
"""

from __future__ import annotations

import itertools
import json
import tracemalloc
import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.coverage import (
    Branches,
    FileCoverage,
    Report,
    codec,
    columnar,
    detect_format,
    parse_report,
)
from app.coverage.columnar import MAGIC_V4, Accumulator, Part
from app.coverage.model import file_totals
from app.coverage.parse import parse_into
from app.coverage.serial import dump_v3
from tests.support.coverage_strategies import PROPERTY_SETTINGS, reports
from tests.support.paths import SHARED
from tests.support.services import service_missing
from tests.support.writers import WRITERS

pytestmark = pytest.mark.timeout(300)

CORPUS = SHARED / "coverage-corpus"


def model_merge(parts: list[Report]) -> Report:
    out = Report()
    for part in parts:
        out.merge(part)
    return out


def columnar_merge(blobs: list[bytes]) -> Accumulator:
    out = Accumulator()
    for blob in blobs:
        out.add(codec.load_part(blob))
    return out


def corpus_reports() -> list[Report]:
    manifest = CORPUS / "manifest.json"
    if not manifest.exists():
        service_missing("the public coverage corpus", f"{manifest} does not exist")
    found = []
    for case in json.loads(manifest.read_text())["cases"]:
        try:
            found.append(parse_report((CORPUS / case["file"]).read_bytes()))
        except Exception:  # cases the parsers refuse are the corpus test's business
            continue
    return found


def test_every_public_corpus_report_reads_back_the_same_from_both_forms() -> None:
    corpus = corpus_reports()
    assert len(corpus) >= 100
    for report in corpus:
        assert codec.load(codec.dump(report)) == report
        assert codec.load(dump_v3(report)) == report
        assert codec.load_part(dump_v3(report)).to_report() == report


def test_merging_the_public_corpus_column_by_column_gives_the_models_report() -> None:
    corpus = corpus_reports()
    # All of it into one report (different paths and formats), and every report
    # merged with itself and its neighbour (same paths: the vectorised case).
    groups = [corpus, *([a, a, b] for a, b in itertools.pairwise(corpus))]
    for group in groups:
        expected = model_merge(group)
        for blobs in ([codec.dump(r) for r in group], [dump_v3(r) for r in group]):
            merged = columnar_merge(blobs)
            assert merged.to_report() == expected
            assert merged.totals() == expected.totals()
            assert codec.load(codec.dump_columns(merged.files)) == expected


@PROPERTY_SETTINGS
@given(st.lists(reports(), min_size=1, max_size=4))
def test_the_columnar_merge_equals_the_model_merge_in_any_order(parts: list[Report]) -> None:
    expected = model_merge(parts)
    merged = columnar_merge([codec.dump(p) for p in parts])
    assert merged.to_report() == expected
    assert merged.totals() == expected.totals()
    backwards = columnar_merge([codec.dump(p) for p in reversed(parts)])
    assert backwards.to_report() == expected


@PROPERTY_SETTINGS
@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 2)), unique_by=lambda t: t[0]),
    st.lists(st.tuples(st.integers(1, 80), st.booleans()), unique_by=lambda t: t[0]),
)
@example(  # every branch line out of order: the lines are read through a dict
    [(ln, ln % 3) for ln in range(1, 41)], [(ln, ln % 4 == 0) for ln in range(45, 0, -1)]
)
def test_a_files_partial_lines_are_counted_whatever_the_order_of_its_lines(
    lines: list[tuple[int, int]], branch_lines: list[tuple[int, bool]]
) -> None:
    # Lines and branch lines in any order, branch lines on uninstrumented
    # lines too: enough out of order to read the file through a dict.
    fc = FileCoverage(dict(lines), {ln: Branches(2 if full else 1, 2) for ln, full in branch_lines})
    expected = file_totals(fc)
    columns = (list(fc.lines), list(fc.lines.values()), dict(fc.branches))
    counted = columnar.line_counts(columns)
    assert counted == (expected.lines, expected.misses, expected.partials)
    assert columnar.branch_lines(columns) == expected.branches


def test_the_merges_totals_are_the_reports_own_branch_lines_included() -> None:
    report = Report(
        {
            "pkg/__init__.py": FileCoverage({}),
            "pkg/a.py": FileCoverage({1: 1, 2: 1, 3: 0}, {2: Branches(1, 2), 7: Branches(0, 2)}),
        }
    )
    acc = columnar.Accumulator()
    acc.add(Part.from_report(report))
    assert acc.totals() == report.totals()
    assert (acc.totals().files, acc.totals().branches) == (2, 1)


def test_a_part_merged_into_two_reports_is_left_unchanged() -> None:
    a = Report(
        {
            "f.py": FileCoverage(
                {1: 1, 2: 0}, {1: Branches.from_ids(frozenset(), frozenset({"lcov:0,0"}))}
            )
        }
    )
    b = Report(
        {
            "f.py": FileCoverage(
                {1: 2, 2: 3},
                {1: Branches.from_ids(frozenset({"lcov:0,0"}), frozenset({"lcov:0,0"}))},
            )
        }
    )
    part = codec.load_part(codec.dump(b))
    first, second = Accumulator(), Accumulator()
    first.add(codec.load_part(codec.dump(a)))
    first.add(part)
    second.add(part)
    second.add(part)
    assert part.to_report() == b
    assert first.to_report() == model_merge([a, b])
    assert second.to_report() == model_merge([b, b])


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
    monkeypatch.setattr(columnar, "ENCODE_BLOCK", 8192)
    monkeypatch.setattr(columnar, "DECODE_BLOCK", 1 << 16)
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


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda raw: raw[:-3],  # truncated columns
        lambda raw: raw[:-8],  # one number short of the header
        lambda raw: raw + b"\0" * 8,  # one number too many
    ],
)
def test_a_corrupt_binary_report_is_a_value_error(corrupt: object) -> None:
    report = Report({"f.py": FileCoverage({1: 1, 2: 0}, {1: Branches(1, 2)})})
    raw = zlib.decompress(codec.dump(report))
    assert raw.startswith(MAGIC_V4)
    blob = zlib.compress(corrupt(raw))  # type: ignore[operator]
    with pytest.raises(ValueError):
        codec.load_part(blob)
    with pytest.raises(ValueError):
        codec.load(blob)


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
