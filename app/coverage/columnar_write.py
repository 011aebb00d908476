"""Writing columns in the binary form (version 4): a merged report encoded a
block at a time, and :class:`ColumnWriter`, which a parser writes into
without building its :class:`~app.coverage.model.Report`."""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from collections.abc import Iterable
from itertools import chain
from typing import Any

from app.coverage.columnar import HEADER_LENGTH, MAGIC_V4, Columns, merge_columns
from app.coverage.columnar_read import read_file
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.serial import IdSets

#: Numbers compressed at a time while encoding (about a megabyte).
ENCODE_BLOCK = 1 << 17


def encode(files: dict[str, Columns]) -> bytes:
    """The binary form of ``files`` (see :func:`decode_v4`), zlib-compressed,
    as :class:`ColumnWriter` writes it. The sizes of every file are known
    here, so the header is written first and the columns are compressed
    ``ENCODE_BLOCK`` numbers at a time: a merge pass never holds the 16 MB
    and more of a 1,000,000-line report's columns at once beside its lists.
    ``OverflowError``: a count does not fit 64 bits (nothing is returned)."""
    sets, records = IdSets(), array("q")
    branch_lines = [br for _lns, _hits, br in files.values()]
    for at in range(0, len(branch_lines), RECORD_FILES):
        records.extend(_branch_records(sets, branch_lines[at : at + RECORD_FILES]))
    heads = [[path, len(lns), len(br)] for path, (lns, _hits, br) in files.items()]
    head = _head(sets.table, heads)  # after the records: their id sets are in it
    packer = zlib.compressobj(1)
    pieces = [packer.compress(head)]
    block, at = array("q"), 0
    for lns, hits, br in files.values():
        block.fromlist(lns)  # from a list, in C: half the time of ``extend``
        block.fromlist(hits)
        block.extend(records[at : at + 7 * len(br)])
        at += 7 * len(br)
        if len(block) >= ENCODE_BLOCK:
            pieces.append(_compressed(packer, block))
            block = array("q")
    pieces.append(_compressed(packer, block))
    pieces.append(packer.flush())
    return b"".join(pieces)


#: Files whose branch records are laid out at once while encoding (the
#: transient lists then hold a few thousand files' records, not the report's).
RECORD_FILES = 2048


def _branch_records(sets: IdSets, branch_lines: list[dict[int, Branches]]) -> array[int]:
    """The seven stored numbers of every branch line of ``branch_lines`` (one
    dict per file), in order, their id sets indexed in ``sets``. Decoded
    branch values are interned (and merges of them memoised), so a report of
    100,000 branch lines holds a few distinct values: each is stored once,
    then the records are laid out for all files at once (``map`` and slice
    assignment, in C) instead of a Python call per branch line."""
    values = list(chain.from_iterable(br.values() for br in branch_lines))
    ids = list(map(id, values))  # ``values`` keeps them alive: ids are not reused
    distinct = dict(zip(ids, values, strict=True))  # in order of first use: the table's order
    stored = {key: sets.record(0, b) for key, b in distinct.items()}
    flat = list(chain.from_iterable(map(stored.__getitem__, ids)))
    flat[0::7] = chain.from_iterable(branch_lines)  # each record's line number
    records = array("q")
    records.fromlist(flat)
    return records


def _head(table: list[list[str]], heads: list[list[Any]]) -> bytes:
    """``MAGIC_V4``, the header's length and the JSON header: the id sets'
    ``table`` and each file's path and sizes. Made before the compressor, so
    the JSON's transient strings and zlib's state are not held at once."""
    header = json.dumps({"v": 4, "s": table, "f": heads}, separators=(",", ":")).encode()
    return MAGIC_V4 + len(header).to_bytes(HEADER_LENGTH, "little") + header


def _compressed(packer: Any, block: array[int]) -> bytes:
    """``block``'s numbers, little-endian, through ``packer`` (where they lie)."""
    if sys.byteorder == "big":
        block.byteswap()
    return packer.compress(block)


def encode_report(report: Report) -> bytes:
    """The binary form of ``report``, read straight from its files' dicts: no
    column lists are built first (a parsed upload is written once, so copying
    its 1,000,000 lines into lists only to copy them again would be waste)."""
    writer = ColumnWriter()
    for path, fc in report.files.items():
        writer.add_file(path, fc)
    return writer.finish()


