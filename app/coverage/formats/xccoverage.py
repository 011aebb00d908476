"""Xcode's ``*.xccoverage`` archive as a plist (``Action.xccoverage`` converted
with ``plutil -convert xml1``, or binary), Codecov's "xcodeplist".

It is an ``NSKeyedArchiver`` archive: every object sits in ``$objects`` and
refers to others by ``CF$UID``. A target (an object with ``sourceFiles``)
lists its source files; a source file names its path (``documentLocation``)
and its ``lines``, one object per source line in order::

    {"documentLocation": UID -> "/w/Calc/Ops.swift", "lines": UID -> [UID, ...]}
    line: {"x": true, "c": 3, "s": UID -> [subrange, ...] or $null}
    subrange: {"c": column, "len": length, "x": count}

Line ``i`` of the list is line ``i + 1``; ``x`` false is not code, else the
line has ``c`` hits. Subranges are the parts of a line Xcode counts apart
(regions, as in llvm-cov), not branches, so they are not read (Codecov reads
them as the line's branches, leaving out those two characters long). A line
whose count cannot be read, or a source file without a path or lines, is
skipped and named on the upload.
"""

from __future__ import annotations

import plistlib
from typing import Any

from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.coverage.paths import PathNormaliser
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
        index = _uid(ref)
        if index is None or not 0 < index < len(self.objects):
            return None
        found = self.objects[index]
        return None if found == "$null" else found

    def array(self, ref: Any) -> list[Any] | None:
        found = self.get(ref)
        items = found.get("NS.objects") if isinstance(found, dict) else None
        return items if isinstance(items, list) else None


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    try:
        doc = plistlib.loads(raw)
    except (plistlib.InvalidFileException, ValueError, TypeError, IndexError, KeyError) as exc:
        raise MalformedReport(FMT, f"not a readable plist: {str(exc)[:200]}") from None
    objects = doc.get("$objects") if isinstance(doc, dict) else None
    if not isinstance(objects, list) or doc.get("$archiver") != "NSKeyedArchiver":
        raise MalformedReport(FMT, "the plist is not an NSKeyedArchiver archive ($objects)")
    archive = _Archive(objects)
    report = Report()
    skipped = report.skipped
    normalise = PathNormaliser(roots)
    max_ln, records = limits.max_line_number, 0
    targets = [o for o in objects if isinstance(o, dict) and "sourceFiles" in o]
    if not targets:
        raise MalformedReport(FMT, "the archive holds no target with sourceFiles")
    for target in targets:
        for ref in archive.array(target["sourceFiles"]) or ():
            source = archive.get(ref)
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
    archive: _Archive, refs: list[Any], path: str, skipped: SkippedRecords
) -> dict[int, int]:
    counts: dict[int, int] = {}
    for ln, ref in enumerate(refs, start=1):
        line = archive.get(ref)
        if not isinstance(line, dict):
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
