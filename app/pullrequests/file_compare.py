"""One file of the head against the base, on the columnar report: line states,
the patch's lines, indirect changes and removed lines, and the totals they sum to."""

from __future__ import annotations

from typing import Any

from app.coverage.columnar import Columns, Part, file_counts
from app.coverage.model import Totals, summed
from app.pullrequests.config import path_matches
from app.pullrequests.diff import REMOVED, Diff, FileDiff

MISS, HIT, PARTIAL = 0, 1, 2


def columns_totals(cols: Columns) -> Totals:
    """One file's totals (as :func:`app.coverage.model.file_totals`)."""
    n, missed, partials, branches = file_counts(cols)
    return Totals(1, n, n - missed - partials, missed, partials, branches)


def line_states(cols: Columns) -> dict[int, int]:
    """Line -> MISS, HIT or PARTIAL."""
    lns, hits, br = cols
    states: dict[int, int] = dict(zip(lns, map(bool, hits), strict=True))
    for ln, b in br.items():
        if b.covered < b.total and states.get(ln):
            states[ln] = PARTIAL
    return states


def same_states(a: Columns, b: Columns) -> bool:
    """Whether two files have the same lines in the same states (fast, in C mostly)."""
    if a[0] != b[0]:
        return False
    if a[1] != b[1] and bytes(map(bool, a[1])) != bytes(map(bool, b[1])):
        return False
    if a[2] == b[2]:
        return True
    return _partials(a) == _partials(b)


def _partials(cols: Columns) -> set[int]:
    return {ln for ln, s in line_states(cols).items() if s == PARTIAL} if cols[2] else set()


def patch_lines(cols: Columns | None, added: list[int]) -> tuple[Totals, list[int], list[int]]:
    """Totals of the ``added`` lines that have coverage, and the missed and partial ones."""
    if cols is None or not added:
        return Totals(), [], []
    states = line_states(cols)
    hits, misses, partials = 0, [], []
    for ln in added:
        state = states.get(ln)
        if state is None:
            continue
        if state == PARTIAL:
            partials.append(ln)
        elif state:
            hits += 1
        else:
            misses.append(ln)
    lines = hits + len(misses) + len(partials)
    br = cols[2]
    branches = sum(1 for ln in added if ln in states and ln in br)
    totals = Totals(1 if lines else 0, lines, hits, len(misses), len(partials), branches)
    return totals, misses, partials


def indirect_lines(head: Columns, base: Columns, fd: FileDiff | None) -> int:
    """Lines outside the diff whose state differs, the base shifted by the diff."""
    if fd is None:
        if same_states(head, base):
            return 0
        h, b = line_states(head), line_states(base)
        return sum(1 for ln in h.keys() | b.keys() if h.get(ln) != b.get(ln))
    shift = fd.shifter()
    h = line_states(head)
    shifted: dict[int, int] = {}
    for ln, state in line_states(base).items():
        to = shift(ln)
        if to is not None:
            shifted[to] = state
    added = set(fd.added)
    return sum(1 for ln in (h.keys() | shifted.keys()) - added if h.get(ln) != shifted.get(ln))


def removed_totals(base: Columns, fd: FileDiff) -> Totals:
    """The hits, misses and partials among the base lines ``fd`` removed."""
    if fd.status == REMOVED:
        return columns_totals(base)
    if not fd.removed:
        return Totals()
    states, br = line_states(base), base[2]
    found = [states[ln] for ln in fd.removed if ln in states]
    hits, partials = found.count(HIT), found.count(PARTIAL)
    misses = len(found) - hits - partials
    branches = sum(1 for ln in fd.removed if ln in states and ln in br)
    return Totals(1 if found else 0, len(found), hits, misses, partials, branches)


def part_totals(part: Part, paths: tuple[str, ...] | None = None) -> Totals:
    """A report's totals (restricted to ``paths`` when given)."""
    return summed(
        columns_totals(cols)
        for path, cols in part.files.items()
        if not paths or path_matches(paths, path)
    )


def patch_totals(part: Part, diff: Diff, keep: Any) -> Totals:
    total = Totals()
    for fd in diff.files.values():
        if fd.status == REMOVED or not fd.added or (keep and not keep(fd.path)):
            continue
        t, _, _ = patch_lines(part.files.get(fd.path), fd.added)
        total = total + t
    return total
