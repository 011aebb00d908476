"""A report's serialised form: which version is written, and every version read.

The serialised form is the intermediate kept in Redis per upload and the
merged report kept per commit (and per flag). Version 4 (binary columns,
:mod:`app.coverage.columnar`) is written; version 3 (JSON,
:mod:`app.coverage.serial`) is written when a count does not fit 64 bits;
versions 1 to 4 are read. Compact, zlib-compressed, never pickle. A blob
that cannot be read is a ``ValueError`` naming the problem.

This module is the one place that knows the versions: the format modules
import only :mod:`app.coverage.model`, and everything else imports this.
"""

from __future__ import annotations

import json
import zlib
from array import array
from typing import Any

from app.coverage.columnar import MAGIC_V4, Columns, Part
from app.coverage.columnar_read import decode_v3, decode_v4, file_columns_v4
from app.coverage.columnar_write import ColumnWriter, encode, encode_report
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.serial import VERSION_V3, dump_v3, load_v1, load_v2, load_v3
from app.coverage.skipped import SkippedRecords

#: The version written (``VERSION_V3`` when a count does not fit 64 bits).
VERSION = 4
#: The largest count the columns hold (64-bit signed); larger ones are shown as this.
MAX_COUNT = 2**63 - 1
#: Versions that JSON payloads carry, and their readers.
_JSON_READERS = {3: load_v3, 2: load_v2, 1: load_v1}

__all__ = [
    "MAGIC_V4",
    "VERSION",
    "VERSION_V3",
    "IntermediateWriter",
    "dump",
    "dump_columns",
    "file_columns",
    "load",
    "load_part",
]


def dump(report: Report) -> bytes:
    """Version 4 (binary columns); version 3 if a count does not fit 64 bits."""
    try:
        return encode_report(report)
    except OverflowError:
        return dump_v3(report)


class IntermediateWriter:
    """A report's serialised form written as a parser hands on its files
    (:class:`~app.coverage.model.FileSink`), without the whole report as
    objects: what :func:`dump` of the parsed report would give (less its
    files without lines, which an upload does not keep), version 4,
    or version 3 once a count does not fit 64 bits (from then on the files
    are kept as a :class:`Report`, as :func:`dump` would have)."""

    __slots__ = ("_sink", "skipped", "warnings")

    def __init__(self) -> None:
        self._sink: ColumnWriter | Report = ColumnWriter()
        self.warnings: list[str] = []
        self.skipped = SkippedRecords()

    def add_file(self, path: str, fc: FileCoverage, bases: tuple[str, ...] = ()) -> None:
        if not fc.lines:  # as Codecov's report: a file without lines is not kept
            return
        if isinstance(self._sink, ColumnWriter):
            try:
                self._sink.add_file(path, fc)
                return
            except OverflowError:  # nothing of the file was kept
                self._sink = self._sink.to_report()
        self._sink.add_file(path, fc)

    def __contains__(self, path: object) -> bool:
        return path in self._sink

    def file_count(self) -> int:
        return self._sink.file_count()

    def finish(self) -> bytes:
        if isinstance(self._sink, ColumnWriter):
            try:
                return self._sink.finish()
            except OverflowError:  # two sections' counts added past 64 bits
                self._sink = self._sink.to_report()
        return dump_v3(self._sink)


def dump_columns(files: dict[str, Columns], report: Report | None = None) -> bytes:
    """Version 4 of merged columns (``Accumulator.files``), else version 3."""
    try:
        return encode(files)
    except OverflowError:
        return dump_v3(report if report is not None else Part(files).to_report())


def load(data: bytes) -> Report:
    """Any version as a :class:`Report`; corruption is a ``ValueError``."""
    try:
        part = decode_v4(data)
        if part is not None:
            return part.to_report()
        payload = json.loads(zlib.decompress(data))
        version = payload.get("v") if isinstance(payload, dict) else None
        reader = _JSON_READERS.get(version) if isinstance(version, int) else None
        if reader is None:
            raise ValueError(f"unsupported serialised report version {version!r}")
        return reader(payload)
    except ValueError:
        raise
    except (zlib.error, TypeError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        raise ValueError(f"corrupt serialised report: {exc!r}") from exc


def load_part(data: bytes) -> Part:
    """Any version as a :class:`Part`, ready to merge, without a ``Report`` for
    versions 3 and 4; corruption is a ``ValueError`` (as :func:`load`)."""
    try:
        part = decode_v4(data)
        if part is not None:
            return part
        payload = json.loads(zlib.decompress(data))
        if isinstance(payload, dict) and payload.get("v") == VERSION_V3:
            return decode_v3(payload)
    except ValueError:
        raise
    except (zlib.error, TypeError, KeyError, AttributeError, IndexError) as exc:
        raise ValueError(f"corrupt serialised report: {exc!r}") from exc
    return Part.from_report(load(data))  # older versions, and the version's error


def file_columns(
    data: bytes, path: str
) -> tuple[array[int], array[int], dict[int, Branches]] | None:
    """One file of a serialised report (None if it has no such file): only that
    file's columns are read from version 4; older versions are decoded whole."""
    try:
        raw = zlib.decompress(data)
    except zlib.error as exc:
        raise ValueError(f"corrupt serialised report: {exc!r}") from exc
    if raw.startswith(MAGIC_V4):
        return file_columns_v4(raw, path)
    columns: Any = load_part(data).files.get(path)
    if columns is None:
        return None
    lns, hits, br = columns
    # Only the older forms hold counts past 64 bits (version 4 cannot, so
    # such a report is written in version 3): shown at the largest one.
    return array("q", lns), array("q", (min(h, MAX_COUNT) for h in hits)), br
