"""coverage.py JSON (``coverage json``, formats 1 to 3).

Shape::

    {"meta": {"format": 3, "version": "7.6.1", "branch_coverage": true, ...},
     "files": {"pkg/mod.py": {"executed_lines": [1, 2], "missing_lines": [3],
                              "executed_branches": [[2, 3]], "missing_branches": [[2, -1]],
                              ...}},
     "totals": {...}}

coverage.py records whether a line ran, not how often: executed lines have
1 hit, missing lines 0. Branches are arcs ``[from, to]`` and are
identity-known (``arc:<to>`` on line ``from``), so separate runs union
exactly as ``coverage combine`` does.

The top level is read key by key and each file's object is decoded on its
own (the C JSON decoder, one file at a time), so the whole report never
exists as one tree of Python objects.
"""

from __future__ import annotations

from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import NO_CODE, ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids

FMT = "coverage.py JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    out = js.Files(FMT, limits, roots)
    report = out.report
    seen = {"meta": False, "files": False}

    def file_value(path: str, vpos: int) -> int:
        value, end = js.value(text, vpos)
        if not isinstance(value, dict):
            raise js.Bad(f"file {path!r} is not an object", vpos)
        out.add(path, _file(path, value, limits, vpos))
        return end

    def top_value(key: str, vpos: int) -> int:
        if key == "files":
            seen["files"] = True
            if text[vpos : vpos + 1] != "{":
                raise js.Bad('"files" is not an object', vpos)
            return js.walk_object(text, vpos, file_value)
        value, end = js.value(text, vpos)
        if key == "totals" and isinstance(value, dict) and value.get("num_statements") == 0:
            seen["no_code"] = True
        if key == "meta":
            seen["meta"] = True
            if not isinstance(value, dict):
                raise js.Bad('"meta" is not an object', vpos)
        return end

    end = js.walk_object(text, 0, top_value)
    if text[end:].strip():
        raise js.Bad("extra data after the JSON document", end)
    if not seen["files"]:
        raise js.Bad('the report has no "files" object')
    if seen.get("no_code") and not report.files:
        report.warnings.append(NO_CODE)
    return report


def _ints(value: Any, what: str, path: str, limits: ParseLimits, pos: int) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise js.Bad(f"{what} of {path!r} is not a list", pos)
    if value and (set(map(type, value)) != {int} or min(value) < 0):
        raise js.Bad(f"{what} of {path!r} holds something that is not a line number", pos)
    if value and max(value) > limits.max_line_number:
        raise js.Bad(f"{what} of {path!r} holds a line number out of range", pos)
    return value


def _arcs(value: Any, what: str, path: str, pos: int) -> list[tuple[int, int]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise js.Bad(f"{what} of {path!r} is not a list", pos)
    arcs = []
    for arc in value:
        if (
            not isinstance(arc, list)
            or len(arc) != 2
            or type(arc[0]) is not int
            or type(arc[1]) is not int
        ):
            raise js.Bad(f"{what} of {path!r} holds {arc!r}, not a [from, to] arc", pos)
        arcs.append((arc[0], arc[1]))
    return arcs


def _file(path: str, data: dict[str, Any], limits: ParseLimits, pos: int) -> FileCoverage:
    if not path.strip():
        raise js.Bad("a file with an empty path", pos)
    executed = _ints(data.get("executed_lines"), "executed_lines", path, limits, pos)
    missing = _ints(data.get("missing_lines"), "missing_lines", path, limits, pos)
    lines = dict.fromkeys(missing, 0)
    lines.update(dict.fromkeys(executed, 1))
    lines.pop(0, None)
    taken = _arcs(data.get("executed_branches"), "executed_branches", path, pos)
    not_taken = _arcs(data.get("missing_branches"), "missing_branches", path, pos)
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}
    for arcs, hit in ((taken, True), (not_taken, False)):
        for src, dst in arcs:
            if src < 1:
                continue  # arcs from the module's entry carry no source line
            ident = f"arc:{dst}"
            all_ids.setdefault(src, set()).add(ident)
            if hit:
                covered.setdefault(src, set()).add(ident)
    return FileCoverage(lines, branches_of_ids(all_ids, covered))
