"""Istanbul JSON (``coverage-final.json`` of nyc, c8, Jest, Vitest, karma).

Shape::

    {"/abs/src/a.js": {"path": "/abs/src/a.js",
        "statementMap": {"0": {"start": {"line": 3, "column": 2}, "end": {...}}, ...},
        "s": {"0": 4, ...},
        "branchMap": {"0": {"line": 5, "type": "if", "loc": {...}, "locations": [..]}},
        "b": {"0": [3, 1]},
        "fnMap": {...}, "f": {...}}}

A line's hits are the largest count of the statements that start on it, as
istanbul-lib-coverage's own ``getLineCoverage`` (and so its LCOV and text
reporters) computes them. Branches are identity-known: location ``i`` of
branch ``k`` is ``lcov:k,i`` on the branch's line, exactly the id Istanbul's
LCOV writer gives it (``BRDA:line,k,i,count``), so the JSON and the LCOV of
one run, or of two shards, merge by identity. Functions are not read.

The top level is walked key by key and each file is decoded on its own.
"""

from __future__ import annotations

from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.paths import PathNormaliser

FMT = "Istanbul JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    report = Report()
    normalise = PathNormaliser(roots)
    records = [0]

    def file_value(key: str, vpos: int) -> int:
        data, end = js.value(text, vpos)
        if not isinstance(data, dict):
            raise js.Bad(f"the entry of {key[:80]!r} is not an object", vpos)
        path = data.get("path", key)
        if not isinstance(path, str) or not path.strip():
            raise js.Bad(f"the entry of {key[:80]!r} has no path", vpos)
        fc = _file(path, data, limits, vpos)
        records[0] += len(fc.lines)
        if records[0] > limits.max_lines:
            raise limits.too_many_lines(FMT)
        name = normalise(path)
        mine = report.files.get(name)
        if mine is not None:
            mine.merge(fc)
        elif len(report.files) >= limits.max_files:
            raise limits.too_many_files(FMT)
        else:
            report.files[name] = fc
        return end

    js.end_of_document(text, js.walk_object(text, 0, file_value))
    return report


def _map(data: dict[str, Any], key: str, path: str, pos: int) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise js.Bad(f'"{key}" of {path[:80]!r} is not an object', pos)
    return value


def _start_line(loc: Any, what: str, limits: ParseLimits, pos: int) -> int | None:
    """The start line of a location; ``None`` for an empty one (an implicit else)."""
    if not isinstance(loc, dict):
        raise js.Bad(f"{what} is not a location", pos)
    start = loc.get("start")
    if not isinstance(start, dict):
        raise js.Bad(f"{what} has no start", pos)
    if "line" not in start:
        return None
    return js.line_number(start["line"], f"{what} start line", limits, pos)


def _file(path: str, data: dict[str, Any], limits: ParseLimits, pos: int) -> FileCoverage:
    where = f"{path[:80]!r}"
    statements = _map(data, "statementMap", path, pos)
    counts = _map(data, "s", path, pos)
    lines: dict[int, int] = {}
    get = lines.get
    max_ln = limits.max_line_number
    for key, hits in counts.items():
        loc = statements.get(key)
        if loc is None:
            continue  # istanbul-lib-coverage skips a count without a statement too
        try:  # the hot path: a plain location and a plain count
            ln = loc["start"]["line"]
            fast = type(ln) is int and 0 < ln <= max_ln and type(hits) is int and hits >= 0
        except (KeyError, TypeError):
            fast = False
        if not fast:
            found = _start_line(loc, f"statement {key[:20]!r} of {where}", limits, pos)
            if found is None:
                continue
            ln = found
            hits = js.count(hits, f"count of statement {key[:20]!r} of {where}", pos)
        if hits > get(ln, -1):
            lines[ln] = hits
    branch_map = _map(data, "branchMap", path, pos)
    branch_counts = _map(data, "b", path, pos)
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}
    for key, taken in branch_counts.items():
        branch = branch_map.get(key)
        if branch is None:
            continue
        what = f"branch {key[:20]!r} of {where}"
        if not isinstance(branch, dict) or not isinstance(taken, list):
            raise js.Bad(f"{what} is not an object with a list of counts", pos)
        if "loc" in branch:  # where Istanbul's LCOV writer puts the branch
            ln = _start_line(branch["loc"], what, limits, pos)
            if ln is None:
                continue
        else:
            ln = js.line_number(branch.get("line"), f"{what} line", limits, pos)
        ids = all_ids.setdefault(ln, set())
        for i, hits in enumerate(taken):
            ident = f"lcov:{key},{i}"
            ids.add(ident)
            if js.count(hits, f"count {i} of {what}", pos):
                covered.setdefault(ln, set()).add(ident)
    branches = {
        ln: Branches.of_one_scheme(frozenset(covered.get(ln, ())), frozenset(ids))
        for ln, ids in all_ids.items()
        if ids
    }
    return FileCoverage(lines, branches)
