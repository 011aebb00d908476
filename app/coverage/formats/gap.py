"""GAP's coverage JSON (the ``profiling`` package's ``OutputJsonCoverage``):
one JSON object a line.

Shape::

    {"Type":"S","File":"lib/error.g","FileId":37}
    {"Type":"R","Line":1,"FileId":37}
    {"Type":"E","Line":2,"FileId":37}

``S`` opens a file; ``R`` is a line GAP read (a statement that did not
run: 0 hits), ``E`` one it executed (1 hit; GAP gives no count). A line
named twice keeps the larger (read, then executed: 1), as Codecov reads it
(its worker's ``services/report/languages/gap.py``). Blank lines are
nothing; a line that is not such an object (broken JSON, another type, no
readable ``Line``, a line record before any file) is skipped and named.
"""

from __future__ import annotations

import json
from typing import Any

from app.coverage.formats import line_chunks
from app.coverage.formats.linemap import LineMap
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report
from app.errors import MalformedReport

FMT = "GAP coverage JSON"
CHUNK = 1 << 20
_HITS = {"R": 0, "E": 1}


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    out = LineMap(FMT, limits, roots)
    fc: FileCoverage | None = None
    lines: dict[int, int] = {}
    max_ln, max_records = limits.max_line_number, limits.max_lines
    lineno = 0
    for chunk in line_chunks(raw, CHUNK):
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedReport(FMT, "the report is not UTF-8") from None
        rows = text.split("\n")
        try:  # the whole chunk at once, in C; line by line only when a line is bad
            records: list[Any] = json.loads("[" + ",".join(x for x in rows if x.strip()) + "]")
            numbered = _numbered(rows, lineno, records)
        except ValueError:
            numbered = _one_by_one(rows, lineno)
        lineno += len(rows)
        for n, line, record in numbered:
            kind = record.get("Type") if isinstance(record, dict) else None
            hits = _HITS.get(kind, -1) if isinstance(kind, str) else -1
            ln = record.get("Line") if hits >= 0 else None
            if type(ln) is int and 0 < ln <= max_ln and fc is not None:  # the hot path
                out.records += 1
                if out.records > max_records:
                    raise limits.too_many_lines(FMT)
                if hits > lines.get(ln, -1):
                    lines[ln] = hits
            elif kind == "S" and isinstance(record.get("File"), str) and record["File"].strip():
                fc = out.file(record["File"])
                lines = fc.lines
            elif kind in _HITS and fc is not None:
                out.hit(fc, record.get("Line"), _HITS[kind], line, f"line {n}")
            else:
                out.count()
                out.report.skipped.line(line, n)
    return out.done()


def _numbered(lines: list[str], before: int, records: list[Any]) -> list[tuple[int, str, Any]]:
    numbers = [(before + i + 1, x) for i, x in enumerate(lines) if x.strip()]
    return [(n, x, r) for (n, x), r in zip(numbers, records, strict=True)]


def _one_by_one(lines: list[str], before: int) -> list[tuple[int, str, Any]]:
    out: list[tuple[int, str, Any]] = []
    for i, line in enumerate(lines):
        if line.strip():
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            out.append((before + i + 1, line, record))
    return out
