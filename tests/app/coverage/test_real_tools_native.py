"""gcov JSON (gcc) and llvm-cov export JSON (clang), checked against each
tool's own reading of the same run: gcov's ``-b`` summary and its per-line
``.gcov`` text; llvm-cov's ``totals`` and its own LCOV export.

Committed fixtures made by ``tests/fixtures/regenerate.sh gcovjson`` and
``regenerate.sh llvm`` from ``tests/fixtures/programs/c/calc.c``.
"""

from __future__ import annotations

import json
import re

import pytest

from app.coverage import Report, parse_report
from app.coverage.detect import GCOV_JSON, LLVM_JSON, detect_format
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

RUNS = ("classify", "divide", "sum")


def branch_counts(report: Report) -> tuple[int, int]:
    branches = [b for fc in report.files.values() for b in fc.branches.values()]
    return sum(b.total for b in branches), sum(b.covered for b in branches)


def gcov_summary(run: str) -> dict[str, tuple[float, int]]:
    text = (REPORTS / "gcovjson" / f"run-{run}.summary.txt").read_text()
    found = re.findall(r"^(Lines executed|Taken at least once):([\d.]+)% of (\d+)$", text, re.M)
    return {what: (float(pct), int(of)) for what, pct, of in found}


def gcov_text_lines(run: str) -> dict[int, int]:
    """Per-line counts of gcov's own text output: '#####' is 0, '-' not a line."""
    lines = {}
    for row in (REPORTS / "gcovjson" / f"run-{run}.c.gcov").read_text().splitlines():
        count, _, rest = row.partition(":")
        number = rest.partition(":")[0].strip()
        count = count.strip().rstrip("*")
        if count == "-" or not number.isdigit() or int(number) == 0:
            continue
        lines[int(number)] = 0 if count in ("#####", "=====") else int(count)
    return lines


@pytest.mark.parametrize("run", RUNS)
def test_gcov_json_gives_the_totals_of_gcovs_own_summary_and_its_per_line_counts(
    run: str,
) -> None:
    raw = (REPORTS / "gcovjson" / f"run-{run}.gcov.json.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # gzip, as gcc writes it
    assert detect_format(raw) == GCOV_JSON
    report = parse_report(raw)
    assert set(report.files) == {"calc.c"}  # relative to gcov's working directory
    t = report.totals()
    summary = gcov_summary(run)
    pct, lines = summary["Lines executed"]
    assert t.lines == lines and round(100 * (t.hits + t.partials) / lines, 2) == pct
    pct, branches = summary["Taken at least once"]
    total, covered = branch_counts(report)
    assert total == branches and round(100 * covered / branches, 2) == pct
    assert report.files["calc.c"].lines == gcov_text_lines(run)


@pytest.mark.parametrize("run", RUNS)
def test_llvm_cov_export_gives_llvm_covs_totals_and_the_lines_of_its_own_lcov_export(
    run: str,
) -> None:
    raw = (REPORTS / "llvm" / f"run-{run}.json").read_bytes()
    assert detect_format(raw) == LLVM_JSON
    root = (REPORTS / "llvm" / "BUILD_ROOT").read_text().strip()
    report = parse_report(raw, roots=[root])
    theirs = json.loads(raw)["data"][0]["totals"]
    t = report.totals()
    assert (t.lines, t.hits + t.partials) == (
        theirs["lines"]["count"],
        theirs["lines"]["covered"],
    )
    assert branch_counts(report) == (theirs["branches"]["count"], theirs["branches"]["covered"])
    lcov = parse_report((REPORTS / "llvm" / f"run-{run}.lcov.info").read_bytes(), roots=[root])
    assert set(report.files) == set(lcov.files) == {"calc.c"}
    assert report.files["calc.c"].lines == lcov.files["calc.c"].lines
    per_line = {ln: (b.covered, b.total) for ln, b in report.files["calc.c"].branches.items()}
    assert per_line == {ln: (b.covered, b.total) for ln, b in lcov.files["calc.c"].branches.items()}


def test_merging_runs_unions_gcov_and_llvm_branches_by_identity() -> None:
    for name, suffix in (("gcovjson", ".gcov.json.gz"), ("llvm", ".json")):
        runs = [parse_report((REPORTS / name / f"run-{r}{suffix}").read_bytes()) for r in RUNS]
        merged = Report()
        for run in runs:
            merged.merge(run)
        # different runs took different branches of the same lines: the union is larger
        assert branch_counts(merged)[1] > max(branch_counts(r)[1] for r in runs), name
        assert branch_counts(merged)[0] == branch_counts(runs[0])[0], name
