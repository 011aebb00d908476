"""luacov's report (``luacov.report.out``, luacov's default reporter).

Shape (one section per file, a count column ``W + 1`` wide, ``W`` the
digits of the report's largest count, then a space and the source)::

    ==============================================================================
    calc.lua
    ==============================================================================
         -- a comment: not code
       1 local calc = {}
    ***0   if n < 0 then
     150   local acc = 0
               20,
    ==============================================================================
    Summary
    ==============================================================================

The rules (luacov's ``DefaultReporter``; Codecov's
``services/report/languages/lua.py`` reads the first word of each line,
so a line that is not code but starts with a number, as ``20,`` above,
is a hit to it; ``docs/formats.md`` lists them):

- A rule of ``=`` opens a section; the line after it names the file, the
  next rule starts its source, one report line per source line. The
  ``Summary`` section ends the files.
- The count column is the first ``W + 1`` characters: digits are that many
  hits, ``*`` ``W`` times then ``0`` is a miss, blanks are not code. ``W``
  is read from the report: a miss starts at the line's first character and
  a line of the largest count at its second (every other line further
  right), so the first such line's column gives it.
- A line whose count column is none of these is skipped and named on the
  upload; the rest is kept.
"""

from __future__ import annotations

from app.coverage.formats import line_chunks
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.coverage.paths import PathNormaliser
from app.errors import MalformedReport

FMT = "luacov"
CHUNK = 1 << 20
MIN_RULE = 7


def _is_rule(line: bytes) -> bool:
    line = line.rstrip(b"\r")
    return len(line) >= MIN_RULE and not line.strip(b"=")


def count_width(raw: bytes) -> int:
    """``W + 1``, the width of the count column (0 if no line is code)."""
    fallback = 0
    header = 0  # lines of a section's header still to come (name, rule)
    for chunk in line_chunks(raw, CHUNK):
        for line in chunk.split(b"\n"):
            if header:
                header -= 1
                continue
            if line[:1] == b"=" and _is_rule(line):
                header = 2
                continue
            if line[:1] == b"*" or (line[:1] == b" " and line[1:2].isdigit()):
                end = line.find(b" ", 1)
                return end if end > 0 else len(line.rstrip(b"\r"))
            token = line.lstrip(b" ")
            end = token.find(b" ")
            if token[: end if end >= 0 else None].isdigit() and token:
                width = len(line) - len(token) + (end if end >= 0 else len(token))
                fallback = min(fallback, width) if fallback else width
    return fallback


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report = Report()
    skipped = report.skipped
    normalise = PathNormaliser(roots)
    max_ln, max_records = limits.max_line_number, limits.max_lines
    width = count_width(raw)
    miss = b"*" * (width - 1) + b"0"
    lines: dict[int, int] | None = None
    state = 0  # 0: a section's lines, 1: a name comes, 2: the rule under it
    ln = records = lineno = sections = 0
    for chunk in line_chunks(raw, CHUNK):
        for line in chunk.split(b"\n"):
            lineno += 1
            if state == 1:  # the file's name, or Summary
                name = line.rstrip(b"\r").decode("utf-8", "replace").strip()
                state, ln, lines = 2, 0, None
                if name == "Summary":
                    continue
                if not name:
                    raise MalformedReport(FMT, "a section without a file name", line=lineno)
                path = normalise(name)
                fc = report.files.get(path)
                if fc is None:
                    if len(report.files) >= limits.max_files:
                        raise limits.too_many_files(FMT)
                    fc = report.files[path] = FileCoverage()
                lines, sections = fc.lines, sections + 1
                continue
            if state == 2:  # the rule under the name
                if not _is_rule(line):
                    raise MalformedReport(
                        FMT, "a section's name not followed by a rule", line=lineno
                    )
                state = 0
                continue
            if line[:1] == b"=" and _is_rule(line):
                state = 1
                continue
            if lines is None:  # the Summary's table
                continue
            ln += 1
            field = line[:width].strip()
            if not field:
                continue  # not code
            if line[width : width + 1] not in (b" ", b"", b"\r") or ln > max_ln:
                skipped.line(line, lineno)
                continue
            if field.isdigit():
                hits = int(field)
            elif field == miss:
                hits = 0
            else:
                skipped.line(line, lineno)
                continue
            records += 1
            if records > max_records:
                raise limits.too_many_lines(FMT)
            lines[ln] = max(hits, lines[ln]) if ln in lines else hits
    if not sections:
        raise MalformedReport(FMT, "the report has no file section")
    return report
