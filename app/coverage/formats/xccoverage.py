"""Xcode's ``*.xccoverage`` archive as a plist (``Action.xccoverage`` converted
with ``plutil -convert xml1``, or binary), Codecov's "xcodeplist".

It is an ``NSKeyedArchiver`` archive: every object sits in ``$objects`` and
refers to others by ``CF$UID``. A target (an object with ``sourceFiles``)
lists its source files; a source file names its path (``documentLocation``)
and its ``lines``, one object per source line in order::

    {"documentLocation": UID -> "/w/Calc/Ops.swift", "lines": UID -> [UID, ...]}
    line: {"x": true, "c": 3, "s": UID -> [subrange, ...] or $null}
    subrange: {"c": column, "len": length, "x": count}

An XML archive in the shape ``plutil`` writes (keys sorted, ``$archiver``
first, every object a string, a dict of numbers, booleans, strings and
references, or an array of references) is read with regular expressions,
after the safe XML parser has checked it (``safexml.check``): several times
faster than ``plistlib``, with the same values; any other plist is read by
``plistlib``. The line objects, nearly all of an archive, are found by
splitting it at each of them in one pass and kept as their two values
(count, ``x``) without a dict each; an array's references as a tuple of
object indices.

Line ``i`` of the list is line ``i + 1``; ``x`` false is not code, else the
line has ``c`` hits. Subranges are the parts of a line Xcode counts apart
(regions, as in llvm-cov), not branches, so they are not read (Codecov reads
them as the line's branches, leaving out those two characters long). A line
whose count cannot be read, or a source file without a path or lines, is
skipped and named on the upload.
"""

from __future__ import annotations

import plistlib
import re
from typing import Any, cast

from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.coverage.paths import PathNormaliser
from app.coverage.safexml import check
from app.coverage.skipped import SkippedRecords
from app.errors import MalformedReport

FMT = "xccoverage plist"


def _uid(ref: Any) -> int | None:
    """The object index a reference names: a binary plist's ``UID``, or an XML
    plist's ``{"CF$UID": n}``; None for anything else."""
    if isinstance(ref, plistlib.UID):
        return ref.data
    if isinstance(ref, dict) and len(ref) == 1 and type(ref.get("CF$UID")) is int:
        return int(ref["CF$UID"])
    return None


class _Archive:
    def __init__(self, objects: list[Any]) -> None:
        self.objects = objects

    def get(self, ref: Any) -> Any:
        """The object ``ref`` names (None for ``$null`` or a bad reference)."""
        return self.at(_uid(ref))

    def at(self, index: int | None) -> Any:
        """The object at ``index`` (None for ``$null`` or a bad index)."""
        if index is None or not 0 < index < len(self.objects):
            return None
        found = self.objects[index]
        return None if found == "$null" else found

    def array(self, ref: Any) -> tuple[int | None, ...] | None:
        """The object indices an array ``ref`` names lists (None for a bad reference)."""
        found = self.get(ref)
        items = found.get("NS.objects") if isinstance(found, dict) else None
        if isinstance(items, tuple):  # the plutil reader's: indices already
            return items
        return tuple(_uid(item) for item in items) if isinstance(items, list) else None


