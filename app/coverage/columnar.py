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

This module holds the columns, their counts and their merge;
:mod:`app.coverage.columnar_read` decodes the stored forms into them and
:mod:`app.coverage.columnar_write` encodes them (and writes a parser's
report straight into the binary form).
"""

from __future__ import annotations

from operator import add

from app.coverage.model import Branches, FileCoverage, Report, Totals

#: First bytes of a version 4 report, after zlib.
MAGIC_V4 = b"CWR\x04"


#: Bytes of the header length after ``MAGIC_V4``.
HEADER_LENGTH = 4


#: Most entries of the branch-merge memo per process (then it starts over).
MERGE_MEMO_LIMIT = 1 << 16


_MERGED: dict[tuple[int, int], tuple[Branches, Branches, Branches]] = {}


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
            files[path] = theirs if mine is None else merge_columns(mine, theirs)

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


def merge_columns(mine: Columns, theirs: Columns) -> Columns:
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
