"""Flow's coverage JSON (flow-coverage-report ``-t json``:
``flow-coverage/flow-coverage.json``).

Shape::

    {"flowStatus": {...}, "percent": 52, ...,
     "files": {"src/calc.js": {"expressions": {
         "covered_locs": [{"start": {"line": 2, "column": 17}, "end": {...}}, ...],
         "uncovered_locs": [...], "empty_locs": [...]}}}}

Flow measures types, not runs: an expression is covered when Flow knows its
type, uncovered when it is ``any``. As Codecov reads it (its worker's
``services/report/languages/flowcover.py``), each expression marks the line
it starts on, 1 hit when covered, 0 when not, and a line several
expressions start on keeps the largest (so a line with one covered
expression is covered). ``empty_locs`` are not read. A file Flow did not
check (no ``@flow``) has no expressions, so no lines. An expression whose
start line is unreadable is skipped and named.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from app.coverage import jsonstream as js
from app.coverage.formats.linemap import LineMap
from app.coverage.limits import ParseLimits
from app.coverage.model import Report

FMT = "Flow coverage JSON"


class _Line(msgspec.Struct):
    line: int


class _Loc(msgspec.Struct):
    start: _Line


class _Expressions(msgspec.Struct):
    covered_locs: list[_Loc] = []
    uncovered_locs: list[_Loc] = []


class _File(msgspec.Struct):
    expressions: _Expressions


class _Doc(msgspec.Struct):
    flowStatus: Any  # noqa: N815 - Flow's name
    files: dict[str, _File]


_decode = msgspec.json.Decoder(_Doc).decode


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    """A report of the expected shape is decoded typed, in C (reading only the
    fields used); any other goes the slow way, which names what is wrong."""
    try:
        doc = _decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return js.run(raw, FMT, lambda text: _parse(text, limits, roots))
    out = LineMap(FMT, limits, roots)
    max_ln = limits.max_line_number
    for name, data in doc.files.items():
        if not name.strip():
            out.report.skipped.add(f"{name!r}: ...", f'"files" entry {name!r}')
            continue
        lines = out.file(name).lines
        for key, locs, hits in (
            ("covered_locs", data.expressions.covered_locs, 1),
            ("uncovered_locs", data.expressions.uncovered_locs, 0),
        ):
            for i, loc in enumerate(locs):
                out.count()
                ln = loc.start.line
                if not 0 < ln <= max_ln:
                    out.report.skipped.add(f"start line {ln}", f"{key}[{i}] of {name!r}")
                elif hits > lines.get(ln, -1):
                    lines[ln] = hits
    return out.done()


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc = json.loads(text)
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or "flowStatus" not in doc:
        raise js.Bad('a Flow coverage report is an object with "flowStatus" and a "files" object')
    out = LineMap(FMT, limits, roots)
    for name, data in files.items():
        expressions = data.get("expressions") if isinstance(data, dict) else None
        if not isinstance(expressions, dict) or not name.strip():
            out.report.skipped.add(f"{name}: {str(data)[:40]}", f'"files" entry {name!r}')
            continue
        fc = out.file(name)
        for key, hits in (("covered_locs", 1), ("uncovered_locs", 0)):
            locs = expressions.get(key) or []
            if not isinstance(locs, list):
                out.report.skipped.add(f"{key}: {str(locs)[:40]}", f"file {name!r}")
                continue
            for i, loc in enumerate(locs):
                out.hit(fc, _start_line(loc), hits, loc, f"{key}[{i}] of {name!r}")
    return out.done()


def _start_line(loc: Any) -> Any:
    try:
        return loc["start"]["line"]
    except (TypeError, KeyError, IndexError):
        return None
