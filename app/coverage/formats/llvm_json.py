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
false outcome (``llvm:<col>:t`` / ``:f`` on its line). The branch regions
of a macro expansion (``expansions[].branches``) count on the line the
macro is used on, as llvm-cov's own LCOV export counts them
(``llvm:<expansion col>><line>.<col>:t``: two uses of one macro on a line
are two sets of branches); an expansion nested in another is not in the
export, so its branches cannot be read. Functions are not read.
"""

from __future__ import annotations

from typing import Any

from app.coverage import jsonstream as js
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report, branches_of_ids

FMT = "llvm-cov export JSON"
EXPORT_TYPE = "llvm.coverage.json.export"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    out = js.Files(FMT, limits, roots)
    seen = {"type": False}

    def file_item(pos: int) -> int:
        data, end = js.value(text, pos)
        if not isinstance(data, dict):
            raise js.Bad("an entry of files is not an object", pos)
        name = data.get("filename")
        if not isinstance(name, str) or not name.strip():
            raise js.Bad("a file without a filename", pos)
        out.add(name, _file(name, data, limits, pos))
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
    return out.report


def _segments(data: Any, where: str, limits: ParseLimits, pos: int) -> dict[int, int]:
    """Line -> count, as llvm-cov's LineCoverageStats computes it (one pass).

    A line is closed when the next line's first segment arrives (and at the
    end): it counts when its first segment is not a skipped region's start
    and a counted region was carried into it or starts on it."""
    if not isinstance(data, list):
        raise js.Bad(f"segments of {where} is not a list", pos)
    lines: dict[int, int] = {}
    max_ln = limits.max_line_number
    budget = limits.max_lines
    wrapped: list[Any] | None = None  # the last segment of the last line that had any
    line = 0  # the line being read
    first: list[Any] | None = None  # its first segment
    last: list[Any] = []  # its last segment so far
    starts = False  # whether a counted, non-gap region starts on it
    best = 0  # the largest count of those

    for seg in data:
        try:  # [line, col, count, has_count, is_region_entry(, is_gap)]
            ln, count, entry = seg[0], seg[2], seg[3] and seg[4]
            ok = type(ln) is int and type(count) is int and count >= 0 and len(seg) >= 5
            ok = ok and 0 < ln <= max_ln
        except (TypeError, IndexError, KeyError):
            ok = False
        if not ok:
            raise js.Bad(
                f"segment {str(seg)[:60]} of {where} is not [line, col, count, ...] "
                f"with a line in 1..{max_ln} and a count >= 0",
                pos,
            )
        if ln != line:
            if first is not None:
                if ln < line:
                    raise js.Bad(f"segments of {where} are not in line order", pos)
                # close ``line``: first[3] or not first[4] is "not a skipped region's start"
                if (first[3] or not first[4]) and (starts or (wrapped is not None and wrapped[3])):
                    carried = wrapped[2] if wrapped is not None else 0
                    lines[line] = carried if carried > best else best
                if last[3]:  # lines inside the region, up to this one
                    if ln - line > budget:
                        raise limits.too_many_lines(FMT)
                    for inside in range(line + 1, ln):
                        lines[inside] = last[2]
                wrapped = last
            line, first, starts, best = ln, seg, False, 0
        if entry and not (len(seg) > 5 and seg[5]):
            starts = True
            if count > best:
                best = count
        last = seg
    closing = first is not None and (first[3] or not first[4])
    if closing and (starts or (wrapped is not None and wrapped[3])):
        carried = wrapped[2] if wrapped is not None else 0
        lines[line] = carried if carried > best else best
    return lines


def _file(name: str, data: dict[str, Any], limits: ParseLimits, pos: int) -> FileCoverage:
    where = repr(name[:80])
    lines = _segments(data.get("segments", []), where, limits, pos)
    raw_branches = data.get("branches", [])
    if not isinstance(raw_branches, list):
        raise js.Bad(f"branches of {where} is not a list", pos)
    all_ids: dict[int, set[str]] = {}
    covered: dict[int, set[str]] = {}
    _branches(raw_branches, None, where, limits, pos, all_ids, covered)
    expansions = data.get("expansions", [])
    if not isinstance(expansions, list):
        raise js.Bad(f"expansions of {where} is not a list", pos)
    for expansion in expansions:
        region = expansion.get("source_region") if isinstance(expansion, dict) else None
        if not isinstance(region, list) or len(region) < 2 or type(region[1]) is not int:
            raise js.Bad(f"an expansion of {where} has no source_region [line, col, ...]", pos)
        branches = expansion.get("branches", [])
        if not isinstance(branches, list):
            raise js.Bad(f"branches of an expansion of {where} is not a list", pos)
        if branches:
            ln = js.line_number(region[0], f"expansion line of {where}", limits, pos)
            _branches(branches, (ln, region[1]), where, limits, pos, all_ids, covered)
    return FileCoverage(lines, branches_of_ids(all_ids, covered))


def _branches(
    raw_branches: list[Any],
    expansion: tuple[int, int] | None,
    where: str,
    limits: ParseLimits,
    pos: int,
    all_ids: dict[int, set[str]],
    covered: dict[int, set[str]],
) -> None:
    """Each branch region's two outcomes, on its own line; those of a macro
    ``expansion`` (its line and column) on the expansion's line, named by
    the expansion's column and the region's place in the macro, as
    llvm-cov's own LCOV export counts them."""
    for b in raw_branches:
        if not isinstance(b, list) or len(b) < 6:
            raise js.Bad(f"a branch of {where} is not [line, col, ..., true, false, ...]", pos)
        ln = js.line_number(b[0], f"branch line of {where}", limits, pos)
        col = b[1]
        if type(col) is not int:
            raise js.Bad(f"a branch column of {where} is not a number", pos)
        if expansion is None:
            prefix = f"llvm:{col}"
        else:
            prefix = f"llvm:{expansion[1]}>{ln}.{col}"
            ln = expansion[0]
        ids = all_ids.setdefault(ln, set())
        for outcome, taken in (("t", b[4]), ("f", b[5])):
            ident = f"{prefix}:{outcome}"
            ids.add(ident)
            if js.count(taken, f"branch count on line {ln} of {where}", pos):
                covered.setdefault(ln, set()).add(ident)
