"""Reports produced by the real tools, never written by hand.

coverage.py runs live (it is in the test extra): a small program, three
separate runs, each reported as XML, JSON and LCOV, then ``coverage
combine``. Go, JaCoCo and C (gcc + geninfo/lcov + gcovr) outputs are
committed fixtures made by ``tests/fixtures/regenerate.sh`` (go test
-coverprofile; JaCoCo's agent and report API; lcov --capture / -a and gcovr
--xml), so these tests need neither Go, Java nor gcc.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.coverage import Report, Totals, parse_report
from tests.support.once import once
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.timeout(120)

REPORTS = FIXTURES / "reports"
RUNS = ("classify", "divide", "sum")
FORMATS = {"xml": "xml", "json": "json", "lcov": "info"}


def merged(reports: list[Report]) -> Report:
    out = Report()
    for report in reports:
        out.merge(report)
    return out


def line_totals(t: Totals) -> tuple[int, int, int, int, int]:
    return (t.files, t.lines, t.hits, t.misses, t.partials)


@pytest.fixture(scope="module")
def coveragepy_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs coverage.py now: per-run and combined reports in every format
    (once per test run, ``tests.support.once``: the folder is the first
    worker's, kept until the run ends)."""
    return Path(
        once(tmp_path_factory, "coveragepy-reports", lambda: str(run_coverage(tmp_path_factory)))
    )


def run_coverage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("coveragepy")
    shutil.copytree(FIXTURES / "programs" / "python" / "calc", work / "calc")

    def coverage(*args: str, env: dict[str, str] | None = None) -> None:
        subprocess.run(
            [sys.executable, "-m", "coverage", *args], cwd=work, check=True, env=env,
            capture_output=True, timeout=60,
        )  # fmt: skip

    for run in RUNS:
        data = f"--data-file=.cov-{run}"
        coverage("run", "--branch", "--source=calc", data, "-m", "calc.main", run)
        for command, ext in FORMATS.items():
            coverage(command, "-q", data, "-o", f"run-{run}.{ext}")
    coverage("combine", "-q", "--keep", "--data-file=.cov-all", *(f".cov-{r}" for r in RUNS))
    for command, ext in FORMATS.items():
        coverage(command, "-q", "--data-file=.cov-all", "-o", f"combined.{ext}")
    return work


@pytest.fixture(params=["live", "committed"])
def coveragepy_dir(request: pytest.FixtureRequest, coveragepy_reports: Path) -> Path:
    return coveragepy_reports if request.param == "live" else REPORTS / "coveragepy"


def parse(path: Path) -> Report:
    return parse_report(path.read_bytes())


@pytest.mark.parametrize("run", [*(f"run-{r}" for r in RUNS), "combined"])
def test_the_three_coveragepy_formats_of_one_run_give_identical_line_totals(
    coveragepy_dir: Path, run: str
) -> None:
    totals = {ext: parse(coveragepy_dir / f"{run}.{ext}").totals() for ext in FORMATS.values()}
    assert totals["xml"].lines > 30
    assert totals["xml"].misses > 0
    assert totals["xml"] == totals["json"] == totals["info"]
    per_file = {ext: parse(coveragepy_dir / f"{run}.{ext}").file_totals() for ext in totals}
    assert per_file["xml"] == per_file["json"] == per_file["info"]


@pytest.mark.parametrize("ext", ["json", "info"])
def test_merging_separate_runs_gives_the_line_totals_of_coverage_combine(
    coveragepy_dir: Path, ext: str
) -> None:
    runs = [parse(coveragepy_dir / f"run-{r}.{ext}") for r in RUNS]
    combined = parse(coveragepy_dir / f"combined.{ext}").totals()
    assert line_totals(merged(runs).totals()) == line_totals(combined)
    assert line_totals(merged(runs[::-1]).totals()) == line_totals(combined)
    # the runs really differ, so the merge had work to do
    assert len({line_totals(r.totals()) for r in runs}) == len(runs)
    assert all(r.totals().hits < combined.hits for r in runs)


def test_merging_cobertura_runs_gives_exactly_the_totals_of_coverage_combine(
    coveragepy_dir: Path,
) -> None:
    """coverage.py's Cobertura names the branches each run missed
    (``missing-branches``): two runs that each took one branch of a line
    merge to a covered line, as ``coverage combine`` says."""
    runs = [parse(coveragepy_dir / f"run-{r}.xml") for r in RUNS]
    combined = parse(coveragepy_dir / "combined.xml")
    assert merged(runs).totals() == combined.totals()
    assert merged(runs[::-1]).totals() == combined.totals()
    # the shards really split a line's branches between them
    assert any(
        all(r.files[p].branches[ln].covered < br.total for r in runs if ln in r.files[p].branches)
        and br.covered == br.total
        for p, fc in combined.files.items()
        for ln, br in fc.branches.items()
    )


