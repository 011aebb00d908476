"""D's coverage listing (``dmd -cov`` / ``ldc2 -cov``: one ``<module>.lst``
per source file, ``source-calc.lst`` for ``source/calc.d``).

Shape (``count|source``, line N of the listing is line N of the source,
then a summary naming the file)::

           |int classify(int x)
          2|    if (x > 0)
    0000000|        return -1;
    source/calc.d is 84% covered

The rules (Codecov's worker, ``services/report/languages/dlst.py``):

- several listings one after another are several files, each closed by
  its summary line;
- the file is the summary line's ``<path> is N% covered`` (or ``<path> has
  no code``); Codecov prefers the name of the uploaded ``.lst``, which a
  report's content does not carry;
- ``N|`` is N hits, ``0000000|`` a line that did not run, an empty count
  not a line;
- a listing line whose count is not a number is skipped and named (Codecov
  drops it silently).
"""

from __future__ import annotations

from app.coverage.formats.linemap import LineMap
from app.coverage.limits import NO_CODE, ParseLimits
from app.coverage.model import Report
from app.errors import MalformedReport

FMT = "D coverage listing"
_COVERED = b"% covered"
_NO_CODE = b" has no code"


def summary_path(last: bytes) -> bytes | None:
    """The file a listing's summary line names, or None if it is not one."""
    last = last.strip()
    if last.endswith(_COVERED):
        path, sep, percent = last[: -len(_COVERED)].rpartition(b" is ")
        path = path if sep and percent.isdigit() else b""
    elif last.endswith(_NO_CODE):
        path = last[: -len(_NO_CODE)]
    else:
        return None
    path = path.removeprefix(b"source ") if path.startswith(b"source ") else path
    return path.strip() or None


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    out = LineMap(FMT, limits, roots)
    max_ln = limits.max_line_number
    lines: dict[int, int] = {}
    ln = 0  # the line of the current listing
    for lineno, line in enumerate(raw.rstrip().split(b"\n"), start=1):
        if not line.strip():
            continue  # between listings; a listing's own lines all have a "|"
        ln += 1
        count, bar, _ = line.partition(b"|")
        if not bar:
            name = summary_path(line)
            if name is None:
                out.count()
                out.report.skipped.line(line, lineno)
                continue
            _close(out, name, lines, lineno)
            lines, ln = {}, 0
            continue
        try:
            hits = int(count)
        except ValueError:
            if count.strip():
                out.count()
                out.report.skipped.line(line, lineno)
            continue
        out.count()
        if hits < 0 or ln > max_ln:
            out.report.skipped.line(line, lineno)
            continue
        lines[ln] = hits
    if ln:
        raise MalformedReport(FMT, "the listing has no summary line naming its file", line=lineno)
    report = out.done()
    if not report.files and raw.rstrip().endswith(_NO_CODE):
        report.warnings.append(NO_CODE)  # every listing said "has no code"
    return report


def _close(out: LineMap, name: bytes, lines: dict[int, int], lineno: int) -> None:
    """A listing's summary line: its lines are the file's it names."""
    try:
        path = name.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedReport(FMT, "the file name is not UTF-8", line=lineno) from None
    fc = out.file(path)
    for ln, hits in lines.items():
        if hits > fc.lines.get(ln, -1):
            fc.lines[ln] = hits
