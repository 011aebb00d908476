"""llvm-cov's text view: ``llvm-cov show`` (and ``xcrun llvm-cov show``, the
``*.coverage.txt`` Xcode projects upload), Codecov's "xcode" format.

Shape (one view per source file; nested views are ``|``-prefixed)::

    /src/calc.c:
        5|       |int clamp(int x, int lo, int hi)
        6|      2|{
       12|  1.23k|    if (x > 0)
      ------------------
      |  Branch (12:9): [True: 1.23k, False: 0]
      ------------------

The rules (Codecov's ``services/report/languages/xcode.py``, and llvm-cov's
own meaning where Codecov's differs; ``docs/formats.md`` lists them):

- A line ending in ``:`` with no ``|`` opens a file (its whole path); a
  file shown twice has the same counts twice, so a line takes the larger.
- ``N|count|source`` is line N with ``count`` hits; an empty count is not a
  line. llvm-cov shortens counts of 1,000 and more to three digits and a
  suffix (``1.23k``, ``45.6M``; ``kMGTPE``): read as that many (``1.23k``
  is 1230). A closing-brace line is a line with its count, as llvm-cov
  counts it.
- ``|  Branch (L:C): [True: t, False: f]`` right under a line (one ``|``
  deep) is two branches of line L, ``llvm:<C>:t`` / ``:f``, the ids the
  llvm-cov export JSON parser gives them, taken when their count is not 0.
  The branches of a macro expansion's view (``|  |  |  Branch (L:C)``,
  three deep) count on the line the macro is used on, as llvm-cov's own
  LCOV export counts them: ``llvm:v<n>>L.C:t`` / ``:f``, ``n`` the view's
  place under that line (llvm-cov's text does not show the expansion's
  column, which the export JSON's ids carry). Template instances' views
  repeat what the file's own lines already count, and are not read.
- ``------`` rules, nested views and the rest of a source line split by an
  expansion view add nothing; ANSI colours (``-use-color``) are dropped.
- A record that is none of these (an unreadable count, a line number out of
  range, a line before any file) is skipped and named on the upload.
"""

from __future__ import annotations

import re

from app.coverage.formats import line_chunks
from app.coverage.limits import ParseLimits
from app.coverage.model import FileByIds, Report
from app.coverage.paths import PathNormaliser
from app.coverage.skipped import SkippedRecords
from app.errors import MalformedReport

FMT = "llvm-cov show text"
CHUNK = 1 << 20
_ANSI = re.compile(rb"\x1b\[[0-9;]*m")
_SUFFIX = {b"k": 10**3, b"M": 10**6, b"G": 10**9, b"T": 10**12, b"P": 10**15, b"E": 10**18}
_BRANCH = re.compile(rb"\|\s+Branch \((\d+):(\d+)\): \[True: ([^,\]]+), False: ([^\]]+)\]\s*$")


def count(text: bytes) -> int:
    """llvm-cov's count column: ``12``, or a shortened ``1.23k`` / ``45M``; -1 if unreadable."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    scale = _SUFFIX.get(text[-1:])
    digits = text[:-1]
    if scale is None or not digits or not digits.replace(b".", b"", 1).isdigit():
        return -1
    whole, _, frac = digits.partition(b".")
    return int(whole) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report = Report()
    skipped = report.skipped
    normalise = PathNormaliser(roots)
    max_ln, max_records = limits.max_line_number, limits.max_lines
    views: list[FileByIds] = []
    current: FileByIds | None = None
    lines: dict[int, int] = {}
    records = lineno = 0
    at = view = 0  # the last line read, and the views under it so far
    for chunk in line_chunks(raw, CHUNK):
        if b"\x1b" in chunk:
            chunk = _ANSI.sub(b"", chunk)
        for line in chunk.split(b"\n"):
            lineno += 1
            parts = line.split(b"|", 2)
            if len(parts) == 3 and parts[0].strip():
                try:  # the hot path: "   12|      5|source"
                    ln = int(parts[0])
                    hits = int(parts[1]) if parts[1].strip() else -2
                except ValueError:
                    ln = int(parts[0]) if parts[0].strip().isdigit() else -1
                    hits = count(parts[1]) if parts[1].strip() else -2
                if hits == -2 and ln > 0:
                    continue  # not a line
                if current is None or hits < 0 or not 0 < ln <= max_ln:
                    skipped.line(line, lineno)
                    continue
                records += 1
                if records > max_records:
                    raise limits.too_many_lines(FMT)
                lines[ln] = lines.get(ln, 0) + hits
                at, view = ln, 0
                continue
            stripped = line.strip()
            if not stripped:
                continue
            head = stripped[:1]
            if head == b"|":
                if b"Branch (" in stripped and current is not None:
                    _branch(stripped, current, at, view, max_ln, skipped, lineno)
                continue
            if head == b"-":
                view += 1  # a rule opens or closes a view under line `at`
                continue
            if len(parts) == 1 and line[:1] in (b" ", b"\t"):
                continue  # the rest of a line an expansion view split
            if stripped.endswith(b":") and len(parts) == 1:
                path = stripped[:-1].decode("utf-8", "replace").strip()
                if not path:
                    raise MalformedReport(
                        FMT, "a file's line `<path>:` without a path", line=lineno
                    )
                if len(views) >= limits.max_files:
                    raise limits.too_many_files(FMT)
                current = FileByIds(path)
                views.append(current)
                lines, at = current.lines, 0
                continue
            skipped.line(line, lineno)
    if not views:
        raise MalformedReport(FMT, "the report names no source file (a line `<path>:`)")
    for f in views:
        path = normalise(f.path)
        fc = f.coverage()
        mine = report.files.get(path)
        if mine is None:
            report.files[path] = fc
        else:  # the same file shown again: the same counts, not more
            for ln, hits in fc.lines.items():
                mine.lines[ln] = max(hits, mine.lines.get(ln, 0))
            mine.branches = {
                ln: mine.branches[ln].merged(b) if ln in mine.branches else b
                for ln, b in {**mine.branches, **fc.branches}.items()
            }
    return report


def _branch(
    stripped: bytes,
    current: FileByIds,
    at: int,
    view: int,
    max_ln: int,
    skipped: SkippedRecords,
    lineno: int,
) -> None:
    """A ``Branch (L:C): [True: t, False: f]`` record: two branches of line L
    one view deep, of line ``at`` in the ``view``-th view under it three
    deep (a macro expansion's); other depths are template instances'."""
    depth, rest = 0, stripped
    while rest[:1] == b"|":
        depth, rest = depth + 1, rest[1:].lstrip(b" ")
    if depth not in (1, 3):
        return
    m = _BRANCH.match(b"|  " + rest)
    taken = (count(m[3]), count(m[4])) if m else (-1, -1)
    ln = int(m[1]) if m else 0
    if m is None or min(taken) < 0 or not 0 < ln <= max_ln or (depth == 3 and not at):
        skipped.line(stripped, lineno)
        return
    prefix = f"llvm:{int(m[2])}" if depth == 1 else f"llvm:v{view}>{ln}.{int(m[2])}"
    if depth == 3:
        ln = at
    ids = current.all_ids.setdefault(ln, set())
    for outcome, hits in zip(("t", "f"), taken, strict=True):
        ident = f"{prefix}:{outcome}"
        ids.add(ident)
        if hits:
            current.covered.setdefault(ln, set()).add(ident)
