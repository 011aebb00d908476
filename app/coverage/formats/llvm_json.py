"""llvm-cov export JSON (``llvm-cov export -format=text``; what cargo-llvm-cov,
Swift's ``swift test --enable-code-coverage`` and clang's source-based
coverage write).

Shape::

    {"type": "llvm.coverage.json.export", "version": "2.0.1",
     "data": [{"files": [{"filename": "/abs/a.c",
                          "segments": [[line, col, count, has_count, is_region_entry, is_gap], ...],
                          "branches": [[l1, c1, l2, c2, true_count, false_count, file, exp, kind]],
                          "expansions": [...], "summary": {...}}],
               "functions": [...], "totals": {...}}]}

Line hits are computed from the segments exactly as llvm-cov's own
``LineCoverageStats`` does (and so its ``report`` and ``export
-format=lcov``): a line is executable when a counted region starts on it or
a counted region carried over from an earlier line covers it, and not when
a skipped region starts on it; its count is the largest of the carried
count and those of the region entries (gap regions excluded) that start on
it. Each branch region is two identity-known branches, its true and its
false outcome (``llvm:<line>:<col>:t`` / ``:f``). Macro expansions and
functions are not read.
"""

from __future__ import annotations

from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.paths import PathNormaliser

FMT = "llvm-cov export JSON"
EXPORT_TYPE = "llvm.coverage.json.export"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    report = Report()
    normalise = PathNormaliser(roots)
    records = [0]
    seen = {"type": False}

    def file_item(pos: int) -> int:
        data, end = js.value(text, pos)
        if not isinstance(data, dict):
            raise js.Bad("an entry of files is not an object", pos)
        name = data.get("filename")
        if not isinstance(name, str) or not name.strip():
            raise js.Bad("a file without a filename", pos)
        fc = _file(name, data, limits, pos)
        records[0] += len(fc.lines)
        if records[0] > limits.max_lines:
            raise limits.too_many_lines(FMT)
        path = normalise(name)
        mine = report.files.get(path)
        if mine is not None:
            mine.merge(fc)
        elif len(report.files) >= limits.max_files:
            raise limits.too_many_files(FMT)
        else:
            report.files[path] = fc
        return end

    def export_value(key: str, pos: int) -> int:
        if key == "files":
            return js.walk_array(text, pos, file_item)
        return js.value(text, pos)[1]  # functions, totals

    def top_value(key: str, pos: int) -> int:
        if key == "data":
            return js.walk_array(text, pos, lambda p: js.walk_object(text, p, export_value))
        value, end = js.value(text, pos)
        if key == "type":
            if value != EXPORT_TYPE:
                raise js.Bad(f'"type" is {str(value)[:60]!r}, not {EXPORT_TYPE!r}', pos)
            seen["type"] = True
        return end

    js.end_of_document(text, js.walk_object(text, 0, top_value))
    if not seen["type"]:
        raise js.Bad(f'the report has no "type": "{EXPORT_TYPE}"')
    return report


def _segments(data: Any, where: str, limits: ParseLimits, pos: int) -> dict[int, int]:
    """Line -> count, as llvm-cov's LineCoverageStats computes it."""
    if not isinstance(data, list):
        raise js.Bad(f"segments of {where} is not a list", pos)
    lines: dict[int, int] = {}
    wrapped: list[Any] | None = None  # the last segment of the last line that had any
    i, n = 0, len(data)
    while i < n:
        first = data[i]
        if not isinstance(first, list) or len(first) < 5:
            raise js.Bad(f"segment {i} of {where} is not [line, col, count, ...]", pos)
        line = js.line_number(first[0], f"segment {i} of {where}: line", limits, pos)
        j = i
        while j < n and isinstance(data[j], list) and data[j][:1] == [line]:
            j += 1
        on_line = data[i:j]
        starts = 0
        best = 0
        for seg in on_line:
            if len(seg) < 5:
                raise js.Bad(f"a segment on line {line} of {where} is too short", pos)
            count = js.count(seg[2], f"count on line {line} of {where}", pos)
            gap = bool(seg[5]) if len(seg) > 5 else False
            if seg[3] and seg[4] and not gap:
                starts += 1
                best = max(best, count)
        skipped = not on_line[0][3] and on_line[0][4]
        if not skipped and ((wrapped is not None and wrapped[3]) or starts):
            carried = js.count(wrapped[2], "count", pos) if wrapped is not None else 0
            lines[line] = max(carried, best)
        # lines with no segment of their own, up to the next segment's line
        wrapped = on_line[-1]
        following = data[j][0] if j < n and isinstance(data[j], list) and data[j] else None
        if following is not None and wrapped[3]:
            if type(following) is not int or following <= line:
                raise js.Bad(f"segments of {where} are not in line order", pos)
            if following - line > limits.max_lines:
                raise limits.too_many_lines(FMT)
            carried = js.count(wrapped[2], "count", pos)
            for ln in range(line + 1, following):
                lines[ln] = carried
        i = j
    return lines


def _file(name: str, data: dict[str, Any], limits: ParseLimits, pos: int) -> FileCoverage:
    where = repr(name[:80])
    lines = _segments(data.get("segments", []), where, limits, pos)
    raw_branches = data.get("branches", [])
    if not isinstance(raw_branches, list):
        raise js.Bad(f"branches of {where} is not a list", pos)
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}
    for b in raw_branches:
        if not isinstance(b, list) or len(b) < 6:
            raise js.Bad(f"a branch of {where} is not [line, col, ..., true, false, ...]", pos)
        ln = js.line_number(b[0], f"branch line of {where}", limits, pos)
        col = b[1]
        if type(col) is not int:
            raise js.Bad(f"a branch column of {where} is not a number", pos)
        ids = all_ids.setdefault(ln, set())
        for outcome, taken in (("t", b[4]), ("f", b[5])):
            ident = f"llvm:{col}:{outcome}"
            ids.add(ident)
            if js.count(taken, f"branch count on line {ln} of {where}", pos):
                covered.setdefault(ln, set()).add(ident)
    branches = {
        ln: Branches.of_one_scheme(frozenset(covered.get(ln, ())), frozenset(ids))
        for ln, ids in all_ids.items()
    }
    return FileCoverage(lines, branches)
