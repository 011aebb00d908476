"""Reading a stored report into columns: the binary form (version 4, decoded a
block at a time, or one file of it) and the JSON form (version 3)."""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from typing import Any

from app.coverage.columnar import HEADER_LENGTH, MAGIC_V4, Columns, Part
from app.coverage.model import Branches
from app.coverage.serial import stored_branch

#: Most interned branch values kept per process (then the table starts over).
INTERN_LIMIT = 1 << 16


_INTERNED: dict[tuple[Any, ...], Branches] = {}


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
    size = int.from_bytes(body.read(HEADER_LENGTH), "little")
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
    at = len(MAGIC_V4) + HEADER_LENGTH
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


def read_file(numbers: array[int], i: int, n: int, nb: int, sets: list[frozenset[str]]) -> Columns:
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