_UID = rb"<dict>\s*<key>CF\$UID</key>\s*<integer>(\d+)</integer>\s*</dict>"
_ANY_UID = _UID.replace(rb"(\d+)", rb"\d+")
_PAIR = (
    rb"<key>[^<&]*</key>\s*(?:<integer>-?\d+</integer>|<true/>|<false/>|<string>[^<&]*</string>"
    rb"|<string/>|<array>(?:\s*<string>[^<&]*</string>)*\s*</array>|" + _ANY_UID + rb")\s*"
)
#: A line object: {"$class": UID, "c": count, "s": UID, "x": bool}, keys
#: sorted; the groups are its count and ``x``. It begins with a literal, so
#: that splitting an archive at every line object searches for it quickly.
_W = rb"\s*+"
_LINE_UID = (
    rb"<dict>" + _W + rb"<key>CF\$UID</key>" + _W + rb"<integer>\d++</integer>" + _W + rb"</dict>"
)
_LINE = re.compile(
    rb"<dict>" + _W + rb"<key>\$class</key>" + _W + _LINE_UID + _W + rb"<key>c</key>" + _W
    + rb"<integer>(\d++)</integer>" + _W + rb"<key>s</key>" + _W + _LINE_UID + _W
    + rb"<key>x</key>" + _W + rb"<(true|false)/>" + _W + rb"</dict>"
)  # fmt: skip
_DICT = re.compile(rb"\s*<dict>\s*((?:" + _PAIR + rb")*)</dict>")
_ARRAY = re.compile(
    rb"\s*<dict>\s*((?:"
    + _PAIR
    + rb")*)<key>NS\.objects</key>\s*<array>\s*((?:"
    + _ANY_UID
    + rb"\s*)*)</array>\s*((?:"
    + _PAIR
    + rb")*)</dict>"
)
#: Text is read without an ``&`` (an entity or character reference, which
#: plistlib decodes): an archive that has one is not in plutil's shape.
_STRING = re.compile(rb"\s*<string>([^<&]*)</string>|\s*(<string/>)")
_END = re.compile(rb"\s*</array>")
_PAIRS = re.compile(
    rb"<key>([^<]*)</key>\s*(?:<integer>(-?\d+)</integer>|<(true|false)/>"
    rb"|<string>([^<]*)</string>|(<string/>)|<array>((?:\s*<string>[^<]*</string>)*)\s*</array>"
    rb"|" + _UID + rb")"
)
_STRINGS = re.compile(rb"<string>([^<]*)</string>")
_UIDS = re.compile(rb"<integer>(\d+)</integer>")
#: plutil's XML: the prolog, then $archiver and $objects first.
_HEAD = re.compile(
    rb"(?:<\?xml[^>]*\?>)?\s*(?:<!DOCTYPE[^>\[]*>)?\s*<plist[^>]*>\s*<dict>\s*"
    rb"<key>\$archiver</key>\s*<string>NSKeyedArchiver</string>\s*<key>\$objects</key>\s*<array>"
)


