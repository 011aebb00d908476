"""Each file's lines, stored by the merge in windows, read by the file page.

The file page shows a window of a few hundred instrumented lines of one file.
Reading them out of the merged report means decompressing the whole report
and the file's columns (120 ms of CPU and 50 MiB for a file of 1,000,000
lines), on the first GET of every report version, for anyone who may read
the repository. The merge pass holds every file's columns already, so it
stores them, in the same transaction as the report, in windows of
``WINDOW_LINES`` instrumented lines (``report_file_lines``, one row per
window, keyed by commit, version, a digest of the path (:func:`path_key`)
and the window's first line), and marks the version as stored
(``commit_reports.lines_version``). A page then
reads the few rows around the line asked for: two index look-ups and a few
thousand numbers, whatever the size of the file or of the report.

Only the version being written is kept: the merge deletes the commit's
older versions' rows, as it overwrites the report itself. A page that read
the version just before a merge replaced it finds no rows and reads the
version again (:func:`read_window` callers, ``app.web.reports``).

A version merged before the table existed (``lines_version`` NULL), or one
with a count that does not fit 64 bits, has no rows: the page decodes the
report as before. So has a version that did not settle its commit: a pass
that leaves uploads in flight stores neither the windows nor the per-file
totals (:func:`store_pages`), since the next pass replaces its version, and
the notifier completes a settled version whose pass left them out
(:func:`complete_pages`).

One window's stored form (:func:`encode_window`): zlib of little-endian
64-bit integers ``[n, b, line numbers (n)..., hits (n)..., (line, covered,
total) per branch line (b)...]``.
"""

from __future__ import annotations

import bisect
import hashlib
import sys
import zlib
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import lt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Columns
from app.coverage.model import Branches, Totals
from app.db.models import CommitReport, ReportFileLines
from app.merge.report_summary import FileTotalsTable, summarise
from app.runtime.kept_report import EncodedWindows

#: Instrumented lines per stored window (the file page shows as many).
WINDOW_LINES = 500
#: Rows inserted per statement.
INSERT_BATCH = 1000


@dataclass(frozen=True, slots=True)
class Window:
    """What the file page shows of one file: up to ``limit`` instrumented
    lines from the first at or after the line asked for, their hits and
    branch counts, where the windows before and after start, and the file's
    totals."""

    lines: Sequence[int]
    hits: Sequence[int]
    #: (covered, total) per branch line of the window.
    branches: Mapping[int, tuple[int, int]]
    instrumented_lines: int
    previous_from: int | None
    next_from: int | None
    totals: Totals


def window_of(
    lines: Sequence[int],
    hits: Sequence[int],
    branches: Mapping[int, tuple[int, int]] | Mapping[int, Branches],
    base: int,
    count: int,
    totals: Totals,
    start: int,
    limit: int,
) -> Window:
    """The window from ``start`` given a run of a file's sorted lines that
    begins at index ``base`` of the file's ``count`` lines (the whole file:
    ``base`` 0, ``count`` its length) and holds every index the window and
    its neighbours' first lines need."""
    at = base + bisect.bisect_left(lines, start)
    end = min(at + limit, count)
    lo, hi = at - base, end - base
    needed_from = max(0, at - limit) if at > 0 else at
    needed_to = end + 1 if end < count else end  # the next window's first line too
    if needed_from < base or needed_to - base > len(lines):
        raise ValueError("the stored windows do not cover the window asked for")
    window = lines[lo:hi]
    return Window(
        lines=window,
        hits=hits[lo:hi],
        branches={ln: _counts(branches[ln]) for ln in window if ln in branches},
        instrumented_lines=count,
        previous_from=lines[max(0, at - limit) - base] if at > 0 else None,
        next_from=lines[hi] if end < count else None,
        totals=totals,
    )


def _counts(branch: tuple[int, int] | Branches) -> tuple[int, int]:
    return branch if isinstance(branch, tuple) else (branch.covered, branch.total)


