"""elm-coverage's JSON (``elm-coverage`` writes ``.coverage/coverage.json``).

Shape::

    {"coverageData": {"Calc": [
        {"type": "declaration", "name": "add", "complexity": 1, "count": 3,
         "from": {"line": 4, "column": 1}, "to": {"line": 6, "column": 12}},
        {"type": "caseBranch", "count": 0, "from": {...}, "to": {...}}]},
     "moduleMap": {"Calc": "src/Calc.elm"}}

Each annotated expression (a declaration, a lambda's body, an ``if`` or
``case`` branch, a ``let`` declaration) ran ``count`` times, and ``moduleMap``
names each module's file. Every line an expression spans, ``from.line`` to
``to.line``, takes its count; a line several expressions cover keeps the
largest, as Codecov's reading does (its worker's
``services/report/languages/elm.py``). Codecov leaves out the last line of
an expression spanning lines (a quirk: it writes the first line twice);
covworker counts it, as elm-coverage's own report marks the whole
expression. An expression without readable lines or count is skipped and
named; a module missing from ``moduleMap`` too.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from app.coverage import jsonstream as js
from app.coverage.formats.linemap import LineMap
from app.coverage.limits import ParseLimits
from app.coverage.model import Report

FMT = "elm-coverage JSON"


class _Line(msgspec.Struct):
    line: int


class _Note(msgspec.Struct):
    start: _Line = msgspec.field(name="from")
    to: _Line
    count: int = 0


class _Doc(msgspec.Struct):
    coverageData: dict[str, list[_Note]]  # noqa: N815 - elm-coverage's names
    moduleMap: dict[str, str]  # noqa: N815


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
    for module, notes in doc.coverageData.items():
        path = doc.moduleMap.get(module)
        if path is None or not path.strip():
            out.report.skipped.add(f"{module}: {len(notes)} annotations", "coverageData")
            continue
        lines = out.file(path).lines
        for i, note in enumerate(notes):
            first, last, count = note.start.line, note.to.line, note.count
            if not 0 < first <= last <= max_ln or count < 0:
                out.count()
                out.report.skipped.add(f"{first}..{last}: {count}", f"{module} annotation {i}")
                continue
            for ln in range(first, last + 1):
                out.count()
                if count > lines.get(ln, -1):
                    lines[ln] = count
    return out.done()


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc = json.loads(text)
    data = doc.get("coverageData") if isinstance(doc, dict) else None
    modules = doc.get("moduleMap") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or not isinstance(modules, dict):
        raise js.Bad('an elm-coverage report has a "coverageData" and a "moduleMap" object')
    out = LineMap(FMT, limits, roots)
    max_ln = limits.max_line_number
    for module, notes in data.items():
        path = modules.get(module)
        if not isinstance(path, str) or not path.strip() or not isinstance(notes, list):
            out.report.skipped.add(f"{module}: {str(notes)[:40]}", "coverageData")
            continue
        fc = out.file(path)
        lines = fc.lines
        for i, note in enumerate(notes):
            first, last, count = _span(note)
            if first is None or not 0 < first <= last <= max_ln or count < 0:
                out.count()
                out.report.skipped.add(str(note), f"{module} annotation {i}")
                continue
            for ln in range(first, last + 1):
                out.count()
                if count > lines.get(ln, -1):
                    lines[ln] = count
    return out.done()


def _span(note: Any) -> tuple[Any, Any, int]:
    """The first and last line of an annotation and its count (None: unreadable)."""
    try:
        first, last, count = note["from"]["line"], note["to"]["line"], note.get("count", 0)
    except (TypeError, KeyError, AttributeError):
        return None, None, 0
    if type(first) is not int or type(last) is not int or type(count) is not int:
        return None, None, 0
    return first, last, count
