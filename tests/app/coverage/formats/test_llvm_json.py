"""llvm-cov export JSON: line hits from regions, two-outcome branches, precise errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from app.coverage import parse_report
from tests.app.coverage.formats.conftest import refused
from tests.support.paths import FIXTURES

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


def test_branches_of_a_macro_expansion_count_on_the_line_the_macro_is_used_on() -> None:
    """Two uses of one macro on line 9, each with the macro's two branch
    regions (at 3:5 and 3:20): eight outcomes on line 9, as llvm-cov's LCOV
    export counts them, none on the macro's own line."""
    macro = b"[3, 5, 3, 9, 1, 0, 1, 0, 4], [3, 20, 3, 30, 0, 1, 1, 0, 4]"
    other = macro.replace(b"1, 0, 1, 0", b"0, 1, 1, 0")  # its first region went the other way
    raw = LLVM.replace(
        b'"expansions": []',
        b'"expansions": [{"source_region": [9, 10, 9, 18, 1, 0, 1, 1], "filenames": [],'
        b' "target_regions": [], "branches": [' + macro + b"]},"
        b' {"source_region": [9, 25, 9, 33, 1, 0, 2, 1], "filenames": [],'
        b' "target_regions": [], "branches": [' + other + b"]}]",
    )
    fc = parse_report(raw, roots=["/w"]).files["a.c"]
    assert 3 not in fc.branches
    assert (fc.branches[9].covered, fc.branches[9].total) == (4, 8)
    assert fc.branches[9].covered_ids == frozenset(
        {"llvm:10>3.5:t", "llvm:10>3.20:f", "llvm:25>3.5:f", "llvm:25>3.20:f"}
    )
    assert (fc.branches[2].covered, fc.branches[2].total) == (1, 2)  # the file's own


LLVM_TOOLS = ("clang", "llvm-profdata", "llvm-cov")


@pytest.mark.skipif(not all(map(shutil.which, LLVM_TOOLS)), reason="needs clang and llvm")
def test_a_clang_build_with_macros_reads_as_llvm_covs_own_lcov_export(tmp_path: Path) -> None:
    program = FIXTURES / "programs" / "gcov"
    for name in ("calc.c", "calc.h", "test_calc.c"):
        shutil.copy(program / name, tmp_path / name)
    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    build = ["-fprofile-instr-generate", "-fcoverage-mapping", "-O0", "-o", "t"]
    subprocess.run(["clang", *build, "calc.c", "test_calc.c"], **run)
    subprocess.run(["./t"], env={"LLVM_PROFILE_FILE": "t.profraw"}, **run)
    subprocess.run(["llvm-profdata", "merge", "-o", "t.profdata", "t.profraw"], **run)
    export = ["llvm-cov", "export", "-instr-profile", "t.profdata", "./t"]
    raw = subprocess.run([*export, "-format=text"], **run).stdout
    lcov = parse_report(subprocess.run([*export, "-format=lcov"], **run).stdout)
    report = parse_report(raw)

    assert set(report.files) == set(lcov.files) and len(report.files) == 3
    for path, fc in report.files.items():
        theirs = lcov.files[path]
        assert fc.lines == theirs.lines, path
        mine = {ln: (b.covered, b.total) for ln, b in fc.branches.items()}
        assert mine == {ln: (b.covered, b.total) for ln, b in theirs.branches.items()}, path
    calc = next(fc for path, fc in report.files.items() if path.endswith("calc.c"))
    assert calc.branches[39].total == 8  # two uses of a two-condition macro
    totals = json.loads(raw)["data"][0]["totals"]["branches"]
    mine = [b for fc in report.files.values() for b in fc.branches.values()]
    assert (sum(b.total for b in mine), sum(b.covered for b in mine)) == (
        totals["count"],
        totals["covered"],
    )
