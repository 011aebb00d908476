"""gcov text (the ``*.gcov`` files ``gcov -pb`` writes): Codecov's rules, each
checked on a hand-made listing, and real gcc runs checked against gcov's own
JSON intermediate of the same run (``gcov --json-format -b``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.coverage import Report, parse_report
from app.coverage.detect import GCOV_TEXT, detect_format
from app.coverage.limits import ParseLimits
from app.errors import ReportTooLarge, UnknownFormat
from tests.app.coverage.formats.conftest import refused
from tests.support.paths import FIXTURES, REPORTS

pytestmark = pytest.mark.timeout(60)

LISTING = b"""\
        -:    0:Source:src/calc.c
        -:    0:Graph:calc.gcno
        -:    0:Data:calc.gcda
        -:    0:Runs:1
        -:    1:#include "calc.h"
function sign called 3 returned 100% blocks executed 80%
        3:    2:int sign(int x)
        -:    3:{
        3:    4:    if (x > 0)
branch  0 taken 2 (fallthrough)
branch  1 taken 1
        2:    5:        return 1;
    #####:    6:    else if (x < 0)
branch  0 never executed
branch  1 never executed
    =====:    7:        throw_it();
       1*:    8:    return x ? -1 : 0;
branch  0 taken 0% (fallthrough)
branch  1 taken 100%
call    0 returned 100%
unconditional  0 taken 1
        -:    9:}
"""


def lines_and_branches(
    report: Report, path: str
) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
    fc = report.files[path]
    return fc.lines, {ln: (b.covered, b.total) for ln, b in fc.branches.items()}


def test_gcov_text_reads_misses_starred_counts_and_branch_records_as_codecov_does() -> None:
    assert detect_format(LISTING) == GCOV_TEXT
    report = parse_report(LISTING)
    lines, branches = lines_and_branches(report, "src/calc.c")
    # '-' is not a line; ##### and ===== are misses; 1* is 1 hit
    assert lines == {2: 3, 4: 3, 5: 2, 6: 0, 7: 0, 8: 1}
    # taken 2 / taken 1: both; never executed: none; 0% / 100%: one; calls add nothing
    assert branches == {4: (2, 2), 6: (0, 2), 8: (1, 2)}
    assert report.files["src/calc.c"].branches[8].covered_ids == frozenset({"gcov:1"})
    assert not report.skipped


def test_several_listings_in_one_report_are_several_files_and_one_path_twice_adds() -> None:
    other = LISTING.replace(b"src/calc.c", b"./src/other.c")
    report = parse_report(LISTING + other + LISTING)
    assert set(report.files) == {"src/calc.c", "src/other.c"}
    assert report.files["src/calc.c"].lines[4] == 6
    assert report.files["src/other.c"].lines[4] == 3


def test_a_templates_instance_listings_add_branches_but_not_their_repeated_counts() -> None:
    raw = b"""\
        -:    0:Source:pick.cc
        2:    1:template <class T> T pick(T a, T b)
        2:    3:    if (a < b)
       1*:    4:        return a;
------------------
_Z4pickIdET_S0_S0_:
function _Z4pickIdET_S0_S0_ called 1 returned 100% blocks executed 75%
        1:    1:template <class T> T pick(T a, T b)
        1:    3:    if (a < b)
branch  0 taken 0% (fallthrough)
branch  1 taken 100%
    #####:    4:        return a;
------------------
int pick<int>(int, int):
        1:    3:    if (a < b)
branch  0 taken 100% (fallthrough)
branch  1 taken 0%
        1:    4:        return a;
------------------
        1:    8:int main()
"""
    lines, branches = lines_and_branches(parse_report(raw), "pick.cc")
    assert lines == {1: 2, 3: 2, 4: 1, 8: 1}
    assert branches == {3: (2, 4)}  # two instances' two branches each, one taken in each


def test_lcov_exclusion_markers_drop_their_lines_as_codecov_does() -> None:
    raw = b"""\
        -:    0:Source:a.c
        1:    1:int a = f(); // LCOV_EXCL_LINE
        1:    2:int b = f();
        -:    3:// LCOV_EXCL_START
    #####:    4:    abort();
branch  0 never executed
    #####:    5:    abort();
        -:    6:// LCOV_EXCL_STOP
    #####:    7:int c = g();
"""
    assert parse_report(raw).files["a.c"].lines == {2: 1, 7: 0}


def test_all_blocks_records_of_gcov_a_add_nothing() -> None:
    raw = b"""\
        -:    0:Source:a.c
        2:    3:    if (x)
        2:    3-block  0
branch  0 taken 2
    $$$$$:    3-block  1
        1:    4:    y();
