"""The stored forms of a report: what ``codec`` reads back."""

from __future__ import annotations

import zlib

from hypothesis import given
from hypothesis import strategies as st

from app.coverage import Branches, FileCoverage, Report, codec
from tests.support.coverage_strategies import PROPERTY_SETTINGS, reports


def test_a_count_past_64_bits_reads_back_as_the_largest_column_value_not_an_error() -> None:
    report = Report()
    report.files["a.py"] = FileCoverage({1: 2**70, 2: 0, 3: 5})
    lines, hits, _ = codec.file_columns(codec.dump(report), "a.py") or ((), (), {})
    assert list(lines) == [1, 2, 3]
    assert list(hits) == [codec.MAX_COUNT, 0, 5]
    assert codec.load(codec.dump(report)).files["a.py"].lines[1] == 2**70  # the report keeps it


def _files_of(report: Report) -> list[tuple[str, FileCoverage]]:
    return [(path, fc.copy()) for path, fc in report.files.items()]


@given(st.lists(reports(), min_size=1, max_size=4))
@PROPERTY_SETTINGS
def test_files_written_one_by_one_read_back_as_the_report_they_merge_to(
    parts: list[Report],
) -> None:
    # The same path may come in several parts (LCOV sections, payload files):
    # the writer merges it as Report.merge does.
    writer = codec.IntermediateWriter()
    expected = Report()
    for part in parts:
        expected.merge(part)
        for path, fc in _files_of(part):
            writer.add_file(path, fc)
    blob = writer.finish()
    # less the files without lines, which an upload does not keep
    kept = Report({path: fc for path, fc in expected.files.items() if fc.lines})
    assert codec.load(blob) == kept
    assert zlib.decompress(blob).startswith(codec.MAGIC_V4)


def test_the_writer_counts_distinct_paths_and_knows_which_it_holds() -> None:
    writer = codec.IntermediateWriter()
    writer.add_file("a.py", FileCoverage({1: 1}))
    writer.add_file("a.py", FileCoverage({2: 0}))
    writer.add_file("b.py", FileCoverage({1: 3}))
    assert writer.file_count() == 2
    assert "a.py" in writer
    assert "c.py" not in writer


def test_a_count_past_64_bits_turns_the_writer_to_the_json_form_keeping_every_file() -> None:
    writer = codec.IntermediateWriter()
    writer.add_file("a.py", FileCoverage({1: 1, 2: 0}, {1: Branches(1, 2)}))
    writer.add_file("b.py", FileCoverage({1: 2**70}))  # does not fit a column
    writer.add_file("a.py", FileCoverage({2: 4}))
    blob = writer.finish()
    assert not zlib.decompress(blob).startswith(codec.MAGIC_V4)
    assert codec.load(blob) == Report(
        {
            "a.py": FileCoverage({1: 1, 2: 4}, {1: Branches(1, 2)}),
            "b.py": FileCoverage({1: 2**70}),
        }
    )


def test_two_sections_whose_counts_add_past_64_bits_are_written_in_the_json_form() -> None:
    writer = codec.IntermediateWriter()
    writer.add_file("a.py", FileCoverage({1: 2**62}))
    writer.add_file("a.py", FileCoverage({1: 2**62}))
    writer.add_file("a.py", FileCoverage({1: 2**62}))
    blob = writer.finish()
    assert codec.load(blob).files["a.py"].lines == {1: 3 * 2**62}


def test_an_upload_keeps_no_file_without_lines() -> None:
    # An empty __init__.py: Codecov's report drops a file without lines, so
    # it is neither stored nor counted in the commit's files.
    writer = codec.IntermediateWriter()
    writer.add_file("pkg/__init__.py", FileCoverage({}))
    writer.add_file("pkg/a.py", FileCoverage({1: 0}))
    assert list(codec.load(writer.finish()).files) == ["pkg/a.py"]
