"""What a report version's pages need, stored with it by the merge pass.

The commit page lists per-file totals and compares them with the base
commit's. Computing that from the merged reports means decoding two whole
reports (about 8 s for two 1,000,000-line reports), so the first view of a
new version would wait for it. The merge pass already holds the merged
report column by column, so it stores beside it, in the same transaction:

- ``commit_reports.file_totals``: the per-file totals (lines, hits, misses,
  partials per path; a few hundred KiB compressed for 20,000 files),
  which :class:`app.web.reports.ReportCache` reads instead of the report;
- ``commit_reports.comparison``: :func:`app.pullrequests.cached_totals.compare_totals`
  against the base found at merge time, with the base's commit id and report
  version, used while the page's base is still that version.

A version merged before these columns existed has neither: the pages then
decode the report as they always did (:func:`load_file_totals`).
"""

from __future__ import annotations

import json
import logging
import sys
import zlib
from array import array
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Columns, file_counts
from app.coverage.model import Totals
from app.db.bases import find_base
from app.db.models import Commit, CommitReport
from app.pullrequests.cached_totals import compare_totals

logger = logging.getLogger(__name__)

#: The stored form: this, the JSON header's length (4 bytes, little-endian),
#: the header (``{"v": 2, "paths": [...]}``, paths sorted), then lines, hits,
#: misses, partials and branch lines of every file as little-endian 64-bit
#: integers (five columns of ``len(paths)``), all zlib-compressed. Version 1
#: (four columns, no branch lines) is still read: its branch lines are 0.
MAGIC = b"CWFT"
FILE_TOTALS_VERSION = 2
#: The columns each version stores.
_COLUMNS = {1: 4, 2: 5}
_HEADER_LENGTH = 4


