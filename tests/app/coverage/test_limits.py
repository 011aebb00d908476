"""ParseLimits: the bounds one upload is held to, and how they scale with its size."""

from __future__ import annotations

import dataclasses
import re

import pytest

from app.coverage import FileCoverage, Report, detect_format, parse_report
from app.coverage.detect import FORMAT_NAMES
from app.coverage.limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_LINE_NUMBER,
    DEFAULT_MAX_LINES,
    INFLATE_FLOOR,
    INFLATE_RATIO,
    RECORDS_FLOOR,
    RECORDS_PER_BYTE,
    ParseLimits,
)
from app.errors import ReportTooLarge
from tests.support.writers import WRITERS
from tests.support.writers_c import WRITERS_C

pytestmark = pytest.mark.timeout(20)


def test_the_default_limits_are_the_documented_constants_and_cannot_be_changed() -> None:
    limits = ParseLimits()
    assert (limits.max_bytes, limits.max_files, limits.max_lines, limits.max_line_number) == (
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_FILES,
        DEFAULT_MAX_LINES,
        DEFAULT_MAX_LINE_NUMBER,
    )
    assert limits.input_bytes is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_lines = 1  # type: ignore[misc]


def test_a_small_upload_may_hold_and_unpack_only_in_proportion_to_what_it_stored() -> None:
    base = ParseLimits()
    scaled = base.for_input(1000)
    assert scaled.max_lines == RECORDS_FLOOR + RECORDS_PER_BYTE * 1000
    assert scaled.max_bytes == INFLATE_FLOOR + INFLATE_RATIO * 1000
    assert scaled.input_bytes == 1000
    assert (scaled.max_files, scaled.max_line_number) == (base.max_files, base.max_line_number)
    assert base.input_bytes is None  # a new value; the defaults stay as they were


def test_scaling_never_raises_a_limit_above_the_configured_one() -> None:
    configured = ParseLimits(max_bytes=1_000, max_lines=50)
    huge = configured.for_input(10**9)
    assert (huge.max_bytes, huge.max_lines) == (1_000, 50)
    assert ParseLimits().for_input(10**9).max_lines == DEFAULT_MAX_LINES


def test_a_limit_scaled_to_an_upload_says_so_in_its_message() -> None:
    assert ParseLimits().scaled_note() == ""
    assert ParseLimits().too_many_lines("LCOV").args == (
        f"LCOV report holds more than {DEFAULT_MAX_LINES} line records",
    )
    scaled = ParseLimits(max_lines=10).for_input(86)
    assert scaled.scaled_note() == " (the limit for an upload of 86 bytes)"
    assert str(scaled.too_many_lines("Go coverprofile")) == (
        "Go coverprofile report holds more than 10 line records "
        "(the limit for an upload of 86 bytes)"
    )
    assert str(ParseLimits(max_files=3).too_many_files("LCOV")) == (
        "LCOV report names more than 3 files"
    )


def test_the_byte_limit_admits_a_report_of_exactly_its_size() -> None:
    limits = ParseLimits(max_bytes=10)
    limits.check_bytes(10)
    with pytest.raises(ReportTooLarge, match="report is 11 bytes, over the limit of 10 bytes"):
        limits.check_bytes(11)


def test_a_tiny_go_profile_claiming_millions_of_lines_is_refused_under_its_scaled_limit() -> None:
    raw = b"mode: set\nexample.com/m/a.go:1.1,4000000.2 1 1\n"
    assert len(raw) < 100
    with pytest.raises(ReportTooLarge, match=rf"an upload of {len(raw)} bytes\)"):
        parse_report(raw, limits=ParseLimits().for_input(len(raw)))


#: Formats that cannot name a file without lines: a Go profile lists only
#: blocks, and OpenCover's and scoverage's files are the ones their points name.
NO_FILE_WITHOUT_LINES = frozenset({"go", "opencover", "scoverage"}) | frozenset(WRITERS_C)


def eleven_lines_in_four_files(*, one_without_lines: bool) -> Report:
    sizes = (6, 3, 2, 0) if one_without_lines else (5, 2, 2, 2)
    return Report(
        {
            f"src/f{i}.c": FileCoverage({ln: 1 for ln in range(1, n + 1)})
            for i, n in enumerate(sizes)
        }
    )


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_format_admits_a_report_at_its_limits_and_refuses_one_over_them(writer: str) -> None:
    """Eleven line records in four files (one of them without lines where the
    format can name such a file, which still counts) are read whole at limits
    of 11 line records and 4 files; one record or one file fewer allowed, the
    report is refused naming its format."""
    report = eleven_lines_in_four_files(one_without_lines=writer not in NO_FILE_WITHOUT_LINES)
    raw = WRITERS[writer](report)
    fmt = re.escape(FORMAT_NAMES[detect_format(raw)])
    parsed = parse_report(raw, limits=ParseLimits(max_lines=11, max_files=4))
    assert (parsed.totals().lines, len(parsed.files)) == (11, 4)
    with pytest.raises(ReportTooLarge, match=f"^{fmt} report holds more than 10 line records$"):
        parse_report(raw, limits=ParseLimits(max_lines=10))
    with pytest.raises(ReportTooLarge, match=f"^{fmt} report names more than 3 files$"):
        parse_report(raw, limits=ParseLimits(max_files=3))
