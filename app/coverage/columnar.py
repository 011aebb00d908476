"""The finisher's merge, column by column: decode, merge and encode without per-line objects.

A merge pass reads the commit's merged report and every upload's
intermediate (the serialised form of :mod:`app.coverage.codec`), merges
them and writes the merged report back. Going through :class:`Report`
costs a dict entry per line on every decode, a dict update per line on
every merge and a Python loop per line on every encode, about 1 µs per line
record in all. Here a file is two parallel lists, its line numbers and
their hits, as the serialised form already holds them (``flat[0::2]``,
``flat[1::2]``: slices, done in C), plus its branch lines as a dict:

- merging a file whose line numbers equal the merged file's (the common
  case: every job of a matrix reports the same instrumented lines) is one
  ``list(map(add, hits, more))``, in C; other files go through a dict, as
  :meth:`FileCoverage.merge` does, keeping its order (the merged lines
  first, new lines after);
- branch lines merge with :meth:`Branches.merged`, exactly as in the model;
  decoded branch values are interned, so identical lines of different
  uploads are the same object and their merge returns at once;
- the totals count misses with ``list.count(0)``; the encoding interleaves
  the two lists by slice assignment.

The lists are never changed in place once built (a merge makes new ones),
so a decoded upload can be merged into several reports (the commit's and
each flag's) without copies. The result is the same report
:meth:`Report.merge` gives (``tests/app/coverage/test_columnar.py`` checks it
against the model on the public corpus and on generated reports), so the
merge stays associative and commutative.
"""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from collections.abc import Iterable
from itertools import chain
from operator import add
from typing import Any

from app.coverage.model import Branches, FileCoverage, Report, Totals
from app.coverage.serial import IdSets, stored_branch

#: First bytes of a version 4 report, after zlib.
MAGIC_V4 = b"CWR\x04"
#: Bytes of the header length after ``MAGIC_V4``.
_HEADER_LENGTH = 4
#: Most entries of the branch-merge memo per process (then it starts over).
MERGE_MEMO_LIMIT = 1 << 16
_MERGED: dict[tuple[int, int], tuple[Branches, Branches, Branches]] = {}

#: Most interned branch values kept per process (then the table starts over).
INTERN_LIMIT = 1 << 16
_INTERNED: dict[tuple[Any, ...], Branches] = {}

#: One file: line numbers, their hits (same length), branch lines.
Columns = tuple[list[int], list[int], dict[int, Branches]]


def file_counts(columns: Columns) -> tuple[int, int, int, int]:
    """One file's line records, misses, partials (lines hit with a branch
    missed) and branch lines (line records that carry branches); its hits are
    the rest, as in :func:`app.coverage.model.file_totals`. A branch record
    on a line that is no line record counts in neither."""
    lns, hits, br = columns
    if not br:
        return len(lns), hits.count(0), 0, 0
    found, partials = _branch_lines(lns, hits, br)
    return len(lns), hits.count(0), partials, found


def line_counts(columns: Columns) -> tuple[int, int, int]:
    """:func:`file_counts` without the branch lines."""
    n, missed, partials, _ = file_counts(columns)
    return n, missed, partials


def branch_lines(columns: Columns) -> int:
    """:func:`file_counts`' branch lines (``Totals.branches``)."""
    return file_counts(columns)[3]


#: Look-ups of an out-of-order line :func:`_branch_lines` makes from the
#: start of a file before it reads the file through a dict instead.
HIT_LINE_RESTARTS = 8


def _branch_lines(lns: list[int], hits: list[int], br: dict[int, Branches]) -> tuple[int, int]:
    """How many of the lines of ``br`` are in ``lns``, and how many of those
    are hit with a branch missed. Both are in line order nearly always, so
    each line is looked for from where the previous one was found
    (``list.index``, in C): one walk over the file, where a dict of every
    line (the merge pass totals the whole report each pass) would cost a
    Python object per line. Lines out of order are looked for from the
    start, ``HIT_LINE_RESTARTS`` times at most; then the rest go through the
    dict."""
    found = partials = at = restarts = 0
    index = lns.index
    items = list(br.items())
    for k, (ln, b) in enumerate(items):
        try:
            at = index(ln, at)
        except ValueError:
            restarts += 1
            if restarts > HIT_LINE_RESTARTS:
                by_line = dict(zip(lns, hits, strict=True))
                for ln_, b_ in items[k:]:
                    count = by_line.get(ln_)
                    if count is not None:
                        found += 1
                        partials += count > 0 and b_.covered < b_.total
                return found, partials
            try:
                at = index(ln)
            except ValueError:  # not an instrumented line
                at = 0
                continue
        found += 1
        if b.covered < b.total and hits[at] > 0:
            partials += 1
    return found, partials


