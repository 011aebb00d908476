"""Reading a stored report: both forms read back the same report; a corrupt
binary one is a ValueError."""

from __future__ import annotations

import zlib

import pytest

from app.coverage import Branches, FileCoverage, Report, codec
from app.coverage.columnar import MAGIC_V4
from app.coverage.serial import dump_v3
from tests.app.coverage.test_columnar import corpus_reports

pytestmark = pytest.mark.timeout(300)


def test_every_public_corpus_report_reads_back_the_same_from_both_forms() -> None:
    corpus = corpus_reports()
    assert len(corpus) >= 100
    for report in corpus:
        assert codec.load(codec.dump(report)) == report
        assert codec.load(dump_v3(report)) == report
        assert codec.load_part(dump_v3(report)).to_report() == report


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
