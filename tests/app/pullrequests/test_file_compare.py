"""One file of the head against its base: line states, the patch's lines,
indirect changes without a diff."""

from __future__ import annotations

from app.coverage import Branches, Totals
from app.coverage.columnar import Columns
from app.pullrequests.file_compare import (
    HIT,
    MISS,
    PARTIAL,
    columns_totals,
    indirect_lines,
    line_states,
    patch_lines,
    same_states,
)


def columns(hits: dict[int, int], branches: dict[int, Branches] | None = None) -> Columns:
    return list(hits), list(hits.values()), dict(branches or {})


def test_a_hit_line_with_a_branch_missed_is_partial() -> None:
    cols = columns({1: 3, 2: 0, 3: 1}, {3: Branches(1, 2), 2: Branches(0, 2)})
    assert line_states(cols) == {1: HIT, 2: MISS, 3: PARTIAL}
    assert columns_totals(cols) == Totals(1, 3, 1, 1, 1, 2)


def test_the_patch_counts_only_added_lines_that_have_coverage() -> None:
    cols = columns({1: 1, 2: 0, 3: 1}, {3: Branches(1, 2)})
    totals, misses, partials = patch_lines(cols, [1, 2, 3, 9])
    assert totals == Totals(1, 3, 1, 1, 1, 1)
    assert (misses, partials) == ([2], [3])
    assert patch_lines(None, [1]) == (Totals(), [], [])


def test_without_a_diff_an_indirect_change_is_a_line_whose_state_differs() -> None:
    base = columns({1: 1, 2: 0, 3: 1})
    assert same_states(columns({1: 5, 2: 0, 3: 2}), base)  # hit counts are not states
    assert indirect_lines(columns({1: 5, 2: 0, 3: 2}), base, None) == 0
    assert indirect_lines(columns({1: 1, 2: 1, 4: 0}), base, None) == 3  # 2 hit, 3 gone, 4 new