def in_order(numbers: Sequence[int]) -> bool:
    """Strictly increasing, checked in C (a Python loop costs 30 ns a number)."""
    return all(map(lt, numbers, islice(numbers, 1, None)))


def same_lines(a: Columns, b: Columns) -> bool:
    """Whether two files' columns make the same windows: the same objects, or
    equal lines, hits and branch counts (compared in C up to the branches)."""
    if a is b:
        return True
    if a[0] != b[0] or a[1] != b[1] or a[2].keys() != b[2].keys():
        return False
    return all(_counts(branch) == _counts(b[2][line]) for line, branch in a[2].items())


def sorted_columns(
    lines: Sequence[int], hits: Sequence[int]
) -> tuple[Sequence[int], Sequence[int]]:
    """Line numbers in order with their hits (the merge keeps a file's merged
    lines first and new lines after, so a file can be out of order)."""
    if in_order(lines):
        return lines, hits
    order = sorted(range(len(lines)), key=lines.__getitem__)
    return [lines[i] for i in order], [hits[i] for i in order]


def file_totals(lines: Sequence[int], hits: Sequence[int], branches: Mapping[int, Any]) -> Totals:
    """As ``Report.file_totals`` for one file (``lines`` sorted): a partial is a
    hit line with a branch not covered."""
    misses = hits.count(0)
    partials = branch_lines = 0
    for line, branch in branches.items():
        at = bisect.bisect_left(lines, line)
        if at < len(lines) and lines[at] == line:
            branch_lines += 1
            partials += branch.covered < branch.total and hits[at] > 0
    found = len(lines)
    hit = found - misses - partials
    return Totals(1, found, hit, misses, partials, branch_lines)


def encode_window(
    lines: Sequence[int], hits: Sequence[int], branches: Sequence[tuple[int, Branches]]
) -> bytes:
    """One window's stored form; ``OverflowError`` if a number does not fit 64 bits.

    zlib with a window and memory sized to the data: ``zlib.compress`` sets
    up 256 KiB of state per call, which for the many small files of a big
    report costs more than encoding them (any zlib reader reads it)."""
    numbers = array("q", (len(lines), len(branches)))
    for column in (lines, hits):  # from a list in C: half the time of ``extend``
        if isinstance(column, list):
            numbers.fromlist(column)
        else:
            numbers.extend(column)
    if branches:
        numbers.extend([n for line, b in branches for n in (line, b.covered, b.total)])
    if sys.byteorder == "big":
        numbers.byteswap()
    raw = numbers.tobytes()
    bits = min(15, max(9, len(raw).bit_length()))
    deflate = zlib.compressobj(1, zlib.DEFLATED, bits, max(1, bits - 7))
    return deflate.compress(raw) + deflate.flush()


def decode_window(data: bytes) -> tuple[array[int], array[int], dict[int, tuple[int, int]]]:
    """Read :func:`encode_window`; anything else is a ``ValueError``."""
    try:
        numbers = array("q")
        numbers.frombytes(zlib.decompress(data))
    except (zlib.error, ValueError) as exc:
        raise ValueError(f"corrupt stored file lines: {exc}") from exc
    if sys.byteorder == "big":
        numbers.byteswap()
    if len(numbers) < 2:
        raise ValueError("corrupt stored file lines: no header")
    n, b = numbers[0], numbers[1]
    if n < 0 or b < 0 or len(numbers) != 2 + 2 * n + 3 * b:
        raise ValueError("corrupt stored file lines: the counts do not match the numbers")
    flat = numbers[2 + 2 * n :]
    branches = {
        line: (covered, total)
        for line, covered, total in zip(flat[0::3], flat[1::3], flat[2::3], strict=True)
    }
    return numbers[2 : 2 + n], numbers[2 + n : 2 + 2 * n], branches


