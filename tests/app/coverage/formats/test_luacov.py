"""luacov's report: real reports of luacov 0.17 on Lua 5.4
(``tests/fixtures/regenerate.sh luacov``) checked against luacov's own stats
file and the report's Summary, and the count column's rules."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.detect import LUACOV, detect_format
from app.coverage.formats.luacov import count_width
from app.errors import MalformedReport
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

DIR = REPORTS / "luacov"
RUNS = ["run-classify", "run-sum", "run-classify-sum"]


def summary(text: str) -> dict[str, tuple[int, int]]:
    """The report's own Summary table: file -> (hits, missed)."""
    table = text.split("Summary\n", 1)[1].splitlines()
    rows = [row.split() for row in table if row and not row.startswith(("=", "-", "File", "Total"))]
    return {row[0]: (int(row[1]), int(row[2])) for row in rows}


def stats(text: str) -> dict[str, dict[int, int]]:
    """luacov.stats.out: ``<max line>:<file>`` then the hits of each line."""
    rows = text.splitlines()
    return {
        rows[i].split(":", 1)[1]: {n + 1: int(h) for n, h in enumerate(rows[i + 1].split())}
        for i in range(0, len(rows), 2)
    }


@pytest.mark.parametrize("run", RUNS)
def test_a_luacov_report_gives_its_summary_and_its_stats_line_by_line(run: str) -> None:
    raw = (DIR / f"{run}.report.out").read_bytes()
    assert detect_format(raw) == LUACOV
    report = parse_report(raw)
    counts = summary(raw.decode())
    assert set(report.files) == set(counts)
    runs = stats((DIR / f"{run}.stats.out").read_text())
    for path, fc in report.files.items():
        hit = sum(1 for h in fc.lines.values() if h)
        assert (hit, len(fc.lines) - hit) == counts[path], path
        assert all(hits == runs[path][ln] for ln, hits in fc.lines.items()), path


def test_a_line_that_is_not_code_but_starts_with_a_number_is_not_code() -> None:
    """``20,`` inside a table (calc.lua line 27) is a hit to Codecov, which
    reads each line's first word; luacov shows it blank, not code."""
    fc = parse_report((DIR / "run-sum.report.out").read_bytes()).files["calc.lua"]
    assert 27 not in fc.lines and fc.lines[26] == 1
    assert fc.lines[15] == 600  # the widest count: the column is 4 wide


RULE = b"=" * 78 + b"\n"


def section(name: str, body: str) -> bytes:
    return RULE + name.encode() + b"\n" + RULE + body.encode()


def test_the_count_columns_width_comes_from_a_miss_or_the_widest_count() -> None:
    assert count_width(section("a.lua", "  1 x\n*0 y\n")) == 2  # a miss: "*" * W + "0"
    assert count_width(section("a.lua", "      7 z\n 12 x\n  3 y\n")) == 3  # 12 starts at 1
    assert count_width(section("a.lua", "   -- c\n")) == 0  # no code at all


def test_a_bad_count_column_is_skipped_and_named_and_the_rest_is_kept() -> None:
    raw = section("a.lua", " 12 x\n  3 y\n *0 z\n x7 w\n**0 v\n")
    report = parse_report(raw)
    assert report.files["a.lua"].lines == {1: 12, 2: 3, 5: 0}  # W is 2: "**0" is a miss
    assert report.skipped.count == 2
    assert report.skipped.summary() == "2 records skipped: `*0 z` at line 6, `x7 w` at line 7"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (RULE + b"a.lua\n  1 x\n", "not followed by a rule"),
        (RULE + b"\n" + RULE, "without a file name"),
        (section("Summary", "\nFile Hits\n"), "no file section"),
    ],
)
def test_a_torn_report_is_refused_naming_why(raw: bytes, reason: str) -> None:
    with pytest.raises(MalformedReport, match=reason):
        parse_report(raw, fmt=LUACOV)  # detection refuses the first two already
