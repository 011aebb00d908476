"""Coveralls JSON: the job a Coveralls client posts (``coveralls --output``
of coveralls-python, node-coveralls, coveralls-lcov, ...).

Shape::

    {"repo_token": "...", "service_name": "github",
     "source_files": [{"name": "calc/ops.py", "source_digest": "...",
                       "coverage": [null, 1, 0, null, 3],
                       "branches": [2, 0, 0, 1, 2, 0, 1, 0]}]}

``coverage[i]`` is the hit count of line ``i + 1``; ``null`` is not code.
Codecov reads ``coverage`` given as a JSON-encoded string too, and so does
covworker. ``branches`` is Coveralls' flat list of ``[line, block, branch,
hits]`` quadruples: each is a branch of its line, ``cv:<block>,<branch>``,
covered when ``hits`` is not 0 (Codecov ignores them; Coveralls shows them).
A count that is not a whole non-negative number, a file without a name or
without a ``coverage`` list, a torn branch quadruple: that record is skipped
and named on the upload; the rest is kept.
"""

from __future__ import annotations

import json
from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids
from app.coverage.skipped import SkippedRecords

FMT = "Coveralls JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc, end = js.value(text, 0)
    js.end_of_document(text, end)
    if not isinstance(doc, dict) or not isinstance(doc.get("source_files"), list):
        raise js.Bad('the report has no "source_files" list')
    out = js.Files(FMT, limits, roots)
    skipped = out.report.skipped
    for n, entry in enumerate(doc["source_files"], start=1):
        where = f"source_files[{n - 1}]"
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip():
            skipped.add("a file without a name", where)
            continue
        coverage = entry.get("coverage")
        if isinstance(coverage, str):  # a JSON-encoded list, as some clients send it
            try:
                coverage = json.loads(coverage)
            except ValueError:
                coverage = None
        if not isinstance(coverage, list):
            skipped.add("coverage: not a list of counts", name)
            continue
        lines = counts_of_lines(coverage, 1, name, limits, skipped)
        all_ids, covered = _branches(entry.get("branches"), name, limits, skipped)
        out.add(name, FileCoverage(lines, branches_of_ids(all_ids, covered)))
    return out.report


def counts_of_lines(
    counts: list[Any], first: int, name: str, limits: ParseLimits, skipped: SkippedRecords
) -> dict[int, int]:
    """Line ``first + i`` has ``counts[i]`` hits; ``null`` is not code, an
    entry that is not a whole non-negative number (or past the line limit)
    is skipped and named. Coveralls counts from line 1, covr from line 0."""
    lines: dict[int, int] = {}
    max_ln = limits.max_line_number
    for ln, hits in enumerate(counts, start=first):
        if hits is None:
            continue
        if type(hits) is not int or hits < 0:  # a whole float is read too
            hits = js.whole_count(hits)
        if hits is None or ln < 1 or ln > max_ln:
            skipped.add(f"line {ln}: {json.dumps(counts[ln - first])[:20]}", name)
            continue
        lines[ln] = hits
    return lines


def _branches(
    flat: Any, name: str, limits: ParseLimits, skipped: SkippedRecords
) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}
    if flat is None:
        return all_ids, covered
    if not isinstance(flat, list) or len(flat) % 4:
        skipped.add("branches: not [line, block, branch, hits] quadruples", name)
        return all_ids, covered
    max_ln, idents = limits.max_line_number, _IDENTS
    quads = iter(flat)
    for ln, block, branch, hits in zip(quads, quads, quads, quads, strict=False):  # len % 4 == 0
        if (
            type(ln) is not int
            or not 0 < ln <= max_ln
            or type(block) is not int
            or type(branch) is not int
            or (hits is not None and (type(hits) is not int or hits < 0))
        ):
            skipped.add(f"branch {json.dumps([ln, block, branch, hits])[:40]}", name)
            continue
        small = 0 <= block < 64 and 0 <= branch < 64
        ident = idents[block, branch] if small else f"cv:{block},{branch}"
        line_ids = all_ids.get(ln)
        if line_ids is None:
            line_ids = all_ids[ln] = set()
        line_ids.add(ident)
        if hits:
            covered.setdefault(ln, set()).add(ident)
    return all_ids, covered


#: The branch ids of the small blocks and branches nearly every quadruple names.
_IDENTS = {(block, branch): f"cv:{block},{branch}" for block in range(64) for branch in range(64)}