def path_key(path: str) -> bytes:
    """The path's key in ``report_file_lines``: 16 bytes of its BLAKE2b digest
    (the path itself may be longer than a B-tree entry can hold)."""
    return hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=16).digest()


#: The columns of a row of :func:`window_rows`, in order.
ROW_COLUMNS = (
    "commit_id",
    "version",
    "path_key",
    "first_line",
    "first_index",
    "data",
    "file_lines",
    "file_hits",
    "file_misses",
    "file_partials",
    "file_branches",
)


def window_rows(
    commit_id: int,
    version: int,
    files: Mapping[str, Columns],
    size: int = WINDOW_LINES,
    totals: FileTotalsTable | None = None,
    encoded: EncodedWindows | None = None,
) -> list[tuple[Any, ...]]:
    """Every file of a merged report as rows of ``report_file_lines``
    (``ROW_COLUMNS``); ``totals``: the per-file totals already computed
    (``app.merge.report_summary``), else they are counted here. ``encoded``:
    the rows last made of each file, reused where the file's lines are the
    same (:func:`same_lines`; ``app.runtime.kept_report``), and updated to
    these files.
    ``OverflowError`` if a number does not fit 64 bits."""
    rows: list[tuple[Any, ...]] = []
    index = totals.index() if totals is not None else {}
    reuse = encoded if size == WINDOW_LINES else None  # rows of the stored size only
    for path, columns in files.items():
        before = reuse.get(path) if reuse is not None else None
        if before is not None and same_lines(before[0], columns):
            rows.extend((commit_id, version, *row[2:]) for row in before[1])
            if reuse is not None and before[0] is not columns:  # hold the new, not both
                reuse[path] = (columns, before[1])
            continue
        start = len(rows)
        raw_lines, raw_hits, branches = columns
        lines, hits = sorted_columns(raw_lines, raw_hits)
        at = index.get(path)
        if totals is not None and at is not None:
            numbers = (
                totals.lines[at],
                totals.hits[at],
                totals.misses[at],
                totals.partials[at],
                totals.branches[at],
            )
        else:
            t = file_totals(lines, hits, branches)
            numbers = (t.lines, t.hits, t.misses, t.partials, t.branches)
        key = path_key(path)
        branch_lines = list(branches)
        if not in_order(branch_lines):
            branch_lines.sort()
        for first in range(0, max(len(lines), 1), size):
            window = lines[first : first + size]
            in_window: Sequence[tuple[int, Branches]] = ()
            if branch_lines and window:
                lo = bisect.bisect_left(branch_lines, window[0])
                hi = bisect.bisect_left(branch_lines, window[-1] + 1)
                in_window = [(ln, branches[ln]) for ln in branch_lines[lo:hi]]
            data = encode_window(window, hits[first : first + size], in_window)
            first_line = window[0] if window else 0
            rows.append((commit_id, version, key, first_line, first, data, *numbers))
        if reuse is not None:
            reuse[path] = (columns, rows[start:])
    if reuse is not None:  # list() copies at once: another thread may write to it
        for gone in [path for path in list(reuse) if path not in files]:
            reuse.pop(gone, None)
    return rows


def store_file_lines(
    session: Session,
    row: CommitReport,
    files: Mapping[str, Columns],
    size: int = WINDOW_LINES,
    totals: FileTotalsTable | None = None,
    encoded: EncodedWindows | None = None,
) -> None:
    """Store ``files`` (the merged report of ``row``'s current version) in
    windows and mark the version stored; drop the commit's older versions.
    ``encoded``: as :func:`window_rows`."""
    session.execute(
        sa.delete(ReportFileLines).where(
            ReportFileLines.commit_id == row.commit_id, ReportFileLines.version < row.version
        )
    )
    try:
        rows = window_rows(row.commit_id, row.version, files, size, totals, encoded)
    except OverflowError:  # a count past 64 bits: the page decodes the report
        row.lines_version = None
        return
    insert_rows(session, rows)
    row.lines_version = row.version


