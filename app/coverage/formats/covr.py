"""R covr's JSON for Codecov (``covr::codecov()``, ``covr:::to_codecov()``).

Shape::

    {"files": [{"name": "R/calc.R", "coverage": [null, null, 3, 0, null]}],
     "uploader": "R"}

covr puts a ``null`` for line 0 first, so ``coverage[i]`` is the hit count
of line ``i``, as Codecov reads it; ``null`` is not code. The report is
known by its ``"uploader": "R"``. A bad count, a file without a name or
without a ``coverage`` list is skipped and named on the upload (the rule of
:func:`app.coverage.formats.coveralls.counts_of_lines`); a count for line 0
is one of them.
"""

from __future__ import annotations

from app.coverage import jsonstream as js
from app.coverage.formats.coveralls import counts_of_lines
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report

FMT = "covr JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc, end = js.value(text, 0)
    js.end_of_document(text, end)
    if not isinstance(doc, dict) or doc.get("uploader") != "R":
        raise js.Bad('the report is not covr\'s: no "uploader": "R"')
    files = doc.get("files")
    if not isinstance(files, list):
        raise js.Bad('the report has no "files" list')
    out = js.Files(FMT, limits, roots)
    skipped = out.report.skipped
    for n, entry in enumerate(files):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip():
            skipped.add("a file without a name", f"files[{n}]")
            continue
        coverage = entry.get("coverage")
        if not isinstance(coverage, list):
            skipped.add("coverage: not a list of counts", name)
            continue
        out.add(name, FileCoverage(counts_of_lines(coverage, 0, name, limits, skipped)))
    return out.report
