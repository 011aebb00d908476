"""gcov's JSON intermediate format (``gcov --json-format``, GCC 9 and later:
``.gcov.json.gz`` files, or ``-t`` to stdout with one document per line).

Shape::

    {"format_version": "1", "gcc_version": "12.2.0",
     "current_working_directory": "/build", "data_file": "a.gcda",
     "files": [{"file": "a.c",
                "lines": [{"line_number": 7, "count": 2, "unexecuted_block": false,
                           "function_name": "f",
                           "branches": [{"count": 1, "fallthrough": true, "throw": false}]}],
                "functions": [...]}]}

Each line entry is a line record; entries of one line number (one per
function or template instance that has code there) add, as gcov's own
text output and gcovr do. Branches are identity-known by their position
among the line's branches in the document (``gcov:<n>``): shards built from
the same object files list them in the same order, so they merge by
identity. Relative paths are relative to ``current_working_directory``,
which, like the caller's roots, is stripped from absolute ones. Several
documents one after another (``gcov -t`` over several files) are read as
one report. Functions are not read.
"""

from __future__ import annotations

from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids
from app.coverage.paths import PathNormaliser

FMT = "gcov JSON"
_IDS = tuple(f"gcov:{n}" for n in range(64))  # the ids of a line's first branches


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    out = js.Files(FMT, limits)
    pos = js.skip(text, 0)
    while pos < len(text):
        parsed: list[tuple[str, FileCoverage]] = []
        meta: dict[str, Any] = {}

        def file_item(item_pos: int, parsed: list[tuple[str, FileCoverage]] = parsed) -> int:
            data, end = js.value(text, item_pos)
            if not isinstance(data, dict):
                raise js.Bad("an entry of files is not an object", item_pos)
            name = data.get("file")
            if not isinstance(name, str) or not name.strip():
                raise js.Bad("a file without a name", item_pos)
            parsed.append((name, _file(name, data, limits, item_pos)))
            return end

        def top_value(key: str, vpos: int, meta: dict[str, Any] = meta) -> int:
            if key == "files":
                return js.walk_array(text, vpos, file_item)
            value, end = js.value(text, vpos)
            meta[key] = value
            return end

        start = pos
        pos = js.skip(text, js.walk_object(text, pos, top_value))
        if "format_version" not in meta and "gcc_version" not in meta:
            raise js.Bad("a document without format_version or gcc_version", start)
        cwd = meta.get("current_working_directory")
        out.normalise = PathNormaliser([*roots, *([cwd] if isinstance(cwd, str) else [])])
        for name, fc in parsed:
            out.add(name, fc)
    return out.report


def _file(name: str, data: dict[str, Any], limits: ParseLimits, pos: int) -> FileCoverage:
    where = repr(name[:80])
    entries = data.get("lines", [])
    if not isinstance(entries, list):
        raise js.Bad(f"lines of {where} is not a list", pos)
    lines: dict[int, int] = {}
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}
    max_ln = limits.max_line_number
    for entry in entries:
        try:  # the hot path: plain numbers
            ln, hits, branches = entry["line_number"], entry["count"], entry.get("branches")
            fast = type(ln) is int and 0 < ln <= max_ln and type(hits) is int and hits >= 0
        except (KeyError, TypeError, AttributeError):
            fast = False
        if not fast:
            if not isinstance(entry, dict):
                raise js.Bad(f"a line of {where} is not an object", pos)
            ln = js.line_number(entry.get("line_number"), f"line_number in {where}", limits, pos)
            hits = js.count(entry.get("count"), f"count of line {ln} of {where}", pos)
            branches = entry.get("branches")
        lines[ln] = lines.get(ln, 0) + hits
        if not branches:
            continue
        if not isinstance(branches, list):
            raise js.Bad(f"branches of line {ln} of {where} is not a list", pos)
        ids = all_ids.setdefault(ln, set())
        for branch in branches:
            try:  # the hot path: a plain count
                taken = branch["count"]
                fast = type(taken) is int and taken >= 0
            except (KeyError, TypeError):
                fast = False
            if not fast:
                if not isinstance(branch, dict):
                    raise js.Bad(f"a branch of line {ln} of {where} is not an object", pos)
                taken = js.count(branch.get("count"), f"branch count on line {ln} of {where}", pos)
            n = len(ids)
            ident = _IDS[n] if n < len(_IDS) else f"gcov:{n}"
            ids.add(ident)
            if taken:
                covered.setdefault(ln, set()).add(ident)
    return FileCoverage(lines, branches_of_ids(all_ids, covered))