def store_pages(session: Session, row: CommitReport, files: Mapping[str, Columns]) -> None:
    """Store what the pages of ``row``'s current version read instead of
    decoding its report (``files``): the per-file totals and the comparison
    with its base (:func:`app.merge.report_summary.summarise`) and the lines in
    windows."""
    table = summarise(session, row, files)
    store_file_lines(session, row, files, totals=table)


def complete_pages(session: Session, commit_id: int) -> bool:
    """Store the pages' data of the commit's current version if its merge pass
    left them out (it left uploads in flight; see :func:`store_pages`); True
    if they were missing. Locks the report row, as a merge pass does, only
    when they are: the settling pass stored them, and its finisher holds the
    row while it writes the windows after sending the notification, which
    must not wait for them."""
    stored = session.scalar(
        sa.select(CommitReport.file_totals.is_not(None)).where(CommitReport.commit_id == commit_id)
    )
    if stored is None or stored:
        return False
    row = session.scalar(
        sa.select(CommitReport).where(CommitReport.commit_id == commit_id).with_for_update()
    )
    if row is None or not row.version or row.file_totals is not None:
        return False
    store_pages(session, row, codec.load_part(row.report).files if row.report else {})
    return True


def insert_rows(session: Session, rows: list[tuple[Any, ...]]) -> None:
    """``COPY`` on PostgreSQL (a sixth of the CPU of an ``INSERT`` per 1,000
    rows through SQLAlchemy, and half the time); ``INSERT`` elsewhere."""
    connection = session.connection()
    if connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg":
        driver: Any = connection.connection.driver_connection
        statement = f"COPY report_file_lines ({', '.join(ROW_COLUMNS)}) FROM STDIN"
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for stored in rows:
                copy.write_row(stored)
        return
    for at in range(0, len(rows), INSERT_BATCH):
        batch = [dict(zip(ROW_COLUMNS, r, strict=True)) for r in rows[at : at + INSERT_BATCH]]
        session.execute(sa.insert(ReportFileLines), batch)


def read_window(
    session: Session,
    commit_id: int,
    version: int,
    path: str,
    start: int,
    limit: int,
    size: int = WINDOW_LINES,
) -> Window | None:
    """The window of ``path`` from line ``start`` at ``version``, from the
    stored rows around it; None: no rows (no such file at that version, or
    the version was replaced since it was read)."""
    around = -(-limit // size) + 1  # stored windows each side that the window can reach
    columns = (
        ReportFileLines.first_index,
        ReportFileLines.data,
        ReportFileLines.file_lines,
        ReportFileLines.file_hits,
        ReportFileLines.file_misses,
        ReportFileLines.file_partials,
        ReportFileLines.file_branches,
    )
    key = (
        ReportFileLines.commit_id == commit_id,
        ReportFileLines.version == version,
        ReportFileLines.path_key == path_key(path),
    )
    below = session.execute(
        sa.select(*columns)
        .where(*key, ReportFileLines.first_line <= start)
        .order_by(ReportFileLines.first_line.desc())
        .limit(around)
    ).all()
    above = session.execute(
        sa.select(*columns)
        .where(*key, ReportFileLines.first_line > start)
        .order_by(ReportFileLines.first_line)
        .limit(around)
    ).all()
    rows = [*reversed(below), *above]
    if not rows:
        return None
    lines: array[int] = array("q")
    hits: array[int] = array("q")
    branches: dict[int, tuple[int, int]] = {}
    for stored in rows:
        ln, hi, br = decode_window(stored.data)
        lines.extend(ln)
        hits.extend(hi)
        branches.update(br)
    first = rows[0]
    totals = Totals(
        1,
        first.file_lines,
        first.file_hits,
        first.file_misses,
        first.file_partials,
        first.file_branches,
    )
    return window_of(
        lines, hits, branches, first.first_index, first.file_lines, totals, start, limit
    )
