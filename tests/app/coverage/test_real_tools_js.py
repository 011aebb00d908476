"""Istanbul JSON and Clover XML written by nyc, c8 and Jest, checked against
each tool's own summary (``coverage-summary.json`` of the same run).

The reports are committed fixtures made by ``tests/fixtures/regenerate.sh js``
from ``tests/fixtures/programs/js``: one small program, three runs that
cover different branches.
"""

from __future__ import annotations

import json

import pytest

from app.coverage import Report, parse_report
from app.coverage.detect import CLOVER, ISTANBUL, LCOV, detect_format
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

JS = REPORTS / "js"
ROOT = (JS / "BUILD_ROOT").read_text().strip()
RUNS = ("classify", "divide", "sum")
REPORTS = {  # (tool, file suffix) -> format
    ("nyc", "coverage-final.json"): ISTANBUL,
    ("c8", "coverage-final.json"): ISTANBUL,
    ("nyc", "clover.xml"): CLOVER,
    ("jest", "clover.xml"): CLOVER,
    ("nyc", "lcov.info"): LCOV,
}


def parse(name: str) -> Report:
    return parse_report((JS / name).read_bytes(), roots=[ROOT])


def branch_counts(report: Report) -> tuple[int, int]:
    branches = [b for fc in report.files.values() for b in fc.branches.values()]
    return sum(b.total for b in branches), sum(b.covered for b in branches)


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize(("tool", "suffix"), list(REPORTS), ids=lambda x: str(x))
def test_each_js_report_gives_the_line_and_branch_totals_of_its_tools_summary(
    tool: str, suffix: str, run: str
) -> None:
    raw = (JS / f"{tool}-{run}.{suffix}").read_bytes()
    assert detect_format(raw) == REPORTS[tool, suffix]
    report = parse(f"{tool}-{run}.{suffix}")
    summary = json.loads((JS / f"{tool}-{run}.summary.json").read_text())["total"]
    t = report.totals()
    assert set(report.files) == {"calc/main.js", "calc/ops.js"}
    assert t.lines == summary["lines"]["total"]
    assert t.hits + t.partials == summary["lines"]["covered"]
    assert branch_counts(report) == (summary["branches"]["total"], summary["branches"]["covered"])
    assert t.misses > 0 and t.partials > 0 and report.warnings == []


@pytest.mark.parametrize("run", RUNS)
def test_istanbul_json_and_lcov_of_one_nyc_run_are_the_same_report(run: str) -> None:
    """Same lines, and the same branch identities (``lcov:k,i``), so they merge exactly."""
    assert parse(f"nyc-{run}.coverage-final.json") == parse(f"nyc-{run}.lcov.info")


def test_merging_istanbul_runs_merges_branches_by_identity_as_lcov_does() -> None:
    def merged(suffix: str) -> Report:
        out = Report()
        for run in RUNS:
            out.merge(parse(f"nyc-{run}.{suffix}"))
        return out

    from_json, from_lcov = merged("coverage-final.json"), merged("lcov.info")
    assert from_json == from_lcov
    # the runs took different branches: the union covers more than any one run
    assert branch_counts(from_json)[1] > max(
        branch_counts(parse(f"nyc-{r}.coverage-final.json"))[1] for r in RUNS
    )


def test_a_clover_report_is_read_as_clover_not_as_an_empty_cobertura() -> None:
    raw = (JS / "jest-classify.clover.xml").read_bytes()
    assert raw.lstrip().startswith(b"<?xml") and b"<coverage " in raw
    assert detect_format(raw) == CLOVER
    assert parse_report(raw).totals().lines == 31