class Part:
    """One decoded serialised report, ready to merge (not to be changed)."""

    __slots__ = ("files",)

    def __init__(self, files: dict[str, Columns]) -> None:
        self.files = files

    @classmethod
    def from_report(cls, report: Report) -> Part:
        return cls(
            {
                path: (list(fc.lines), list(fc.lines.values()), dict(fc.branches))
                for path, fc in report.files.items()
            }
        )

    def to_report(self) -> Report:
        return Report(
            {
                path: FileCoverage(dict(zip(lns, hits, strict=True)), dict(br))
                for path, (lns, hits, br) in self.files.items()
            }
        )


def _branch(key: tuple[Any, ...], sets: list[frozenset[str]]) -> Branches:
    value = stored_branch(sets, *key)
    found = _INTERNED.get(value)
    if found is None:
        if len(_INTERNED) >= INTERN_LIMIT:
            _INTERNED.clear()
        found = _INTERNED[value] = Branches._trusted(*value)  # counts were stored computed
    return found


#: Bytes decompressed at a time while decoding (about a megabyte of columns).
DECODE_BLOCK = 1 << 20


class _Decompressed:
    """A compressed report's bytes, decompressed ``DECODE_BLOCK`` at a time as
    they are read: the columns of a 1,000,000-line report (16 MB and more)
    are never whole in memory beside the Python numbers made of them."""

    __slots__ = ("_at", "_buffer", "_pending", "_unpacker")

    def __init__(self, data: bytes) -> None:
        self._unpacker = zlib.decompressobj()
        self._pending: bytes | None = data  # not yet given to the decompressor
        self._buffer = b""
        self._at = 0

    def _more(self, want: int) -> bytes:
        unpacker, size = self._unpacker, max(want, DECODE_BLOCK)
        if self._pending is not None:
            block, self._pending = unpacker.decompress(self._pending, size), None
        else:
            block = unpacker.decompress(unpacker.unconsumed_tail, size)
        return block or unpacker.flush()

    def read(self, size: int) -> memoryview:
        """The next ``size`` bytes (fewer at the end of the data)."""
        end = self._at + size
        while len(self._buffer) < end and (block := self._more(end - len(self._buffer))):
            self._buffer, end = self._buffer[self._at :] + block, end - self._at
            self._at = 0
        view = memoryview(self._buffer)[self._at : end]
        self._at += len(view)
        return view

    def numbers(self, count: int) -> memoryview | array[int]:
        """The next ``count`` little-endian 64-bit numbers, read where they lie."""
        view = self.read(8 * count)
        if len(view) != 8 * count:
            raise ValueError("corrupt serialised report: truncated columns")
        if sys.byteorder == "little":
            return view.cast("q")
        numbers = array("q")
        numbers.frombytes(view)
        numbers.byteswap()
        return numbers

    def at_end(self) -> bool:
        return self._at == len(self._buffer) and not self._more(1)


def decode_v4(data: bytes) -> Part | None:
    """Read the binary form from its compressed bytes, or None if ``data`` is
    not version 4: ``MAGIC_V4``, the header's length (4 bytes,
    little-endian), the JSON header, then every file's line numbers, hits and
    branch records as one array of little-endian 64-bit integers.

    The array is decompressed a block at a time and Python numbers are made
    per file's column (``tolist`` of its slice), so a pass decoding a
    1,000,000-line report holds its lists and about a megabyte of columns,
    not its 16 MB of columns as well."""
    body = _Decompressed(data)
    if body.read(len(MAGIC_V4)) != MAGIC_V4:
        return None
    size = int.from_bytes(body.read(_HEADER_LENGTH), "little")
    header = json.loads(bytes(body.read(size)))
    sets = [frozenset(ids) for ids in header["s"]]
    seen: dict[tuple[Any, ...], Branches] = {}
    files: dict[str, Columns] = {}
    for path, n, nb in header["f"]:
        if not (type(n) is int and type(nb) is int and n >= 0 and nb >= 0):
            raise ValueError(f"corrupt serialised report: bad sizes of {path!r}")
        numbers = body.numbers(2 * n + 7 * nb)
        lns, hits = numbers[:n].tolist(), numbers[n : 2 * n].tolist()
        br: dict[int, Branches] = {}
        if nb:
            # Column slices and zips, done in C; a Branches only per distinct record.
            rec = numbers[2 * n :].tolist()
            keys = list(zip(*(rec[k::7] for k in range(1, 7)), strict=True))
            for key in set(keys).difference(seen):
                seen[key] = _branch(key, sets)
            br = dict(zip(rec[0::7], map(seen.__getitem__, keys), strict=True))
        files[path] = (lns, hits, br)
    if not body.at_end():
        raise ValueError("corrupt serialised report: the columns do not match the header")
    return Part(files)


