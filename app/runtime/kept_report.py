"""The merged report a finisher of this process wrote last, kept decoded.

In a trickle the passes of a commit follow each other in one holder (it
re-checks the processed set after each pass and goes again), and each
decoded the report the one before had just encoded: 0.2 s of CPU at
1,000,000 lines, a sixth of a pass merging two uploads. The next pass of the
commit merges into the kept report instead, if the report row, locked by
that pass, still has the version this process wrote; versions only grow,
and only under that lock, so an equal version is the same report. A report
kept is never changed: a merge makes new lists (``app.coverage.columnar``).

Several commits at a time, the most recently used first: at a steady
arrival of CI matrices a worker's passes go from one trickling commit to
another, and a single kept report would be replaced by the next commit's before
its own next arrival. At most ``max_commits`` commits and ``max_lines``
lines are kept, the least recently used let go first; the commit used last
is kept whatever its size (one 1,000,000-line report, as before). A commit
settling for the first time (a burst) is forgotten: no pass is expected
then. One that settled before is a matrix still trickling in, whose next
arrival's pass would decode what this one just encoded. Between two passes
of a commit its process holds the merged report (51 MiB at 1,000,000 lines)
where it would have freed it; the pass that takes it holds no more than one
that decoded it.

Beside each, the windows (``app.merge.file_lines``) this process last
encoded for the commit's settled version, by path, with the columns they
were encoded from: the next settled version re-encodes only the files whose
lines changed (the same columns, or equal ones when another process merged
the version before and this one decoded it), and a pass drops the windows
of the files it touches so that no old columns are held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.coverage.columnar import Columns

#: A file's windows as last encoded: the columns they came from and their rows.
EncodedWindows = dict[str, tuple[Columns, list[tuple[Any, ...]]]]


#: Commits a process keeps at most.
MAX_COMMITS = 8
#: Instrumented lines a process keeps at most over its commits (about 50 MiB
#: of columns); the commit used last is kept whatever its size.
MAX_LINES = 1_000_000


@dataclass(slots=True)
class _Kept:
    #: The version ``files`` is, and the report itself until a pass takes it.
    version: int = -1
    files: dict[str, Columns] | None = None
    windows: EncodedWindows = field(default_factory=dict)
    #: Lines of the report or of the windows' columns, whichever was larger.
    lines: int = 0


class KeptReport:
    """The last merged reports of this process's finishers, for their commits' next passes.

    Parameters:
      max_commits(int): Commits kept at most.
      max_lines(int): Lines kept at most over the commits; the commit used
        last is kept whatever its size.

    Example:

      >>> kept = KeptReport(max_commits=2)
      >>> kept.keep(7, 2, {"a.py": ([1], [1], {})})
      >>> kept.take(7, 2)
      {'a.py': ([1], [1], {})}
    """

    def __init__(self, *, max_commits: int = MAX_COMMITS, max_lines: int = MAX_LINES) -> None:
        self._lock = threading.Lock()
        self._max_commits = max(1, max_commits)
        self._max_lines = max_lines
        self._kept: OrderedDict[int, _Kept] = OrderedDict()

    def take(self, commit_id: int, version: int) -> dict[str, Columns] | None:
        """The commit's own uploads merged at ``version``, if kept, no longer
        kept: the pass that merges into them lets each file's old columns go
        as it replaces them, as it does those of a report it decoded, rather
        than holding two versions of the report at its peak. A pass that fails
        leaves none kept; the next one decodes. A kept report of another
        version (another process wrote a newer one) is let go too."""
        with self._lock:
            kept = self._kept.get(commit_id)
            if kept is None or kept.files is None:
                return None
            files, kept.files = kept.files, None
            return files if kept.version == version else None

    def keep(self, commit_id: int, version: int, files: dict[str, Columns]) -> None:
        """Keep what a committed pass stored as the commit's ``version``."""
        lines = sum(len(columns[0]) for columns in files.values())
        with self._lock:
            kept = self._used(commit_id)
            kept.version, kept.files, kept.lines = version, files, max(kept.lines, lines)
            self._let_go()

    def forget(self, commit_id: int) -> None:
        with self._lock:
            self._kept.pop(commit_id, None)

    def windows(self, commit_id: int) -> EncodedWindows:
        """The commit's windows last encoded here, to reuse and update. Two
        writers of one commit (SQLite takes no row lock) can cost a file its
        re-encoding, never a wrong window: an entry is reused only for columns
        equal to those it was made from."""
        with self._lock:
            return self._used(commit_id).windows

    def windows_stored(self, commit_id: int, lines: int) -> None:
        """The commit's windows now hold the columns of ``lines`` lines."""
        with self._lock:
            kept = self._kept.get(commit_id)
            if kept is not None:
                kept.lines = max(kept.lines, lines)
                self._let_go()

    def touched(self, commit_id: int, paths: Iterable[str]) -> None:
        """A pass merged into ``paths``: their windows will not be reused."""
        with self._lock:
            kept = self._kept.get(commit_id)
            if kept is not None:
                encoded = kept.windows
                for path in paths:
                    encoded.pop(path, None)

    def _used(self, commit_id: int) -> _Kept:
        kept = self._kept.get(commit_id)
        if kept is None:
            kept = self._kept[commit_id] = _Kept()
        self._kept.move_to_end(commit_id)
        return kept

    def _let_go(self) -> None:
        """Let the least recently used go, past the bounds; never the last used."""
        kept = self._kept
        total = sum(k.lines for k in kept.values())
        while len(kept) > 1 and (len(kept) > self._max_commits or total > self._max_lines):
            _, gone = kept.popitem(last=False)
            total -= gone.lines
