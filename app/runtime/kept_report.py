"""The merged report a finisher of this process wrote last, kept decoded.

In a trickle the passes of a commit follow each other in one holder (it
re-checks the processed set after each pass and goes again), and each
decoded the report the one before had just encoded: 0.2 s of CPU at
1,000,000 lines, a sixth of a pass merging two uploads. The next pass of the
commit merges into the kept report instead, if the report row, locked by
that pass, still has the version this process wrote; versions only grow,
and only under that lock, so an equal version is the same report. A report
kept is never changed: a merge makes new lists (``app.coverage.columnar``).

One commit at a time. A commit settling for the first time (a burst) is
forgotten: no pass is expected then. One that settled before is a matrix
still trickling in, whose next arrival's pass would decode what this one
just encoded: it stays kept until another commit's pass replaces it.
Between two passes of a commit its process holds the merged report (51 MiB
at 1,000,000 lines) where it would have freed it; the pass that takes it
holds no more than one that decoded it.

Beside it, the windows (``app.merge.file_lines``) this process last
encoded for the commit's settled version, by path, with the columns they
were encoded from: the next settled version of a trickle re-encodes only
the files whose columns are new objects (a merge makes new lists for the
files it touches; the others are the very same), and a pass drops the
windows of the files it touches so that no old columns are held.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.coverage.columnar import Columns

#: A file's windows as last encoded: the columns they came from and their rows.
EncodedWindows = dict[str, tuple[Columns, list[tuple[Any, ...]]]]


@dataclass(frozen=True, slots=True)
class _Kept:
    commit_id: int
    version: int
    files: dict[str, Columns]


class KeptReport:
    """The last merged report of this process's finishers, for its commit's next pass."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: _Kept | None = None
        self._windows: tuple[int, EncodedWindows] | None = None

    def take(self, commit_id: int, version: int) -> dict[str, Columns] | None:
        """The commit's own uploads merged at ``version``, if kept, no longer
        kept: the pass that merges into them lets each file's old columns go
        as it replaces them, as it does those of a report it decoded, rather
        than holding two versions of the report at its peak. A pass that fails
        leaves none kept; the next one decodes."""
        with self._lock:
            kept = self._kept
            if kept is None or (kept.commit_id, kept.version) != (commit_id, version):
                return None
            self._kept = None
            return kept.files

    def keep(self, commit_id: int, version: int, files: dict[str, Columns]) -> None:
        """Keep what a committed pass stored as the commit's ``version``."""
        with self._lock:
            self._kept = _Kept(commit_id, version, files)
            if self._windows is not None and self._windows[0] != commit_id:
                self._windows = None  # another commit's columns: let them go

    def forget(self, commit_id: int) -> None:
        with self._lock:
            if self._kept is not None and self._kept.commit_id == commit_id:
                self._kept = None
            if self._windows is not None and self._windows[0] == commit_id:
                self._windows = None

    def windows(self, commit_id: int) -> EncodedWindows:
        """The commit's windows last encoded here, to reuse and update (empty
        for a commit other than the last one's: that one's are let go). Two
        writers of one commit (SQLite takes no row lock) can cost a file its
        re-encoding, never a wrong window: an entry is reused only for the very
        columns it was made from."""
        with self._lock:
            if self._windows is None or self._windows[0] != commit_id:
                self._windows = (commit_id, {})
            return self._windows[1]

    def touched(self, commit_id: int, paths: Iterable[str]) -> None:
        """A pass merged into ``paths``: their windows will not be reused."""
        with self._lock:
            if self._windows is not None and self._windows[0] == commit_id:
                encoded = self._windows[1]
                for path in paths:
                    encoded.pop(path, None)
