"""llvm-cov export JSON: line hits from regions, two-outcome branches, precise errors."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

LLVM = (
    b'{"type": "llvm.coverage.json.export", "version": "2.0.1", "data": [{"files": [\n'
    b' {"filename": "/w/a.c", "expansions": [], "summary": {},\n'
    b'  "segments": [[1, 1, 3, true, true, false], [2, 5, 0, true, true, false],\n'
    b"               [2, 9, 3, true, false, false], [4, 2, 0, false, false, false]],\n"
    b'  "branches": [[2, 5, 2, 9, 3, 0, 0, 0, 4]]}],\n'
    b' "functions": [], "totals": {}}]}\n'
)


def test_llvm_lines_follow_the_regions_that_cover_them_and_branches_have_two_outcomes() -> None:
    fc = parse_report(LLVM, roots=["/w"]).files["a.c"]
    # line 1 starts a region run 3 times, 2 has a region run 0 times and the
    # 3-count region resumes; line 3 is inside the resumed region; line 4 ends it
    assert fc.lines == {1: 3, 2: 3, 3: 3, 4: 3}
    assert fc.branches[2].covered_ids == frozenset({"llvm:5:t"})
    assert fc.branches[2].all_ids == frozenset({"llvm:5:t", "llvm:5:f"})


@pytest.mark.parametrize(
    ("raw", "reason", "line"),
    [
        (LLVM.replace(b"[2, 5, 0, true", b"[0, 5, 0, true"), "line", 2),
        (LLVM.replace(b"3, 0, 0, 0, 4]", b"-3, 0, 0, 0, 4]"), "count", 2),
        (LLVM.replace(b'"type": "llvm', b'"type": 3, "t": "llvm'), '"type" is', 1),
        (LLVM.replace(b'"data": [{', b'"data": {'), "expected '['", 1),
        (LLVM + b"]", "extra data", 7),
    ],
)
def test_a_broken_llvm_report_names_the_format_the_problem_and_the_line(
    raw: bytes, reason: str, line: int
) -> None:
    assert refused(raw, "llvm-cov export JSON", reason).line == line
