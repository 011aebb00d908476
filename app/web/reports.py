"""Merged reports as the pages need them, cached per report version.

A commit report row changes only by a merge, which bumps its version, so
anything derived from (commit, version) can be cached in the server process:
the per-file totals (what the commit page sorts and pages through), the
per-flag totals and, for the file page of a version merged before its lines
were stored in windows, the few most recent files' lines. The merge stores
the per-file totals and the comparison with the base beside the report
(``app.merge.report_summary``), and each file's lines in windows
(``app.merge.file_lines``), so a new version's first view reads those instead of
decoding whole reports.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import Branches, ParseLimits, Totals
from app.coverage.codec import file_columns
from app.db.models import CommitReport
from app.merge.file_lines import Window, read_window, window_of
from app.merge.report_summary import FileTotalsTable, load_file_table, stored_comparison
from app.queries import flag_totals
from app.web.table import PreparedTable
from app.web.tree import DirectoryTree

K = TypeVar("K")
V = TypeVar("V")

#: Per-file totals of this many report versions stay in memory.
FILE_TOTALS_CACHED = 64
#: Prepared file tables (rows and sort orders) of this many commit pages.
TABLES_CACHED = 16
#: Files whose lines the file page keeps, in columns (16 bytes a line).
FILES_CACHED = 8
#: Reads of the stored windows of one page, if merges replace the version meanwhile.
STORED_READS = 3


@dataclass(frozen=True, slots=True)
class FileLines:
    """One file of a merged report as the file page reads it: its line
    numbers in order, their hits, its branch lines and its totals. Two
    arrays of 64-bit numbers, not a dict per line: 16 MB for a million lines."""

    lines: array[int]
    hits: array[int]
    branches: dict[int, Branches]
    totals: Totals

    @classmethod
    def of(cls, lines: array[int], hits: array[int], branches: dict[int, Branches]) -> FileLines:
        numbers, counts = lines, hits
        if any(a >= b for a, b in pairwise(lines)):  # serialised in the merge's order
            order = sorted(range(len(lines)), key=lines.__getitem__)
            numbers = array("q", (lines[i] for i in order))
            counts = array("q", (hits[i] for i in order))
        misses = counts.count(0)
        partials = branch_lines = 0
        for line, branch in branches.items():
            at = bisect.bisect_left(numbers, line)
            if at < len(numbers) and numbers[at] == line:
                branch_lines += 1
                partials += branch.covered < branch.total and counts[at] > 0
        found = len(numbers)
        totals = Totals(1, found, found - misses - partials, misses, partials, branch_lines)
        return cls(numbers, counts, branches, totals)

    def window(self, start: int, limit: int) -> Window:
        """The file page's window from line ``start``: a bisection."""
        found = len(self.lines)
        return window_of(self.lines, self.hits, self.branches, 0, found, self.totals, start, limit)


class LRU(Generic[K, V]):
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()  # outside the lock: two threads may both build it, harmlessly
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


class ReportCache:
    """Per-file totals, per-flag totals and whole reports by (commit id, version)."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self._file_tables: LRU[tuple[int, int], FileTotalsTable] = LRU(FILE_TOTALS_CACHED)
        self._files: LRU[tuple[int, int], dict[str, Totals]] = LRU(FILE_TOTALS_CACHED)
        self._flags: LRU[tuple[int, int], dict[str, Totals]] = LRU(FILE_TOTALS_CACHED)
        self._tables: LRU[tuple[int, int, int | None, int], PreparedTable] = LRU(TABLES_CACHED)
        self._files_lines: LRU[tuple[int, int, str], FileLines | None] = LRU(FILES_CACHED)
        self._trees: LRU[tuple[int, int, int | None, int], DirectoryTree] = LRU(TABLES_CACHED)

    def file_window(
        self, session: Session, commit_id: int, path: str, start: int, limit: int
    ) -> Window | None:
        """The file page's window of ``path`` (None: the report has no such
        file): from the rows the merge stored for the current version
        (``app.merge.file_lines``), never the report; for a version merged before
        those existed, from the file's lines decoded once per version."""
        seen = None
        for _ in range(STORED_READS):
            version, lines_version = session.execute(
                sa.select(CommitReport.version, CommitReport.lines_version).where(
                    CommitReport.commit_id == commit_id
                )
            ).one_or_none() or (0, None)
            if lines_version != version:
                break
            if version == seen:
                return None  # read twice: the version has no such file
            window = read_window(session, commit_id, version, path, start, limit)
            if window is not None:
                return window
            seen = version  # no such file, or a merge replaced the version meanwhile
        fc = self.file_lines(session, commit_id, version, path)
        return None if fc is None else fc.window(start, limit)

    def file_lines(
        self, session: Session, commit_id: int, version: int, path: str
    ) -> FileLines | None:
        """One file's lines (None: the report has no such file), decoded from
        the report's columns once per report version: every window of the
        file page is then a bisection, and no dict per line is ever built."""

        def load() -> FileLines | None:
            blob = session.scalar(
                sa.select(CommitReport.report).where(CommitReport.commit_id == commit_id)
            )
            columns = file_columns(blob, path) if blob else None
            return None if columns is None else FileLines.of(*columns)

        return self._files_lines.get_or_make((commit_id, version, path), load)

    def table(
        self, session: Session, commit_id: int, version: int, base_id: int | None, base_version: int
    ) -> PreparedTable:
        """The commit page's file table against the base (None: no base)."""

        def make() -> PreparedTable:
            head = self.file_table(session, commit_id, version)
            base = None
            if base_id is not None:
                base = self.file_table(session, base_id, base_version)
            stored = stored_comparison(session, commit_id, version, base_id, base_version)
            return PreparedTable(head, base, comparison=stored)

        return self._tables.get_or_make((commit_id, version, base_id, base_version), make)

    def tree(
        self, session: Session, commit_id: int, version: int, base_id: int | None, base_version: int
    ) -> DirectoryTree:
        """The commit page's file tree against the base (None: no base), from
        the same per-file totals as its file table."""

        def make() -> DirectoryTree:
            head = self.file_table(session, commit_id, version)
            base = None if base_id is None else self.file_table(session, base_id, base_version)
            return DirectoryTree.build(head, base)

        return self._trees.get_or_make((commit_id, version, base_id, base_version), make)

    def file_table(self, session: Session, commit_id: int, version: int) -> FileTotalsTable:
        """Per-file totals as columns: stored by the merge, else from the report."""
        return self._file_tables.get_or_make(
            (commit_id, version), lambda: load_file_table(session, commit_id)
        )

    def file_totals(self, session: Session, commit_id: int, version: int) -> dict[str, Totals]:
        return self._files.get_or_make(
            (commit_id, version), lambda: self.file_table(session, commit_id, version).totals()
        )

    def flag_totals(self, session: Session, commit_id: int, version: int) -> dict[str, Totals]:
        """Per flag, the totals of the merged uploads carrying it (``app.queries``)."""

        return self._flags.get_or_make(
            (commit_id, version), lambda: flag_totals(session, commit_id)
        )


def total_of(files: dict[str, Totals]) -> Totals:
    return sum(files.values(), Totals())
