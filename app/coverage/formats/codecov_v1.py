"""Codecov's own v1 JSON (what Codecov's older uploaders and many converters
send: ``{"coverage": {path: lines}}``).

Shape::

    {"coverage": {"src/a.rb": {"1": 3, "2": 0, "3": "1/2", "4": null},
                  "src/b.rb": [null, 1, 0],
                  "src/c.rb": {"lines": [1, null, 0]}}}

The rules (Codecov's worker, ``services/report/languages/v1.py``):

- a file's lines are an object keyed by line number, a list indexed by line
  number (its first item, line 0, is not read) or ``{"lines": [...]}``
  whose first item is line 1;
- a whole number (or a string of one) is the line's hits; ``null`` is not a
  line; ``"n/m"`` is a branch line, ``n`` of ``m`` branches covered (a hit
  when ``n`` is not 0), count-only; ``true`` is a line run in part (Codecov's
  partial: 1 of 2, count-only), ``false`` a miss;
- a line number that is not a whole number above 0, a negative or
  unreadable count are skipped and named (Codecov refuses the whole report
  for a line key that is not a number, and drops line 0 silently).
"""

from __future__ import annotations

import json
from typing import Any

from app.coverage import jsonstream as js
from app.coverage.formats.linemap import LineMap, whole
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report

FMT = "Codecov v1 JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc = json.loads(text)
    coverage = doc.get("coverage") if isinstance(doc, dict) else None
    if not isinstance(coverage, dict):
        raise js.Bad('a Codecov v1 report is an object with a "coverage" object')
    out = LineMap(FMT, limits, roots)
    for name, lines in coverage.items():
        if isinstance(lines, dict) and isinstance(lines.get("lines"), list):
            items: Any = enumerate(lines["lines"], start=1)
        elif isinstance(lines, list):
            items = enumerate(lines)
            next(items, None)  # index 0 is no line
        elif isinstance(lines, dict):
            items = lines.items()
        else:
            out.report.skipped.add(f"{name}: {str(lines)[:40]}", "the coverage object")
            continue
        if not name.strip():
            out.report.skipped.add(f'"": {str(lines)[:40]}', "the coverage object")
            continue
        _lines(out, out.file(name), name, items)
    return out.done()


def _lines(out: LineMap, fc: FileCoverage, name: str, items: Any) -> None:
    """A file's records: plain counts kept by ``LineMap.counts``; an ``"n/m"``
    branch line of plain digits kept here; any other record through ``_line``,
    which reads or skips and names it. The same lines as ``_line`` on every
    record, 1.7 times faster (BENCHMARKS.md, "Big reports parsed faster")."""
    lines, branches, max_ln = fc.lines, fc.branches, out.max_ln

    def other(key: Any, value: Any) -> None:
        if value is None:
            return  # no line
        if type(value) is str and (covered := _branch_counts(value)) is not None:
            ln = whole(key)
            if ln is not None and 0 < ln <= max_ln:
                out.count()
                hits = 1 if covered[0] else 0
                if hits > lines.get(ln, -1):
                    lines[ln] = hits
                br = Branches.counted(*covered)
                old = branches.get(ln)
                branches[ln] = br if old is None else old.merged(br)
                return
        _line(out, fc, name, key, value)

    out.counts(fc, items, other)


def _branch_counts(value: str) -> tuple[int, int] | None:
    """``(n, m)`` of a branch line ``"n/m"`` written in plain ASCII digits,
    ``n <= m`` and ``m`` not 0; None for anything else (``_line`` reads it)."""
    n, slash, m = value.partition("/")
    if not (slash and n.isdigit() and m.isdigit() and n.isascii() and m.isascii()):
        return None
    if len(n) > 20 or len(m) > 20:
        return None
    covered, total = int(n), int(m)
    return (covered, total) if covered <= total and total else None


def _line(out: LineMap, fc: FileCoverage, name: str, key: Any, value: Any) -> None:
    ln = whole(key)
    where = f"{name!r} line {str(key)[:20]}"
    if value is True or value is False:
        if out.hit(fc, ln, int(value), f"{key}: {value}", where) and value:
            out.partial(fc, ln)  # type: ignore[arg-type]  # hit() checked it
        return
    if isinstance(value, str) and "/" in value:
        n, _, m = value.partition("/")
        covered, total = whole(n), whole(m)
        if covered is None or total is None or not 0 <= covered <= total or total == 0:
            out.count()
            out.report.skipped.add(f"{key}: {value}", where)
            return
        if out.hit(fc, ln, 1 if covered else 0, f"{key}: {value}", where):
            br = Branches(covered, total)
            old = fc.branches.get(ln)  # type: ignore[arg-type]
            fc.branches[ln] = br if old is None else old.merged(br)  # type: ignore[index]
        return
    out.hit(fc, ln, whole(value), f"{key}: {value}", where)