def file_columns_v4(
    raw: bytes, path: str
) -> tuple[array[int], array[int], dict[int, Branches]] | None:
    """One file of a version 4 report (``raw``: after ``zlib``; None if it has
    no such file), its line numbers and hits as arrays of 64-bit numbers:
    only that file's columns are read, and no Python number is made per line
    (the file page of a file of a million lines)."""
    at = len(MAGIC_V4) + _HEADER_LENGTH
    size = int.from_bytes(raw[len(MAGIC_V4) : at], "little")
    header = json.loads(raw[at : at + size])
    offset = at + size
    for name, n, nb in header["f"]:
        if name != path:
            offset += 8 * (2 * n + 7 * nb)
            continue
        numbers = array("q")
        numbers.frombytes(raw[offset : offset + 8 * (2 * n + 7 * nb)])
        if sys.byteorder == "big":
            numbers.byteswap()
        sets = [frozenset(ids) for ids in header["s"]]
        rec = numbers[2 * n :].tolist()  # branch lines only: few
        branches = {rec[k]: _branch(tuple(rec[k + 1 : k + 7]), sets) for k in range(0, len(rec), 7)}
        return numbers[:n], numbers[n : 2 * n], branches
    return None


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
    return MAGIC_V4 + len(header).to_bytes(_HEADER_LENGTH, "little") + header


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
            files[path] = _read_file(self._numbers, i, n, nb, sets)
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
                columns = _read_file(numbers, i, n, nb, sets)
                for repeat in more:
                    columns = _merge(columns, repeat)
                lns, hits, br = columns
                self._append(merged, lns, hits, br)
                heads.append([path, len(lns), len(br)])
            i = end
        self._numbers, self._heads, self._repeats = merged, heads, {}


def _read_file(numbers: array[int], i: int, n: int, nb: int, sets: list[frozenset[str]]) -> Columns:
    """The columns of the file whose numbers start at ``numbers[i]``."""
    rec = numbers[i + 2 * n : i + 2 * n + 7 * nb].tolist()
    br = {rec[k]: _branch(tuple(rec[k + 1 : k + 7]), sets) for k in range(0, len(rec), 7)}
    return numbers[i : i + n].tolist(), numbers[i + n : i + 2 * n].tolist(), br


def decode_v3(payload: dict[str, Any]) -> Part:
    sets = [frozenset(ids) for ids in payload["s"]]
    seen: dict[tuple[Any, ...], Branches] = {}
    files: dict[str, Columns] = {}
    for path, (flat, branches) in payload["f"].items():
        if len(flat) % 2 or len(branches) % 7:
            raise ValueError(f"corrupt serialised report: odd columns in {path!r}")
        br: dict[int, Branches] = {}
        for i in range(0, len(branches), 7):
            key = tuple(branches[i + 1 : i + 7])
            value = seen.get(key)
            if value is None:
                value = seen[key] = _branch(key, sets)
            br[branches[i]] = value
        files[path] = (flat[0::2], flat[1::2], br)
    return Part(files)


class Accumulator:
    """A report being merged: ``add`` parts, then ``totals``; ``codec.dump_columns``
    writes its ``files``."""

    __slots__ = ("files",)

    def __init__(self) -> None:
        self.files: dict[str, Columns] = {}

    def add(self, part: Part) -> None:
        """Merge ``part`` in (``part`` is not changed and may be added elsewhere too)."""
        files = self.files
        for path, theirs in part.files.items():
            mine = files.get(path)
            files[path] = theirs if mine is None else _merge(mine, theirs)

    def to_report(self) -> Report:
        return Report(
            {
                path: FileCoverage(dict(zip(lns, hits, strict=True)), dict(br))
                for path, (lns, hits, br) in self.files.items()
            }
        )

    def totals(self) -> Totals:
        """As :meth:`Report.totals`: a line is a miss, a partial (hit, a branch missed) or a hit."""
        lines = hits_ = misses = partials = branches = 0
        for columns in self.files.values():
            n, missed, part, branch = file_counts(columns)
            lines += n
            misses += missed
            partials += part
            hits_ += n - missed - part
            branches += branch
        return Totals(len(self.files), lines, hits_, misses, partials, branches)


def _merge(mine: Columns, theirs: Columns) -> Columns:
    lns, hits, br = mine
    their_lns, their_hits, their_br = theirs
    if lns is their_lns or lns == their_lns:
        lns, hits = lns, list(map(add, hits, their_hits))
    else:
        merged = dict(zip(lns, hits, strict=True))
        hits_of = merged.get
        for ln, n in zip(their_lns, their_hits, strict=True):
            merged[ln] = hits_of(ln, 0) + n
        lns, hits = list(merged), list(merged.values())
    if their_br:
        if not br:
            br = their_br
        else:
            br = dict(br)
            branch_of = br.get
            for ln, b in their_br.items():
                old = branch_of(ln)
                br[ln] = b if old is None else _merge_branches(old, b)
    return lns, hits, br


def _merge_branches(a: Branches, b: Branches) -> Branches:
    """``a.merged(b)``, memoised by identity: decoded values are interned, so the
    same pairs recur (the memo holds both, so their ids cannot be reused)."""
    if a is b:
        return a
    key = (id(a), id(b))
    hit = _MERGED.get(key)
    if hit is not None and hit[0] is a and hit[1] is b:
        return hit[2]
    merged = a.merged(b)
    if len(_MERGED) >= MERGE_MEMO_LIMIT:
        _MERGED.clear()
    _MERGED[key] = (a, b, merged)
    return merged
