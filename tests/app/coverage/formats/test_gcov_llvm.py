"""gcov JSON and llvm-cov export JSON: shapes, gzip, and precise errors."""

from __future__ import annotations

import gzip

import pytest

from app.coverage import parse_report
from app.coverage.limits import ParseLimits
from app.errors import MalformedReport, ReportTooLarge

pytestmark = pytest.mark.timeout(60)

GCOV = (
    b'{"format_version": "1", "gcc_version": "12.2.0",\n'
    b' "files": [{"file": "/b/src/a.c", "functions": [],\n'
    b'  "lines": [{"line_number": 3, "count": 2, "branches": [{"count": 2}, {"count": 0}]},\n'
    b'            {"line_number": 3, "count": 1, "branches": []},\n'
    b'            {"line_number": 4, "count": 0, "branches": []}]}],\n'
    b' "current_working_directory": "/b", "data_file": "a.gcda"}\n'
)

LLVM = (
    b'{"type": "llvm.coverage.json.export", "version": "2.0.1", "data": [{"files": [\n'
    b' {"filename": "/w/a.c", "expansions": [], "summary": {},\n'
    b'  "segments": [[1, 1, 3, true, true, false], [2, 5, 0, true, true, false],\n'
    b"               [2, 9, 3, true, false, false], [4, 2, 0, false, false, false]],\n"
    b'  "branches": [[2, 5, 2, 9, 3, 0, 0, 0, 4]]}],\n'
    b' "functions": [], "totals": {}}]}\n'
)


def test_gcov_json_adds_entries_of_one_line_and_reads_gzip_and_several_documents() -> None:
    fc = parse_report(GCOV).files["src/a.c"]
    assert fc.lines == {3: 3, 4: 0}
    assert (fc.branches[3].covered, fc.branches[3].total) == (1, 2)
    twice = parse_report(gzip.compress(GCOV + GCOV.replace(b"/b/src/a.c", b"/b/src/b.c")))
    assert set(twice.files) == {"src/a.c", "src/b.c"}
    members = gzip.compress(GCOV) + gzip.compress(GCOV.replace(b"/b/src/a.c", b"/b/src/b.c"))
    assert set(parse_report(members).files) == {"src/a.c", "src/b.c"}  # `cat a.gz b.gz`


def test_llvm_lines_follow_the_regions_that_cover_them_and_branches_have_two_outcomes() -> None:
    fc = parse_report(LLVM, roots=["/w"]).files["a.c"]
    # line 1 starts a region run 3 times, 2 has a region run 0 times and the
    # 3-count region resumes; line 3 is inside the resumed region; line 4 ends it
    assert fc.lines == {1: 3, 2: 3, 3: 3, 4: 3}
    assert fc.branches[2].covered_ids == frozenset({"llvm:5:t"})
    assert fc.branches[2].all_ids == frozenset({"llvm:5:t", "llvm:5:f"})


@pytest.mark.parametrize(
    ("raw", "fmt", "reason", "line"),
    [
        (GCOV.replace(b'"count": 0, "b', b'"count": -1, "b'), "gcov JSON", "count of line 4", 2),
        (GCOV.replace(b'"line_number": 4', b'"line_number": "4"'), "gcov JSON", "line_number", 2),
        (GCOV.replace(b'"file": "/b/src/a.c"', b'"file": ""'), "gcov JSON", "without a name", 2),
        (GCOV[:-5], "gcov JSON", "not valid JSON", 6),
        (b'{"gcc_version": "12", "files": 3}', "gcov JSON", "expected '['", 1),
        (gzip.compress(GCOV)[:-9], "gcov JSON", "truncated", None),
        (LLVM.replace(b"[2, 5, 0, true", b"[0, 5, 0, true"), "llvm-cov export JSON", "line", 2),
        (LLVM.replace(b"3, 0, 0, 0, 4]", b"-3, 0, 0, 0, 4]"), "llvm-cov export JSON", "count", 2),
        (
            LLVM.replace(b'"type": "llvm', b'"type": 3, "t": "llvm'),
            "llvm-cov export JSON",
            '"type" is',
            1,
        ),
        (LLVM.replace(b'"data": [{', b'"data": {'), "llvm-cov export JSON", "expected '['", 1),
        (LLVM + b"]", "llvm-cov export JSON", "extra data", 7),
    ],
)
def test_a_broken_gcov_or_llvm_report_names_the_format_the_problem_and_the_line(
    raw: bytes, fmt: str, reason: str, line: int | None
) -> None:
    with pytest.raises(MalformedReport) as caught:
        parse_report(raw)
    assert caught.value.fmt == fmt
    assert reason in caught.value.reason, caught.value.reason
    if line is not None:
        assert caught.value.line == line


def test_gcov_and_llvm_keep_to_their_limits_and_a_gzip_bomb_is_stopped() -> None:
    with pytest.raises(ReportTooLarge, match="gcov JSON report holds more than 1 line"):
        parse_report(GCOV, limits=ParseLimits(max_lines=1))
    with pytest.raises(ReportTooLarge, match="llvm-cov export JSON report holds more than 3"):
        parse_report(LLVM, limits=ParseLimits(max_lines=3))
    bomb = gzip.compress(GCOV + b" " * 5_000_000)
    assert len(bomb) < 100_000
    with pytest.raises(ReportTooLarge, match="unpacked"):
        parse_report(bomb, limits=ParseLimits(max_bytes=1_000_000))
