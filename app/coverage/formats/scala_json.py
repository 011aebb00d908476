"""Scala JSON: scct's / sbt-scoverage's older JSON report, as Codecov reads it.

Shape::

    {"fileReports": [{"filename": "src/main/scala/Calc.scala",
                      "coverage": {"3": 2, "4": 0}}]}

``coverage`` maps a line number (a string, as JSON keys are) to its hit
count. A line number that is not one, a count that is not a whole
non-negative number, a file without a name or without a ``coverage``
object: that record is skipped and named on the upload; the rest is kept.
"""

from __future__ import annotations

import json

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report

FMT = "Scala JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc, end = js.value(text, 0)
    js.end_of_document(text, end)
    if not isinstance(doc, dict) or not isinstance(doc.get("fileReports"), list):
        raise js.Bad('the report has no "fileReports" list')
    out = js.Files(FMT, limits, roots)
    skipped = out.report.skipped
    max_ln = limits.max_line_number
    for n, entry in enumerate(doc["fileReports"]):
        name = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip():
            skipped.add("a file without a filename", f"fileReports[{n}]")
            continue
        coverage = entry.get("coverage")
        if not isinstance(coverage, dict):
            skipped.add("coverage: not an object of line: count", name)
            continue
        lines: dict[int, int] = {}
        for key, hits in coverage.items():
            ln = int(key) if key.isascii() and key.isdigit() and len(key) < 12 else -1
            found = js.whole_count(hits)
            if not 0 < ln <= max_ln or found is None:
                skipped.add(f"{json.dumps(key)[:20]}: {json.dumps(hits)[:20]}", name)
                continue
            lines[ln] = found
        out.add(name, FileCoverage(lines))
    return out.report
