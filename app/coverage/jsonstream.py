"""Reading a JSON report one piece at a time, with errors that name a line.

The JSON formats (Istanbul, SimpleCov, llvm-cov export, gcov JSON) are a
big object or array of per-file parts. Walking the outer levels by hand and
decoding each part on its own (the C decoder, one file at a time) keeps the
whole report from ever existing as one tree of Python objects, and every
error carries the position where it was found, turned into a line number.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.coverage.paths import PathNormaliser
from app.errors import MalformedReport, ReportError, ReportTooLarge

_WS = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()
GZIP_MAGIC = b"\x1f\x8b"


class Bad(Exception):
    """A problem at character ``pos`` of the text (``None``: no one place)."""

    def __init__(self, reason: str, pos: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.pos = reason, pos


class Files:
    """Collects each file's coverage into one report, within the limits: line
    records are counted before the path is normalised, and a path named twice
    merges into the first."""

    def __init__(self, fmt: str, limits: ParseLimits, roots: Iterable[str] = ()) -> None:
        self.report = Report()
        self.fmt = fmt
        self.limits = limits
        self.normalise: Callable[[str], str] = PathNormaliser(roots)
        self.records = 0

    def add(self, name: str, fc: FileCoverage) -> None:
        self.records += len(fc.lines)
        if self.records > self.limits.max_lines:
            raise self.limits.too_many_lines(self.fmt)
        path = self.normalise(name)
        files = self.report.files
        mine = files.get(path)
        if mine is not None:
            mine.merge(fc)
        elif len(files) >= self.limits.max_files:
            raise self.limits.too_many_files(self.fmt)
        else:
            files[path] = fc


def gunzip(raw: bytes, limits: ParseLimits, fmt: str = "gzip") -> bytes:
    """``raw`` decompressed (every gzip member, as ``gzip -d`` reads concatenated
    files), refused once it grows over ``limits.max_bytes``."""
    parts: list[bytes] = []
    size = 0
    rest = raw
    while rest:
        out = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            data = out.decompress(rest, limits.max_bytes + 1 - size)
        except zlib.error as exc:
            raise MalformedReport(fmt, f"broken gzip data: {exc}") from None
        size += len(data)
        if size > limits.max_bytes or out.unconsumed_tail:
            raise ReportTooLarge(
                f"gzip-compressed report is over the limit of {limits.max_bytes} bytes "
                f"unpacked{limits.scaled_note()}"
            )
        if not out.eof:
            raise MalformedReport(fmt, "the gzip data is truncated")
        parts.append(data)
        rest = out.unused_data
    return b"".join(parts)


def gunzip_head(raw: bytes, size: int) -> bytes:
    """The first ``size`` unpacked bytes of gzip data, or b"" if it is broken."""
    try:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(raw, size)
    except (zlib.error, gzip.BadGzipFile):
        return b""


def run(raw: bytes, fmt: str, body: Callable[[str], Report]) -> Report:
    """Decode ``raw`` and call ``body(text)``, turning every error into ``MalformedReport``."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = raw.count(b"\n", 0, exc.start) + 1
        raise MalformedReport(fmt, "the report is not UTF-8", line=where) from None
    try:
        return body(text)
    except Bad as exc:
        line = text.count("\n", 0, exc.pos) + 1 if exc.pos is not None else None
        raise MalformedReport(fmt, exc.reason, line=line) from None
    except json.JSONDecodeError as exc:
        raise MalformedReport(fmt, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    except ReportError:
        raise
    except RecursionError:
        raise MalformedReport(fmt, "the JSON is nested too deeply") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        raise MalformedReport(fmt, f"unreadable report: {exc!r}") from None


def skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def expect(text: str, pos: int, char: str) -> int:
    pos = skip(text, pos)
    if text[pos : pos + 1] != char:
        found = text[pos : pos + 1] or "the end of the report"
        raise Bad(f"expected {char!r} but found {found!r}", pos)
    return pos + 1


def value(text: str, pos: int) -> tuple[Any, int]:
    """Decode one JSON value at ``pos``; returns it and its end."""
    decoded, end = _decoder.raw_decode(text, skip(text, pos))
    return decoded, int(end)


def walk_object(text: str, pos: int, on_value: Callable[[str, int], int]) -> int:
    """Walk the object at ``pos``: ``on_value(key, value_pos)`` returns the value's end."""
    pos = skip(text, expect(text, pos, "{"))
    if text[pos : pos + 1] == "}":
        return pos + 1
    while True:
        pos = skip(text, pos)
        if text[pos : pos + 1] != '"':
            raise Bad("expected a string key", pos)
        key, pos = _decoder.raw_decode(text, pos)
        pos = skip(text, expect(text, pos, ":"))
        pos = skip(text, on_value(key, pos))
        if text[pos : pos + 1] == ",":
            pos += 1
            continue
        return expect(text, pos, "}")


def walk_array(text: str, pos: int, on_item: Callable[[int], int]) -> int:
    """Walk the array at ``pos``: ``on_item(item_pos)`` returns the item's end."""
    pos = skip(text, expect(text, pos, "["))
    if text[pos : pos + 1] == "]":
        return pos + 1
    while True:
        pos = skip(text, on_item(skip(text, pos)))
        if text[pos : pos + 1] == ",":
            pos += 1
            continue
        return expect(text, pos, "]")


def end_of_document(text: str, pos: int) -> None:
    pos = skip(text, pos)
    if pos < len(text):
        raise Bad("extra data after the JSON document", pos)


def line_number(v: Any, what: str, limits: ParseLimits, pos: int) -> int:
    """A source line number: an int in 1..max_line_number."""
    if type(v) is not int or v < 1 or v > limits.max_line_number:
        raise Bad(
            f"{what} {str(v)[:40]!r} is not a line number in 1..{limits.max_line_number}", pos
        )
    return v


def whole_count(v: Any) -> int | None:
    """A hit count: a non-negative int (a whole float is accepted); None for
    anything else (a bool, a string, a negative or fractional number)."""
    if type(v) is int and v >= 0:
        return v
    if type(v) is float and v >= 0 and v.is_integer():
        return int(v)
    return None


def count(v: Any, what: str, pos: int) -> int:
    """A hit count (:func:`whole_count`), or ``Bad`` naming ``what``."""
    found = whole_count(v)
    if found is None:
        raise Bad(f"{what} {str(v)[:40]!r} is not a count", pos)
    return found