def _pairs(body: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in _PAIRS.finditer(body):
        name, kind = m[1].decode(), m.lastindex
        if kind == 2:
            out[name] = int(m[2])
        elif kind == 3:
            out[name] = m[3] == b"true"
        elif kind == 7:
            out[name] = {"CF$UID": int(m[7])}
        elif kind == 6:
            out[name] = [s.decode() for s in _STRINGS.findall(m[6])]
        else:  # a string; "" for <string/>
            out[name] = (m[4] or b"").decode()
    return out


def _plutil_objects(raw: bytes) -> list[Any] | None:
    """``$objects`` of an archive in plutil's shape, None if it is in another.

    The archive is split at every line object (one pass, no Python per line):
    the pieces between two line objects are blank but for a few, which hold
    the other objects and are read one object at a time. A line object is
    kept as its count and ``x`` (bytes), an array's references as a tuple of
    indices."""
    head = _HEAD.match(raw)
    if head is None:
        return None
    pieces = _LINE.split(raw)
    between, counts, executable = pieces[0::3], pieces[1::3], pieces[2::3]
    out: list[Any] = []
    taken = 0  # line objects in out
    for i in [i for i, piece in enumerate(between) if piece.strip()]:
        out.extend(zip(counts[taken:i], executable[taken:i], strict=True))
        taken = i
        ended = _others(between[i], head.end() if i == 0 else 0, out)
        if ended is None:
            return None
        if ended:
            return out
    return None


def _others(piece: bytes, pos: int, out: list[Any]) -> bool | None:
    """The objects other than line objects in ``piece`` from ``pos`` into
    ``out``: True if ``$objects`` ends in it, False if it holds nothing more,
    None for anything that is not an object in plutil's shape."""
    array, plain, string = _ARRAY.match, _DICT.match, _STRING.match
    while True:
        if m := string(piece, pos):
            out.append((m[1] or b"").decode())
        elif m := array(piece, pos):
            found = _pairs(m[1])
            found.update(_pairs(m[3]))
            found["NS.objects"] = tuple(map(int, _UIDS.findall(m[2])))
            out.append(found)
        elif m := plain(piece, pos):
            out.append(_pairs(m[1]))
        elif _END.match(piece, pos):
            return True
        else:
            return False if not piece[pos:].strip() else None
        pos = m.end()


def _objects(raw: bytes) -> list[Any]:
    """The archive's ``$objects``."""
    if not raw.startswith(b"bplist"):
        check(raw, FMT)
        fast = _plutil_objects(raw)
        if fast is not None:
            return fast
    try:
        doc = plistlib.loads(raw)
    except (plistlib.InvalidFileException, ValueError, TypeError, IndexError, KeyError) as exc:
        raise MalformedReport(FMT, f"not a readable plist: {str(exc)[:200]}") from None
    objects = doc.get("$objects") if isinstance(doc, dict) else None
    if not isinstance(objects, list) or doc.get("$archiver") != "NSKeyedArchiver":
        raise MalformedReport(FMT, "the plist is not an NSKeyedArchiver archive ($objects)")
    return objects


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    objects = _objects(raw)
    archive = _Archive(objects)
    report = Report()
    skipped = report.skipped
    normalise = PathNormaliser(roots)
    max_ln, records = limits.max_line_number, 0
    targets = [o for o in objects if isinstance(o, dict) and "sourceFiles" in o]
    if not targets:
        raise MalformedReport(FMT, "the archive holds no target with sourceFiles")
    for target in targets:
        for index in archive.array(target["sourceFiles"]) or ():
            source = archive.at(index)
            if not isinstance(source, dict):
                skipped.add("a source file that is not an object", "sourceFiles")
                continue
            path = archive.get(source.get("documentLocation"))
            lines = archive.array(source.get("lines"))
            if not isinstance(path, str) or not path.strip() or lines is None:
                skipped.add(f"source file {str(path)[:40]}: no path or no lines", "sourceFiles")
                continue
            if len(lines) > max_ln:
                skipped.add(f"{path[:40]}: more than {max_ln} lines", path)
                continue
            records += len(lines)
            if records > limits.max_lines:
                raise limits.too_many_lines(FMT)
            counts = _lines(archive, lines, path, skipped)
            name = normalise(path)
            mine = report.files.get(name)
            if mine is None:
                if len(report.files) >= limits.max_files:
                    raise limits.too_many_files(FMT)
                report.files[name] = FileCoverage(counts)
            else:
                mine.merge(FileCoverage(counts))
    return report


def _lines(
    archive: _Archive, indices: tuple[int | None, ...], path: str, skipped: SkippedRecords
) -> dict[int, int]:
    objects = archive.objects
    try:  # the hot path: every index an int naming a line the plutil reader kept
        ints = cast("tuple[int, ...]", indices)
        if min(ints) > 0 and max(ints) < len(objects):
            rows = [objects[index] for index in ints]
            if set(map(type, rows)) == {tuple}:
                return {ln: int(c) for ln, (c, x) in enumerate(rows, start=1) if x == b"true"}
    except (TypeError, ValueError):  # no lines, or an index that is None
        pass
    counts: dict[int, int] = {}
    size = len(objects)
    for ln, index in enumerate(indices, start=1):
        line = objects[index] if index is not None and 0 < index < size else None
        if type(line) is tuple:  # (count, x) from the plutil reader
            if line[1] == b"true":
                counts[ln] = int(line[0])
            continue
        if type(line) is not dict:
            skipped.add(f"line {ln}: not a line object", path)
            continue
        executable = line.get("x")
        if executable is False:
            continue
        hits = line.get("c")
        if executable is not True or type(hits) is not int or hits < 0:
            skipped.add(f"line {ln}: x={executable!r} c={hits!r}", path)
            continue
        counts[ln] = hits
    return counts
