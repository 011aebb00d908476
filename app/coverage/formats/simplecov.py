"""SimpleCov JSON (Ruby): ``.resultset.json``, the JSON formatter's
``coverage.json`` (simplecov_json_formatter) and simplecov-json's ``coverage.json``.

Shapes::

    .resultset.json   {"RSpec": {"coverage": {"/abs/a.rb": {"lines": [null, 1, 0],
                                   "branches": {"[:if, 0, 4, 4, 10, 7]":
                                                {"[:then, 1, 5, 6, 5, 16]": 1, ...}}}},
                                 "timestamp": 1700000000}, "Minitest": {...}}
    coverage.json     {"meta": {"simplecov_version": "0.22.0"},
                       "coverage": {"/abs/a.rb": {"lines": [...], "branches": [
                           {"type": "then", "start_line": 5, "end_line": 5,
                            "coverage": 1, "inline": false, "report_line": 4}]}}}
    simplecov-json    {"timestamp": ..., "command_name": "RSpec",
                       "files": [{"filename": "/abs/a.rb", "coverage": {"lines": [...]}}]}

``lines[i]`` is the hit count of line ``i + 1``; ``null`` (and SimpleCov's
``"ignored"``) marks a line that is not code. Before SimpleCov 0.18 a file's
entry was the ``lines`` array itself. The command names of a resultset add
up, as SimpleCov merges them. Branches are identity-known: in a resultset
each branch is ``rb:<id>`` on the line SimpleCov reports it on (its start
line if it starts on its condition's line, else the line before); the JSON
formatter's list has no ids, so its branches are ``rb:<type>:<start>:<n>``
on ``report_line``. The two naming schemes do not merge with each other.
"""

from __future__ import annotations

import re
from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids

FMT = "SimpleCov JSON"
# "[:if, 0, 4, 4, 10, 7]": type, id, start line, start column, end line, end column
_RUBY_TUPLE = re.compile(r"\[:?(\w+), (\d+), (\d+), (-?\d+), (\d+), (-?\d+)\]")


def report_line(start: int, condition_start: int) -> int:
    """The line SimpleCov shows a branch on (``SimpleCov::SourceFile::Branch#report_line``):
    its start line when it starts on its condition's line (an inline branch),
    else the line before it, which is the ``if`` / ``else`` / ``when`` it
    belongs to."""
    return start if start == condition_start else start - 1


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


class _Files(js.Files):
    """Collects files into the report, within the limits."""

    def add_entry(self, path: Any, entry: Any, pos: int) -> None:
        if not isinstance(path, str) or not path.strip():
            raise js.Bad("a file without a name", pos)
        self.add(path, _file(path, entry, self.limits, pos))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    out = _Files(FMT, limits, roots)
    kinds: set[str] = set()

    def coverage_map(pos: int) -> int:
        def file_value(path: str, vpos: int) -> int:
            entry, end = js.value(text, vpos)
            out.add_entry(path, entry, vpos)
            return end

        return js.walk_object(text, pos, file_value)

    def command_value(key: str, pos: int) -> int:
        if key == "coverage":
            return coverage_map(pos)
        return js.value(text, pos)[1]

    def files_item(pos: int) -> int:
        entry, end = js.value(text, pos)
        if not isinstance(entry, dict):
            raise js.Bad("an entry of files is not an object", pos)
        out.add_entry(entry.get("filename"), entry.get("coverage"), pos)
        return end

    def top_value(key: str, pos: int) -> int:
        if key == "coverage":  # the JSON formatter
            kinds.add("formatter")
            return coverage_map(pos)
        if key == "files":  # simplecov-json
            kinds.add("simplecov-json")
            return js.walk_array(text, pos, files_item)
        if text[pos : pos + 1] == "{" and key not in ("meta", "groups", "metrics"):
            kinds.add("resultset")  # a command name
            return js.walk_object(text, pos, command_value)
        return js.value(text, pos)[1]

    js.end_of_document(text, js.walk_object(text, 0, top_value))
    if not kinds:
        raise js.Bad('the report has no "coverage" map, "files" list or command name')
    return out.report


def _lines(value: Any, where: str, limits: ParseLimits, pos: int) -> dict[int, int]:
    if not isinstance(value, list):
        raise js.Bad(f"lines of {where} is not a list", pos)
    if len(value) > limits.max_line_number:
        raise js.Bad(f"lines of {where} is longer than {limits.max_line_number} lines", pos)
    lines = {}
    for i, hits in enumerate(value):
        if hits is None or hits == "ignored":
            continue
        lines[i + 1] = js.count(hits, f"count of line {i + 1} of {where}", pos)
    return lines


def _file(path: str, entry: Any, limits: ParseLimits, pos: int) -> FileCoverage:
    where = repr(path[:80])
    if isinstance(entry, list):  # SimpleCov before 0.18: the lines array alone
        return FileCoverage(_lines(entry, where, limits, pos))
    if not isinstance(entry, dict):
        raise js.Bad(f"the coverage of {where} is not an object or a list", pos)
    lines = _lines(entry.get("lines", []), where, limits, pos)
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}

    def branch(ln: Any, ident: str, hits: Any) -> None:
        if hits == "ignored":  # :nocov: branches
            return
        ln = js.line_number(ln, f"branch line in {where}", limits, pos)
        all_ids.setdefault(ln, set()).add(ident)
        if js.count(hits, f"branch count in {where}", pos):
            covered.setdefault(ln, set()).add(ident)

    found = entry.get("branches") or {}
    if isinstance(found, dict):  # resultset: condition -> {branch: count}
        for condition, outcomes in found.items():
            head = _RUBY_TUPLE.fullmatch(condition)
            if head is None or not isinstance(outcomes, dict):
                raise js.Bad(f"branch {condition[:60]!r} of {where} is not like [:if, 0, ...]", pos)
            for name, hits in outcomes.items():
                m = _RUBY_TUPLE.fullmatch(name)
                if m is None:
                    raise js.Bad(
                        f"branch {name[:60]!r} of {where} is not like [:then, 1, ...]", pos
                    )
                branch(report_line(int(m[3]), int(head[3])), f"rb:{m[2]}", hits)
    elif isinstance(found, list):  # the JSON formatter
        seen: dict[tuple[Any, Any], int] = {}
        for b in found:
            if not isinstance(b, dict):
                raise js.Bad(f"a branch of {where} is not an object", pos)
            key = (b.get("type"), b.get("start_line"))
            n = seen[key] = seen.get(key, -1) + 1
            line = b.get("report_line", b.get("start_line"))
            branch(line, f"rb:{key[0]}:{key[1]}:{n}", b.get("coverage"))
    else:
        raise js.Bad(f"branches of {where} is not an object or a list", pos)
    return FileCoverage(lines, branches_of_ids(all_ids, covered))
