"""jsonstream: walking a JSON report piece by piece, errors that name a line,
gzip unpacked within the limits, and files collected within the limits."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import pytest

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.errors import MalformedReport, ReportTooLarge

pytestmark = pytest.mark.timeout(20)

FMT = "Some JSON"


def walk(text: str) -> tuple[list[tuple[str, Any]], int]:
    """The members of the object ``text`` holds, each value decoded on its own."""
    seen: list[tuple[str, Any]] = []

    def on_value(key: str, pos: int) -> int:
        value, end = js.value(text, pos)
        seen.append((key, value))
        return end

    return seen, js.walk_object(text, 0, on_value)


def test_an_object_is_walked_member_by_member_whatever_its_spacing() -> None:
    text = ' \n{ "a" : [1, {"x": 2}] ,\r\n\t"b":null,"c" :"s"}  '
    seen, end = walk(text)
    assert seen == [("a", [1, {"x": 2}]), ("b", None), ("c", "s")]
    assert text[end - 1] == "}"
    js.end_of_document(text, end)
    assert walk("{ }") == ([], 3)


def test_an_array_is_walked_item_by_item() -> None:
    text = '[ 1 , "two",[3] ]'
    items: list[Any] = []

    def on_item(pos: int) -> int:
        value, end = js.value(text, pos)
        items.append(value)
        return end

    assert js.walk_array(text, 0, on_item) == len(text)
    assert items == [1, "two", [3]]
    assert js.walk_array("[]", 0, on_item) == 2
    assert items == [1, "two", [3]]


@pytest.mark.parametrize(
    ("text", "reason", "pos"),
    [
        ("[1, 2]", "expected '{' but found '['", 0),
        ('{"a": 1 "b": 2}', "expected '}' but found '\"'", 8),
        ('{"a": 1,}', "expected a string key", 8),
        ("{a: 1}", "expected a string key", 1),
        ('{"a" 1}', "expected ':' but found '1'", 5),
        ('{"a": 1', "expected '}' but found 'the end of the report'", 7),
    ],
)
def test_a_broken_object_is_a_problem_at_the_place_it_was_found(
    text: str, reason: str, pos: int
) -> None:
    with pytest.raises(js.Bad) as caught:
        walk(text)
    assert (caught.value.reason, caught.value.pos) == (reason, pos)


def test_anything_after_the_document_is_extra_data() -> None:
    js.end_of_document("{} \n", 2)
    with pytest.raises(js.Bad, match="extra data after the JSON document") as caught:
        js.end_of_document("{} x", 2)
    assert caught.value.pos == 3


def test_run_turns_a_problem_into_a_malformed_report_naming_its_line() -> None:
    text = '{\n"a": 1,\n"b": 2\n}'

    def body(text: str) -> Report:
        raise js.Bad("b is wrong", text.index('"b"'))

    with pytest.raises(MalformedReport) as caught:
        js.run(text.encode(), FMT, body)
    assert (caught.value.fmt, caught.value.reason, caught.value.line) == (FMT, "b is wrong", 3)


def test_run_names_the_line_of_invalid_json_and_of_bytes_that_are_not_utf8() -> None:
    def decode(text: str) -> Report:
        json.loads(text)
        return Report()

    with pytest.raises(MalformedReport, match="not valid JSON") as caught:
        js.run(b'{\n"a":\n}', FMT, decode)
    assert caught.value.line == 3
    with pytest.raises(MalformedReport, match="the report is not UTF-8") as caught:
        js.run(b'{\n\n"\xff": 1}', FMT, decode)
    assert caught.value.line == 3
    assert js.run(b'\xef\xbb\xbf{"a": 1}', FMT, decode) == Report()  # a UTF-8 byte order mark


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (js.Bad("nowhere"), "nowhere"),
        (RecursionError(), "the JSON is nested too deeply"),
        (KeyError("files"), "unreadable report: KeyError('files')"),
        (TypeError("no"), "unreadable report: TypeError('no')"),
    ],
)
def test_run_turns_what_a_reader_raises_into_a_malformed_report(
    exc: Exception, reason: str
) -> None:
    def body(text: str) -> Report:
        raise exc

    with pytest.raises(MalformedReport) as caught:
        js.run(b"{}", FMT, body)
    assert (caught.value.fmt, caught.value.reason, caught.value.line) == (FMT, reason, None)


def test_run_lets_a_report_error_through_unchanged() -> None:
    mine = ReportTooLarge("too many")

    def body(text: str) -> Report:
        raise mine

    with pytest.raises(ReportTooLarge) as caught:
        js.run(b"{}", FMT, body)
    assert caught.value is mine


def test_a_line_number_is_a_whole_number_within_the_limit() -> None:
    limits = ParseLimits(max_line_number=100)
    assert js.line_number(100, "line", limits, 0) == 100
    for bad in (0, 101, -1, 1.0, True, "7", None):
        with pytest.raises(js.Bad, match=r"line .* is not a line number in 1\.\.100") as caught:
            js.line_number(bad, "line", limits, 5)
        assert caught.value.pos == 5


def test_a_count_is_a_non_negative_whole_number_written_as_an_int_or_a_float() -> None:
    assert js.count(3, "hits", 0) == 3
    assert js.count(2.0, "hits", 0) == 2
    assert type(js.count(2.0, "hits", 0)) is int
    for bad in (-1, 1.5, -2.0, True, "3", None):
        with pytest.raises(js.Bad, match=r"hits .* is not a count"):
            js.count(bad, "hits", 0)


def test_files_merge_a_path_named_twice_and_keep_to_the_file_and_line_limits() -> None:
    out = js.Files(FMT, ParseLimits(max_files=2, max_lines=4), roots=["/w"])
    out.add("/w/a.c", FileCoverage({1: 1}))
    out.add("a.c", FileCoverage({1: 2, 2: 0}))
    out.add("b.c", FileCoverage({}))
    assert {p: fc.lines for p, fc in out.report.files.items()} == {"a.c": {1: 3, 2: 0}, "b.c": {}}
    with pytest.raises(ReportTooLarge, match="Some JSON report names more than 2 files"):
        out.add("c.c", FileCoverage({}))
    with pytest.raises(ReportTooLarge, match="Some JSON report holds more than 4 line records"):
        out.add("a.c", FileCoverage({3: 1, 4: 1}))


def test_gunzip_unpacks_every_member_of_concatenated_gzip_files() -> None:
    packed = gzip.compress(b"one ") + gzip.compress(b"two")
    assert js.gunzip(packed, ParseLimits()) == b"one two"


def test_gunzip_stops_at_the_byte_limit_across_members_and_names_a_scaled_one() -> None:
    packed = gzip.compress(b"x" * 60) + gzip.compress(b"y" * 60)
    assert len(js.gunzip(packed, ParseLimits(max_bytes=120))) == 120
    with pytest.raises(ReportTooLarge, match=r"over the limit of 119 bytes unpacked$"):
        js.gunzip(packed, ParseLimits(max_bytes=119))
    scaled = ParseLimits(max_bytes=100).for_input(len(packed))
    with pytest.raises(
        ReportTooLarge, match=rf"\(the limit for an upload of {len(packed)} bytes\)"
    ):
        js.gunzip(gzip.compress(b"z" * 1000), scaled)


def test_broken_or_truncated_gzip_is_malformed_naming_the_format() -> None:
    packed = gzip.compress(b"some report text " * 100)
    with pytest.raises(MalformedReport, match="the gzip data is truncated") as caught:
        js.gunzip(packed[:-20], ParseLimits(), FMT)
    assert caught.value.fmt == FMT
    with pytest.raises(MalformedReport, match="broken gzip data"):
        js.gunzip(packed[:10] + b"\x00" * 20 + packed[30:], ParseLimits(), FMT)


def test_gunzip_head_gives_the_first_bytes_or_nothing_for_broken_data() -> None:
    packed = gzip.compress(b"0123456789" * 1000)
    assert js.gunzip_head(packed, 15) == b"012345678901234"
    assert js.gunzip_head(b"\x1f\x8bnot gzip", 15) == b""
    assert js.gunzip_head(zlib.compress(b"zlib, not gzip"), 15) == b""
