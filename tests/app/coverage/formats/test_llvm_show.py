"""llvm-cov show text (Xcode's ``*.coverage.txt``): real views of clang builds
(``tests/fixtures/regenerate.sh llvmshow``) checked against llvm-cov's own
LCOV export of the same profile, and the records a view holds."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.detect import LLVM_SHOW, detect_format
from app.coverage.formats.llvm_show import count
from app.errors import MalformedReport, UnknownFormat
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

DIR = REPORTS / "llvmshow"
ROOT = (DIR / "BUILD_ROOT").read_text().strip()


@pytest.mark.parametrize("prog", ["tests", "pick"])
def test_a_clang_builds_view_gives_llvm_covs_own_line_counts(prog: str) -> None:
    raw = (DIR / f"{prog}.coverage.txt").read_bytes()
    assert detect_format(raw) == LLVM_SHOW
    report = parse_report(raw, roots=[ROOT])
    oracle = parse_report((DIR / f"{prog}.lcov.info").read_bytes(), roots=[ROOT])
    assert set(report.files) == set(oracle.files)
    for path, fc in oracle.files.items():
        assert report.files[path].lines == fc.lines, path


@pytest.mark.parametrize("prog", ["tests", "pick"])
def test_a_views_branches_are_the_export_jsons_line_by_line(prog: str) -> None:
    """The JSON export's parser is the reference: it gives llvm-cov's LCOV
    branches (macro expansions' on the line the macro is used on), and names
    a template's branch once for all its instances."""
    report = parse_report((DIR / f"{prog}.coverage.txt").read_bytes(), roots=[ROOT])
    export = parse_report((DIR / f"{prog}.json").read_bytes(), roots=[ROOT])
    for path, fc in export.files.items():
        mine = report.files[path].branches
        assert {ln: (b.covered, b.total) for ln, b in mine.items()} == {
            ln: (b.covered, b.total) for ln, b in fc.branches.items()
        }, path
    calc = report.files["calc.c"].branches
    if prog == "tests":  # CLAMP's two conditions, and two uses of IS_SMALL on line 39
        assert (calc[7].covered, calc[7].total, calc[39].total) == (3, 4, 8)


VIEW = b"""/src/a.c:
    1|       |int f(int x)
    2|  1.23k|{
    3|  45.6M|    if (x)
  ------------------
  |  Branch (3:9): [True: 1.23k, False: 0]
  ------------------
    4|      0|        return 1;
    5|      2|}
"""


def test_shortened_counts_are_read_as_the_number_they_stand_for() -> None:
    fc = parse_report(VIEW).files["/src/a.c"]
    assert fc.lines == {2: 1230, 3: 45_600_000, 4: 0, 5: 2}  # a closing brace is a line
    assert (fc.branches[3].covered, fc.branches[3].total) == (1, 2)
    assert [count(c) for c in (b"999", b"1.2k", b"3E", b"k", b"1.x")] == [
        999,
        1200,
        3 * 10**18,
        -1,
        -1,
    ]


def test_colours_are_dropped() -> None:
    coloured = VIEW.replace(b"/src/a.c:", b"\x1b[0;36m/src/a.c:\x1b[0m").replace(
        b"   45.6M|", b"   \x1b[0;35m45.6M\x1b[0m|"
    )
    assert parse_report(coloured) == parse_report(VIEW)


def test_a_bad_record_is_skipped_and_named_and_the_rest_is_kept() -> None:
    raw = VIEW.replace(b"    4|      0|", b"    4|    x0|").replace(
        b"[True: 1.23k, False: 0]", b"[True: many, False: 0]"
    )
    report = parse_report(raw)
    assert report.files["/src/a.c"].lines == {2: 1230, 3: 45_600_000, 5: 2}
    assert report.skipped.count == 2
    assert report.skipped.summary().startswith("2 records skipped: `| Branch (3:9): [True: many")


def test_a_view_without_its_files_path_line_is_refused_saying_why() -> None:
    with pytest.raises(UnknownFormat, match="names no source file"):
        detect_format(VIEW.split(b"\n", 1)[1])


def test_a_view_whose_every_record_is_bad_is_refused() -> None:
    with pytest.raises(MalformedReport, match="no record could be read"):
        parse_report(b"/src/a.c:\n    1| 1.2.3k|x\n    2|     kk|y\n")