class FileTotalsTable:
    """Per-file totals as columns (paths sorted): decoded without an object per file."""

    __slots__ = ("_index", "branches", "hits", "lines", "misses", "partials", "paths")

    def __init__(
        self,
        paths: list[str],
        lines: list[int],
        hits: list[int],
        misses: list[int],
        partials: list[int],
        branches: list[int] | None = None,
    ) -> None:
        branches = [0] * len(paths) if branches is None else branches
        if not len(paths) == len(lines) == len(hits) == len(misses) == len(partials):
            raise ValueError("corrupt stored file totals: columns of different lengths")
        if len(branches) != len(paths):
            raise ValueError("corrupt stored file totals: columns of different lengths")
        self.paths, self.lines, self.hits = paths, lines, hits
        self.misses, self.partials, self.branches = misses, partials, branches
        self._index: dict[str, int] | None = None

    @classmethod
    def from_totals(cls, totals: Mapping[str, Totals]) -> FileTotalsTable:
        paths = sorted(totals)
        rows = [totals[p] for p in paths]
        return cls(
            paths,
            [t.lines for t in rows],
            [t.hits for t in rows],
            [t.misses for t in rows],
            [t.partials for t in rows],
            [t.branches for t in rows],
        )

    def __len__(self) -> int:
        return len(self.paths)

    def index(self) -> dict[str, int]:
        """Row of each path (built on first use)."""
        if self._index is None:
            self._index = dict(zip(self.paths, range(len(self.paths)), strict=True))
        return self._index

    def totals(self) -> dict[str, Totals]:
        """As :meth:`Report.file_totals`: per path, sorted."""
        return {
            p: Totals(1, n, h, m, pa, b)
            for p, n, h, m, pa, b in zip(
                self.paths,
                self.lines,
                self.hits,
                self.misses,
                self.partials,
                self.branches,
                strict=True,
            )
        }

    def total(self) -> Totals:
        return Totals(
            len(self.paths),
            sum(self.lines),
            sum(self.hits),
            sum(self.misses),
            sum(self.partials),
            sum(self.branches),
        )

    def to_bytes(self) -> bytes:
        header = json.dumps(
            {"v": FILE_TOTALS_VERSION, "paths": self.paths}, separators=(",", ":")
        ).encode()
        numbers = array("q")
        for column in (self.lines, self.hits, self.misses, self.partials, self.branches):
            numbers.extend(column)
        if sys.byteorder == "big":
            numbers.byteswap()
        size = len(header).to_bytes(_HEADER_LENGTH, "little")
        return zlib.compress(b"".join((MAGIC, size, header, numbers.tobytes())), 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> FileTotalsTable:
        """Read :meth:`to_bytes`; anything else is a ``ValueError``."""
        try:
            raw = zlib.decompress(data)
            if not raw.startswith(MAGIC):
                raise ValueError("not file totals")
            at = len(MAGIC) + _HEADER_LENGTH
            size = int.from_bytes(raw[len(MAGIC) : at], "little")
            header = json.loads(raw[at : at + size])
            columns = _COLUMNS.get(header.get("v"))
            if columns is None:
                raise ValueError(f"unknown version {header.get('v')!r}")
            paths = header["paths"]
            numbers = array("q")
            numbers.frombytes(raw[at + size :])
            if sys.byteorder == "big":
                numbers.byteswap()
        except (zlib.error, UnicodeDecodeError, ValueError, KeyError, AttributeError) as exc:
            raise ValueError(f"corrupt stored file totals: {exc}") from exc
        if not isinstance(paths, list) or len(numbers) != columns * len(paths):
            raise ValueError("corrupt stored file totals: the columns do not match the paths")
        values, n = numbers.tolist(), len(paths)
        cut = [values[i * n : (i + 1) * n] for i in range(columns)]
        branches = cut[4] if columns > 4 else None
        return cls(paths, cut[0], cut[1], cut[2], cut[3], branches)


def columns_file_table(files: Mapping[str, Columns]) -> FileTotalsTable:
    """Per path, sorted, the totals :meth:`Report.file_totals` gives for the same report."""
    paths = sorted(files)
    lines, hits_, misses, partials, branches = [], [], [], [], []
    for path in paths:
        columns = files[path]
        n, missed, part, branch = file_counts(columns)
        lines.append(n)
        hits_.append(n - missed - part)
        misses.append(missed)
        partials.append(part)
        branches.append(branch)
    return FileTotalsTable(paths, lines, hits_, misses, partials, branches)


def columns_file_totals(files: Mapping[str, Columns]) -> dict[str, Totals]:
    return columns_file_table(files).totals()


def encode_file_totals(totals: Mapping[str, Totals]) -> bytes:
    return FileTotalsTable.from_totals(totals).to_bytes()


def decode_file_totals(data: bytes) -> dict[str, Totals]:
    return FileTotalsTable.from_bytes(data).totals()


def load_file_table(session: Session, commit_id: int) -> FileTotalsTable:
    """The commit's per-file totals: stored by its merge, else from its report."""
    stored = session.scalar(
        sa.select(CommitReport.file_totals).where(CommitReport.commit_id == commit_id)
    )
    if stored:
        return FileTotalsTable.from_bytes(stored)
    blob = session.scalar(sa.select(CommitReport.report).where(CommitReport.commit_id == commit_id))
    return columns_file_table(codec.load_part(blob).files if blob else {})


def load_file_totals(session: Session, commit_id: int) -> dict[str, Totals]:
    return load_file_table(session, commit_id).totals()


def stored_comparison(
    session: Session, commit_id: int, version: int, base_id: int | None, base_version: int
) -> dict[str, Any] | None:
    """The comparison the merge stored, if it was made for this version against
    this base at this base version; else None (compute it)."""
    stored = session.scalar(
        sa.select(CommitReport.comparison).where(CommitReport.commit_id == commit_id)
    )
    if not isinstance(stored, dict):
        return None
    if (stored.get("version"), stored.get("base_commit_id"), stored.get("base_version")) != (
        version,
        base_id,
        base_version if base_id is not None else None,
    ):
        return None
    result = stored.get("result")
    return result if isinstance(result, dict) else None


def summarise(
    session: Session, row: CommitReport, files: Mapping[str, Columns] | None = None
) -> FileTotalsTable:
    """Store ``row``'s per-file totals and comparison for its current version;
    the per-file totals.

    ``files``: the merged report as the pass holds it; None when what was
    stored differs from it (carried-forward flags merged in), then the
    stored report is decoded.
    """
    if files is None:
        files = codec.load_part(row.report).files if row.report else {}
    table = columns_file_table(files)
    row.file_totals = table.to_bytes()
    head = table.totals()
    commit = session.get(Commit, row.commit_id)
    base = find_base(session, commit) if commit is not None else None
    base_version = None
    base_files = None
    if base is not None:
        base_version = (
            session.scalar(sa.select(CommitReport.version).where(CommitReport.commit_id == base.id))
            or 0
        )
        try:
            base_files = load_file_totals(session, base.id)
        except ValueError as exc:  # the base's own problem must not fail this merge
            logger.warning("No stored comparison for commit %s: %s", row.commit_id, exc)
            row.comparison = None
            return table
    row.comparison = {
        "version": row.version,
        "base_commit_id": base.id if base is not None else None,
        "base_version": base_version,
        "result": compare_totals(base_files, head),
    }
    return table
