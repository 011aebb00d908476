"""The stored form of per-file totals (``app.merge.report_summary``)."""

from __future__ import annotations

import json
import sys
import zlib
from array import array

import pytest

from app.coverage import Branches, FileCoverage, Report, Totals
from app.coverage.columnar import Part
from app.merge.report_summary import (
    FileTotalsTable,
    columns_file_totals,
    decode_file_totals,
    encode_file_totals,
)


def sample() -> Report:
    return Report(
        {
            "b.py": FileCoverage({1: 0, 2: 3, 3: 1}, {3: Branches(1, 2), 2: Branches(2, 2)}),
            "a.py": FileCoverage({1: 1}, {}),
            "c/é.py": FileCoverage({}, {}),
        }
    )


def test_per_file_totals_from_the_columns_equal_the_reports_own() -> None:
    report = sample()
    totals = columns_file_totals(Part.from_report(report).files)
    assert totals == report.file_totals()
    assert list(totals) == ["a.py", "b.py", "c/é.py"]
    assert totals["b.py"].partials == 1 and totals["b.py"].misses == 1


def test_per_file_totals_survive_their_stored_form() -> None:
    totals = sample().file_totals()
    decoded = decode_file_totals(encode_file_totals(totals))
    assert decoded == totals and list(decoded) == list(totals)


@pytest.mark.parametrize(
    "data",
    [b"not compressed", zlib.compress(b"[2]"), zlib.compress(b"{}"), zlib.compress(b'[1,["a",1]]')],
)
def test_anything_else_is_a_value_error_naming_the_stored_file_totals(data: bytes) -> None:
    with pytest.raises(ValueError, match="corrupt stored file totals"):
        decode_file_totals(data)


def test_the_per_file_branch_lines_survive_the_stored_form_and_sum_into_the_total() -> None:
    table = FileTotalsTable.from_bytes(encode_file_totals(sample().file_totals()))
    assert table.totals()["b.py"].branches == 2
    assert table.total() == Report.totals(sample())
    assert table.total().files == 3 and table.total().branches == 2


def test_per_file_totals_stored_before_branches_were_counted_read_as_zero_branches() -> None:
    header = json.dumps({"v": 1, "paths": ["a.py", "b.py"]}).encode()
    numbers = array("q", [1, 3, 1, 1, 0, 1, 0, 1])  # lines, hits, misses, partials
    if sys.byteorder == "big":
        numbers.byteswap()
    old = zlib.compress(b"CWFT" + len(header).to_bytes(4, "little") + header + numbers.tobytes())
    totals = decode_file_totals(old)
    assert totals["b.py"] == Totals(1, 3, 1, 1, 1, branches=0)