"""
    lines, branches = lines_and_branches(parse_report(raw), "a.c")
    assert lines == {3: 2, 4: 1}
    assert branches == {3: (1, 1)}


def test_bad_records_are_skipped_counted_and_named_and_the_rest_is_kept() -> None:
    raw = (
        LISTING
        + b"""\
       x7:   10:    broken();
        1:   11:    kept();
branch  0 taken lots
branch  1 taken 1
        1:99999999:    far();
garbage that is no gcov record
"""
    )
    report = parse_report(raw)
    lines, branches = lines_and_branches(report, "src/calc.c")
    assert lines[11] == 1 and 10 not in lines
    assert branches[11] == (1, 1)
    assert report.skipped.count == 4
    n = LISTING.count(b"\n")  # the listing's own records come first
    assert report.skipped.summary() == (
        f"4 records skipped: `x7: 10: broken();` at line {n + 1}, `branch 0 taken lots` at "
        f"line {n + 3}, `1:99999999: far();` at line {n + 5}, `garbage that is no gcov record` "
        f"at line {n + 6}"
    )


def test_a_listing_whose_every_record_is_bad_is_refused_naming_them() -> None:
    raw = b"        -:    0:Source:a.c\n     what:    1:x\n"
    error = refused(raw, "gcov text", "no record could be read; 1 record skipped: `what: 1:x`")
    assert error.line is None


def test_a_listing_over_the_line_limit_stops_early() -> None:
    raw = b"        -:    0:Source:a.c\n" + b"".join(b"        1:%5d:x\n" % n for n in range(1, 50))
    with pytest.raises(ReportTooLarge, match="more than 10 line records"):
        parse_report(raw, limits=ParseLimits(max_lines=10))


def test_a_first_line_that_is_not_a_source_record_is_not_gcov_text() -> None:
    assert detect_format(b"        -:    0:Source:a.c\n") == GCOV_TEXT
    with pytest.raises(UnknownFormat, match=r"tried: .*gcov text"):
        detect_format(b"        1:    1:int x;\n")


@pytest.mark.parametrize("run", ["classify", "divide", "sum"])
def test_gccs_committed_text_listing_reads_as_its_json_intermediate_of_the_same_run(
    run: str,
) -> None:
    text = parse_report((REPORTS / "gcovjson" / f"run-{run}.c.gcov").read_bytes())
    json = parse_report((REPORTS / "gcovjson" / f"run-{run}.gcov.json.gz").read_bytes())
    assert text == json
    assert text.totals() == json.totals()
    assert text.totals().branches > 0


def gcc_run(tmp_path: Path) -> tuple[Report, Report]:
    """The fixture program built with ``--coverage`` by gcc and g++, its test
    run, then read twice: ``gcov -pb``'s text and ``gcov --json-format -b``."""
    program = FIXTURES / "programs" / "gcov"
    for name in ("calc.c", "calc.h", "test_calc.c", "pick.cc"):
        shutil.copy(program / name, tmp_path / name)
    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    subprocess.run(["gcc", "--coverage", "-O0", "-o", "test_calc", "calc.c", "test_calc.c"], **run)
    subprocess.run(["g++", "--coverage", "-O0", "-o", "pick", "pick.cc"], **run)
    subprocess.run(["./test_calc"], **run)
    subprocess.run(["./pick"], **run)
    notes = sorted(p.name for p in tmp_path.glob("*.gcno"))
    subprocess.run(["gcov", "-pb", *notes], **run)
    (tmp_path / "json").mkdir()
    subprocess.run(
        ["gcov", "--json-format", "-b", *[f"../{n}" for n in notes]],
        cwd=tmp_path / "json",
        check=True,
        capture_output=True,
    )
    text, json = Report(), Report()
    for listing in tmp_path.glob("*.gcov"):
        text.merge(parse_report(listing.read_bytes()))
    for document in (tmp_path / "json").glob("*.gcov.json.gz"):
        json.merge(parse_report(document.read_bytes()))
    return text, json


@pytest.mark.skipif(not shutil.which("g++") or not shutil.which("gcov"), reason="needs gcc")
def test_a_real_gcc_build_reads_the_same_from_gcovs_text_as_from_its_json(tmp_path: Path) -> None:
    text, json = gcc_run(tmp_path)
    assert set(text.files) == {"calc.c", "calc.h", "test_calc.c", "pick.cc"}
    assert text == json
    # the `static inline` header function (1*), the macro's branches and the template's
    calc_h, _ = lines_and_branches(text, "calc.h")
    assert calc_h == {6: 1}
    assert text.files["pick.cc"].branches[3].total == 4
    assert text.totals().misses > 0 and text.totals().partials > 0