def test_coveragepy_paths_are_repository_relative_in_every_format(coveragepy_dir: Path) -> None:
    for ext in FORMATS.values():
        assert set(parse(coveragepy_dir / f"combined.{ext}").files) == {
            "calc/__init__.py",
            "calc/main.py",
            "calc/ops.py",
        }


@pytest.mark.parametrize("mode", ["set", "count", "atomic"])
def test_merging_go_test_profiles_gives_the_profile_of_all_tests_run_together(mode: str) -> None:
    runs = [parse(REPORTS / "go" / f"{mode}-{test}.out") for test in ("Classify", "Divide", "Sum")]
    together = parse(REPORTS / "go" / f"{mode}-all.out")
    assert line_totals(merged(runs).totals()) == line_totals(together.totals())
    assert set(together.files) == {"calc/calc.go"}  # module path github.com/o/r dropped
    if mode != "set":  # counts add up exactly
        assert merged(runs) == together


def test_a_go_line_shared_by_a_run_and_a_skipped_block_is_partial() -> None:
    together = parse(REPORTS / "go" / "count-all.out").files["calc/calc.go"]
    # line 11 `} else if n == 0 {`: the else-if condition ran, `return "zero"` did not
    assert together.lines[11] > 0
    assert together.branches[11].covered < together.branches[11].total
    # line 14 `if n%2 == 1 { return "odd" }` is one line with two blocks, both run
    assert together.branches[14].total == together.branches[14].covered == 2
    # NeverCalled's body spans lines 39-42 and never ran
    assert all(together.lines[ln] == 0 for ln in range(40, 42))


def test_the_three_go_modes_of_one_run_give_identical_line_totals() -> None:
    totals = {
        m: parse(REPORTS / "go" / f"{m}-all.out").totals() for m in ("set", "count", "atomic")
    }
    assert totals["set"] == totals["count"] == totals["atomic"]


def test_merging_jacoco_runs_matches_jacoco_merging_the_exec_files() -> None:
    runs = [parse(REPORTS / "jacoco" / f"run-{r}.xml") for r in RUNS]
    combined = parse(REPORTS / "jacoco" / "combined.xml")
    mine = merged(runs).totals()
    theirs = combined.totals()
    assert set(combined.files) == {"calc/Calc.java", "calc/Main.java"}
    assert (mine.files, mine.lines, mine.misses) == (theirs.files, theirs.lines, theirs.misses)
    # branches are count-only in JaCoCo XML: a merged line can stay partial, never gain coverage
    assert mine.hits + mine.partials == theirs.hits + theirs.partials
    assert mine.partials >= theirs.partials


def test_a_jacoco_line_with_a_missed_branch_is_partial() -> None:
    calc = parse(REPORTS / "jacoco" / "combined.xml").files["calc/Calc.java"]
    # classify: `} else if (n == 0) {` never saw n == 0
    assert calc.lines[10] == 1
    assert calc.branches[10].covered < calc.branches[10].total
    assert calc.lines[36] == 0  # neverCalled


def c_report(name: str) -> Report:
    """geninfo writes absolute paths; the build directory is the repository root."""
    root = (REPORTS / "c" / "BUILD_ROOT").read_text().strip()
    return parse_report((REPORTS / "c" / name).read_bytes(), roots=[root])


@pytest.mark.parametrize("run", RUNS)
def test_gcovr_cobertura_and_geninfo_lcov_of_one_c_run_give_identical_totals(run: str) -> None:
    lcov, cobertura = c_report(f"run-{run}.info"), c_report(f"run-{run}.xml")
    assert set(lcov.files) == set(cobertura.files) == {"calc.c"}
    assert lcov.totals() == cobertura.totals()
    assert lcov.files["calc.c"].lines == cobertura.files["calc.c"].lines


def test_merging_geninfo_runs_gives_exactly_what_lcov_add_tracefile_gives() -> None:
    runs = [c_report(f"run-{r}.info") for r in RUNS]
    combined = c_report("combined.info")
    assert merged(runs) == combined  # hits add, BRDA branches union by identity
    assert merged(runs[::-1]) == combined
    assert combined.totals().partials > 0
