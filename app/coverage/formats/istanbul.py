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
A file's ``statementMap`` and ``branchMap`` in the plain shape every
Istanbul writer emits (``{"0": {"start": {"line": L, "column": C}, "end":
{...}}, ...}``) are checked and read by regular expressions instead of being
decoded into three or more dicts per entry; any other shape, and any error,
takes the general path, so results and error messages are the same either way.
"""

from __future__ import annotations

import re
from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids

FMT = "Istanbul JSON"
_WS = r"[ \t\n\r]*+"
_INT = r"-?(?:0|[1-9][0-9]*)"


def _key(name: str) -> str:
    return f'"{name}"{_WS}:{_WS}'


def _plain_map(entry: str) -> re.Pattern[str]:
    """An object of ``"<digits>": entry`` members; a match is valid JSON. The
    quantifiers are possessive, so a long map keeps no backtracking state."""
    member = f'"[0-9]+"{_WS}:{_WS}{entry}{_WS}'
    return re.compile(rf'\{{{_WS}(?:{member}(?:,{_WS}(?=")|(?=\}})))*+\}}')


def _lines(first: str) -> re.Pattern[str]:
    """Each member's start line, inside a span that matched a plain map."""
    return re.compile(first + rf"\{{{_WS}{_key('line')}({_INT})")


_POINT = rf"\{{{_WS}{_key('line')}{_INT}{_WS},{_WS}{_key('column')}(?:{_INT}|null){_WS}\}}"
_LOC = rf"\{{{_WS}{_key('start')}{_POINT}{_WS},{_WS}{_key('end')}{_POINT}{_WS}\}}"
_BRANCH = (
    rf"\{{{_WS}{_key('loc')}{_LOC}{_WS},{_WS}{_key('type')}\"[A-Za-z-]*\"{_WS},{_WS}"
    rf"{_key('locations')}\[{_WS}(?:{_LOC}{_WS}(?:,{_WS}(?=\{{)|(?=\])))*+\]{_WS},{_WS}"
    rf"{_key('line')}{_INT}{_WS}\}}"
)
#: The plain shape every Istanbul writer gives statementMap and branchMap, and
#: the key and start line of each entry inside a span that matched it.
_FAST = {
    "statementMap": (_plain_map(_LOC), _lines(_key("start"))),
    "branchMap": (_plain_map(_BRANCH), _lines(_key("loc") + r"\{" + _WS + _key("start"))),
}


#: Each member's key, inside a span that matched a plain map.
_KEYS = re.compile(f'"([0-9]+)"{_WS}:{_WS}' + r"\{")


class _Starts(dict[str, int]):
    """A statementMap or branchMap read by the fast path: key -> start line."""


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    out = js.Files(FMT, limits, roots)

    def file_value(key: str, vpos: int) -> int:
        data, end = _file_entry(text, vpos)
        if not isinstance(data, dict):
            raise js.Bad(f"the entry of {key[:80]!r} is not an object", vpos)
        path = data.get("path", key)
        if not isinstance(path, str) or not path.strip():
            raise js.Bad(f"the entry of {key[:80]!r} has no path", vpos)
        out.add(path, _file(path, data, limits, vpos))
        return end

    js.end_of_document(text, js.walk_object(text, 0, file_value))
    return out.report


def _file_entry(text: str, pos: int) -> tuple[Any, int]:
    """The file object at ``pos`` and its end, its statementMap read by the fast
    path when it has the plain shape; the general decoder otherwise."""
    pos = js.skip(text, pos)
    if text.startswith("{", pos):
        data: dict[str, Any] = {}

        def member(key: str, vpos: int) -> int:
            fast = _FAST.get(key)
            if fast is not None:
                plain = fast[0].match(text, vpos)
                if plain is not None:
                    end = plain.end()
                    lines = map(int, fast[1].findall(text, vpos, end))
                    data[key] = _Starts(zip(_KEYS.findall(text, vpos, end), lines, strict=True))
                    return plain.end()
            data[key], end = js.value(text, vpos)
            return end

        try:
            return data, js.walk_object(text, pos, member)
        except (js.Bad, ValueError, RecursionError):
            pass  # the general decoder below finds the same error and says where
    return js.value(text, pos)


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
    if isinstance(statements, _Starts):
        for key, hits in counts.items():
            start = statements.get(key)
            if start is None:
                continue
            if not (0 < start <= max_ln and type(hits) is int and hits >= 0):
                what = f"statement {key[:20]!r} of {where}"
                js.line_number(start, f"{what} start line", limits, pos)
                hits = js.count(hits, f"count of {what}", pos)
            if hits > get(start, -1):
                lines[start] = hits
    else:
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
        if type(branch) is int and type(taken) is list:  # read by the fast path
            ln = js.line_number(branch, f"{what} start line", limits, pos)
        elif not isinstance(branch, dict) or not isinstance(taken, list):
            raise js.Bad(f"{what} is not an object with a list of counts", pos)
        elif "loc" in branch:  # where Istanbul's LCOV writer puts the branch
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
    return FileCoverage(lines, branches_of_ids(all_ids, covered))