class ColumnWriter:
    """The binary form written file by file, as a parser finishes each one.

    A parser that hands its files here as it finishes them (``add_file``,
    through :class:`app.coverage.codec.IntermediateWriter`, the parsers'
    :class:`~app.coverage.model.FileSink`) never holds the whole report as
    Python objects: each file's numbers go straight into one array of 64-bit
    integers, about 16 bytes a line where a parsed :class:`Report` holds
    about 60. A file added twice
    (the same path in two sections of an LCOV report, two coverage files of
    one payload) is merged when the form is finished, exactly as
    :meth:`Report.merge` would. ``OverflowError`` from ``add_file`` means a
    count does not fit 64 bits: nothing of that file was kept, and the caller
    writes the report in version 3 instead (:class:`app.coverage.codec.IntermediateWriter`).
    """

    __slots__ = ("_heads", "_numbers", "_repeats", "_seen", "_sets")

    def __init__(self) -> None:
        self._sets = IdSets()
        self._heads: list[list[Any]] = []
        self._numbers = array("q")
        self._seen: set[str] = set()
        #: Files added again, merged into the first when the form is finished.
        self._repeats: dict[str, list[Columns]] = {}

    def __contains__(self, path: object) -> bool:
        return path in self._seen

    def file_count(self) -> int:
        return len(self._seen)

    def add_file(self, path: str, fc: FileCoverage, bases: tuple[str, ...] = ()) -> None:
        """Add one file's coverage (``fc`` is not kept; ``bases`` are not used)."""
        lines = fc.lines
        if path in self._seen:
            self._repeat(path, list(lines), list(lines.values()), dict(fc.branches))
            return
        self.add_columns(path, lines.keys(), lines.values(), len(lines), fc.branches)

    def add_columns(
        self, path: str, lns: Iterable[int], hits: Iterable[int], n: int, br: dict[int, Branches]
    ) -> None:
        """Add one file given as columns (``n`` line numbers and their hits)."""
        if path in self._seen:
            self._repeat(path, list(lns), list(hits), dict(br))
            return
        self._append(self._numbers, lns, hits, br)
        self._heads.append([path, n, len(br)])
        self._seen.add(path)

    def _append(
        self, numbers: array[int], lns: Iterable[int], hits: Iterable[int], br: dict[int, Branches]
    ) -> None:
        """One file's numbers onto ``numbers``: all of them, or (``OverflowError``) none."""
        size = len(numbers)
        try:
            numbers.extend(lns)
            numbers.extend(hits)
            record = self._sets.record
            for ln, b in br.items():
                numbers.extend(record(ln, b))
        except OverflowError:
            del numbers[size:]
            raise

    def _repeat(self, path: str, lns: list[int], hits: list[int], br: dict[int, Branches]) -> None:
        for hit in hits:  # as ``add_columns``: a count past 64 bits is the caller's to handle
            if not -(1 << 63) <= hit < 1 << 63:
                raise OverflowError(f"count {hit} of {path!r} does not fit 64 bits")
        self._repeats.setdefault(path, []).append((lns, hits, br))

    def finish(self) -> bytes:
        """The compressed form: the numbers compressed where they lie (no
        ``tobytes`` copy, no joined copy of header and body)."""
        if self._repeats:
            self._merge_repeats()
        head = _head(self._sets.table, self._heads)
        packer = zlib.compressobj(1)
        pieces = [packer.compress(head)]
        pieces.append(_compressed(packer, self._numbers))
        pieces.append(packer.flush())
        return b"".join(pieces)

    def to_report(self) -> Report:
        """What was added so far, as a :class:`Report` (repeats merged as
        :meth:`Report.merge` merges them, in Python numbers): for the caller
        that switches to version 3 after an ``OverflowError``."""
        report = Report()
        for path, (lns, hits, br) in self._columns().items():
            report.files[path] = FileCoverage(dict(zip(lns, hits, strict=True)), br)
        for path, more in self._repeats.items():
            for lns, hits, br in more:
                report.files[path].merge(FileCoverage(dict(zip(lns, hits, strict=True)), br))
        return report

    def _columns(self) -> dict[str, Columns]:
        """The files written so far, read back from the numbers (repeats not merged)."""
        files: dict[str, Columns] = {}
        i, sets = 0, [frozenset(ids) for ids in self._sets.table]
        for path, n, nb in self._heads:
            files[path] = read_file(self._numbers, i, n, nb, sets)
            i += 2 * n + 7 * nb
        return files

    def _merge_repeats(self) -> None:
        """Rewrite the numbers with each repeated file merged: the others' are
        copied as they are (slices, in C), only the repeated files are read
        back. A merged count past 64 bits raises ``OverflowError`` and leaves
        the writer as it was."""
        numbers, merged, heads = self._numbers, array("q"), []
        sets: list[frozenset[str]] | None = None
        i = 0
        for path, n, nb in self._heads:
            end = i + 2 * n + 7 * nb
            more = self._repeats.get(path)
            if more is None:
                merged.extend(numbers[i:end])
                heads.append([path, n, nb])
            else:
                sets = sets or [frozenset(ids) for ids in self._sets.table]
                columns = read_file(numbers, i, n, nb, sets)
                for repeat in more:
                    columns = merge_columns(columns, repeat)
                lns, hits, br = columns
                self._append(merged, lns, hits, br)
                heads.append([path, len(lns), len(br)])
            i = end
        self._numbers, self._heads, self._repeats = merged, heads, {}
