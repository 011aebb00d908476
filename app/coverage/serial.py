"""The serialised form of a Report: compact JSON, zlib-compressed, never pickle.

It is the intermediate kept in Redis per upload and the merged report kept
per commit, so it is read on every finisher pass and must be quick to load.
Version 2 stores each distinct branch-id set once (most lines share a few,
like ``{"lcov:0,0", "lcov:0,1"}``) and points to it by index; loading then
builds one shared frozenset per distinct set instead of one per line.
Version 3 adds, per branch line, the missed-identity set and its total
(``missing-branches`` of coverage.py's Cobertura). Versions 1 and 2 (no
missed identities) are still read.

    {"v": 3, "s": [[id, ...], ...],
     "f": {path: [[line, hits, ...],
                  [line, covered, total, cov_set, all_set, missed_set, miss_total, ...]]}}

A set index of -1 means "no identities" (count-only branches).

This module writes version 3 and reads versions 1 to 3 (the JSON forms);
``app/coverage/codec.py`` chooses the version to write and to read.
Version 4, written today, is the same content in binary columns, so a
merge pass decodes a million line records without building a Python
object per number (``app/coverage/columnar_read.py`` reads it,
``columnar_write.py`` writes it):
``zlib(MAGIC_V4 + header length (4 bytes, little-endian) + JSON header
{"v": 4, "s": sets, "f": [[path, lines, branch lines], ...]} + int64
little-endian [line numbers..., hits..., 7 per branch line...] per file)``.
A count that does not fit 64 bits is written as version 3.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from app.coverage.model import Branches, FileCoverage, Report

#: The version tag of the JSON form this module writes.
VERSION_V3 = 3


class IdSets:
    """The branch id sets of a report, each distinct set stored once and
    referred to by its index (-1: none): the table of both stored forms
    (this module's JSON and :mod:`app.coverage.columnar`'s binary one)."""

    __slots__ = ("_found", "table")

    def __init__(self) -> None:
        self._found: dict[frozenset[str], int] = {}
        self.table: list[list[str]] = []

    def index(self, ids: frozenset[str] | None) -> int:
        if ids is None:
            return -1
        found = self._found.get(ids)
        if found is None:
            found = self._found[ids] = len(self.table)
            self.table.append(sorted(ids))
        return found

    def record(self, ln: int, b: Branches) -> tuple[int, int, int, int, int, int, int]:
        """A branch line's seven stored numbers."""
        return (
            ln,
            b.covered,
            b.total,
            self.index(b.covered_ids),
            self.index(b.all_ids),
            self.index(b.missed_ids),
            b.miss_total,
        )


def dump_v3(report: Report) -> bytes:
    """Version 3, the JSON form (written when a count does not fit 64 bits)."""
    sets = IdSets()
    files = {}
    for path, fc in report.files.items():
        flat: list[int] = []
        for ln, hits in fc.lines.items():
            flat += (ln, hits)
        branches: list[int] = []
        for ln, b in fc.branches.items():
            branches += sets.record(ln, b)
        files[path] = [flat, branches]
    payload = json.dumps({"v": VERSION_V3, "s": sets.table, "f": files}, separators=(",", ":"))
    return zlib.compress(payload.encode(), 1)


def _counts(covered: Any, total: Any) -> None:
    if not (type(covered) is int and type(total) is int and 0 <= covered <= total):
        raise ValueError(f"corrupt branch counts {covered!r}/{total!r}")


#: A stored branch line as :meth:`Branches._trusted` takes it: covered, total,
#: the covered, all and missed identity sets, the missed identities' total.
StoredBranch = tuple[
    int, int, frozenset[str] | None, frozenset[str] | None, frozenset[str] | None, int
]


def stored_branch(
    sets: list[frozenset[str]],
    cov: Any,
    tot: Any,
    cidx: int,
    aidx: int,
    midx: int = -1,
    mtot: Any = 0,
) -> StoredBranch:
    """A stored branch line (counts, indexes into ``sets`` with -1 for none) of
    versions 2 to 4, its counts checked: a corrupt one raises ``ValueError``.
    Version 2 stores no missed identities."""
    _counts(cov, tot)
    _counts(0, mtot)
    return (
        cov,
        tot,
        sets[cidx] if cidx >= 0 else None,
        sets[aidx] if aidx >= 0 else None,
        sets[midx] if midx >= 0 else None,
        mtot,
    )


def _load_indexed(payload: dict[str, Any], width: int) -> Report:
    """Versions 2 and 3: branch lines of ``width`` numbers each (the line first)."""
    sets = [frozenset(ids) for ids in payload["s"]]
    report = Report()
    for path, (flat, branches) in payload["f"].items():
        it = iter(flat)
        fc = FileCoverage(lines=dict(zip(it, it, strict=True)))
        it = iter(branches)
        for ln, *stored in zip(*[it] * width, strict=True):
            # counts were stored computed
            fc.branches[ln] = Branches._trusted(*stored_branch(sets, *stored))
        report.files[path] = fc
    return report


def load_v3(payload: dict[str, Any]) -> Report:
    return _load_indexed(payload, 7)


def load_v2(payload: dict[str, Any]) -> Report:
    return _load_indexed(payload, 5)


def load_v1(payload: dict[str, Any]) -> Report:
    report = Report()
    for path, (flat, branches) in payload["f"].items():
        it = iter(flat)
        fc = FileCoverage(lines=dict(zip(it, it, strict=True)))
        for ln, (cov, tot, cids, aids) in branches.items():
            _counts(cov, tot)
            fc.branches[int(ln)] = Branches._trusted(
                cov,
                tot,
                frozenset(cids) if cids is not None else None,
                frozenset(aids) if aids is not None else None,
            )
        report.files[path] = fc
    return report
