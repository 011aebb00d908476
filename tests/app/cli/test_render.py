"""What ``covworker`` prints: tables for people, JSON for programs, failures on stderr."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from app.cli import render
from app.cli.render import (
    commits_table,
    flags_table,
    percent,
    print_failures,
    print_json,
    pull_request_rows,
    report_table,
    status_table,
    uploads_table,
)

SHA = "0123456789ab" + "c" * 28


def text(table: Table) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(table)
    return out.getvalue()


def totals(lines: int, hits: int, coverage: float | None, files: int = 1) -> dict[str, Any]:
    return {
        "files": files,
        "lines": lines,
        "hits": hits,
        "misses": lines - hits,
        "partials": 0,
        "coverage": coverage,
    }


def a_report(files: int, flag: str | None = None) -> dict[str, Any]:
    return {
        "repository": "acme/web",
        "commit": SHA,
        "version": 3,
        "flag": flag,
        "files": {f"src/m{i:02d}.py": totals(4, 3, 75.0) for i in range(files)},
        "totals": totals(4 * files, 3 * files, 75.0, files),
    }


def test_percent_rounds_as_the_pages_and_shows_a_dash_for_a_file_without_lines() -> None:
    assert percent(75.0) == "75.00"
    assert percent(66.666667) == "66.66"  # Codecov's default: two places, down
    assert percent(99.58772, {"precision": 1, "round": "nearest"}) == "99.6"
    assert percent(None) == "-"


def test_the_report_and_status_show_the_commits_figures_as_the_pages_do() -> None:
    rounding = {"precision": 1, "round": "up"}
    report = a_report(1) | {"rounding": rounding}
    report["files"]["src/m00.py"]["coverage"] = 66.66667
    report |= {"base_commit": "b" * 40, "change_display": "-0.5"}
    table = text(report_table(report))
    assert "66.7" in table and f"base {'b' * 12}, change -0.5%" in table
    figures = {
        "coverage": 99.58772,
        "coverage_display": "99.5",
        "base_commit": "b" * 40,
        "change": -0.41228,
        "change_display": "-0.5",
    }
    shown = text(status_table(a_status(**figures)))
    rows = {" ".join(line.strip("│ ").split("│")[0].split()): line for line in shown.splitlines()}
    assert rows["coverage"].rstrip(" │").endswith("99.5%")
    assert rows["base"].rstrip(" │").endswith("b" * 12)
    assert rows["change"].rstrip(" │").endswith("-0.5%")


def test_a_coverage_is_written_with_its_unit_as_the_pages_write_it_or_alone_as_a_dash() -> None:
    assert render.with_unit("73.68") == "73.68%"
    assert render.with_unit("+2.10") == "+2.10%"
    assert render.with_unit(None) == "-"
    nothing_merged = {"coverage": None, "coverage_display": None, "base_commit": None}
    shown = text(status_table(a_status(**nothing_merged, change=None, change_display=None)))
    rows = {" ".join(line.strip("│ ").split("│")[0].split()): line for line in shown.splitlines()}
    assert rows["coverage"].rstrip(" │").endswith(" -") and "%" not in rows["coverage"]
    assert rows["change"].rstrip(" │").endswith(" -")


def test_print_json_is_sorted_indented_and_prints_what_json_cannot_as_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from datetime import date

    print_json({"b": 1, "a": date(2026, 1, 2)})
    out = capsys.readouterr().out
    assert json.loads(out) == {"a": "2026-01-02", "b": 1}
    assert out.index('"a"') < out.index('"b"') and '\n  "a"' in out


def test_the_report_table_names_commit_version_and_flag_and_ends_with_the_total() -> None:
    shown = text(report_table(a_report(2, flag="unit")))
    assert "acme/web @ 0123456789ab  flag unit  (version 3)" in shown
    assert SHA not in shown  # the short SHA only
    assert "src/m00.py" in shown and "src/m01.py" in shown
    total = [line for line in shown.splitlines() if "TOTAL" in line]
    assert len(total) == 1 and "TOTAL (2 files)" in total[0] and "75.00" in total[0]
    assert "flag" not in text(report_table(a_report(1))).splitlines()[0]


def test_the_report_table_shows_max_files_and_says_how_many_more_there_are() -> None:
    shown = text(report_table(a_report(render.DEFAULT_MAX_FILES + 10)))
    assert "src/m49.py" in shown and "src/m50.py" not in shown
    assert "... 10 more files (--all shows them)" in shown
    everything = text(report_table(a_report(60), max_files=None))
    assert "src/m59.py" in everything and "more files" not in everything
    assert "more files" not in text(report_table(a_report(3), max_files=3))


def test_names_and_reasons_in_square_brackets_are_printed_as_they_are_not_read_as_markup(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Next.js routes (``app/[slug]/page.tsx``) and parsers' reasons hold brackets."""
    report = a_report(0)
    report["files"] = {
        "app/[slug]/page.tsx": totals(4, 3, 75.0),
        "[bold]x[/bold].py": totals(1, 1, 100.0),
    }
    shown = text(report_table(report))
    assert "app/[slug]/page.tsx" in shown and "[bold]x[/bold].py" in shown
    upload = {
        "upload": 1,
        "file": "[a].info",
        "state": "error",
        "format": None,
        "flags": [],
        "error": "unknown path [red]",
    }
    assert "[a].info" in text(uploads_table([upload])) and "unknown path [red]" in text(
        uploads_table([upload])
    )
    hook = {"state": "failing", "attempts": 1, "error": "HTTP 500 [internal]"}
    assert "HTTP 500 [internal]" in text(status_table(a_status(notifications=[{"webhook": hook}])))
    print_failures([{"upload": 1, "file": "[a].info", "error": "unknown path [red]"}])
    assert capsys.readouterr().err == "failed: upload 1 ([a].info): unknown path [red]\n"


def test_the_flags_table_has_a_row_per_flag() -> None:
    shown = text(
        flags_table(
            {
                "unit": {"uploads": 2, "lines": 10, "hits": 5, "coverage": 50.0},
                "e2e": {"uploads": 1, "lines": 0, "hits": 0, "coverage": None},
            }
        )
    )
    unit = next(line for line in shown.splitlines() if "unit" in line)
    e2e = next(line for line in shown.splitlines() if "e2e" in line)
    assert unit.split("│")[1:-1] == [" unit ", "       2 ", "    10 ", "    5 ", "      50.00 "]
    assert e2e.rstrip().rstrip("│").strip().endswith("-")


def test_pull_request_rows_name_the_pull_the_patch_and_why_a_delivery_failed() -> None:
    feedback = {
        "info": {"pull": {"number": 7, "base_branch": "main"}, "patch": 87.5},
        "deliveries": [
            {"target": "comment", "state": "sent", "attempts": 1, "error": "old"},
            {"target": "status:codecov/project", "state": "failed", "attempts": 3, "error": "403"},
        ],
    }
    assert pull_request_rows(feedback) == [
        ("pull request", "#7 into main"),
        ("patch coverage", "87.50"),
        ("pr comment", "sent after 1 attempt(s)"),
        ("pr status:codecov/project", "failed after 3 attempt(s): 403"),
    ]
    assert pull_request_rows({"info": {}, "deliveries": []}) == [("pull request", "none")]
    assert pull_request_rows(None) == []


def a_status(**changes: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "repository": "acme/web",
        "commit": SHA,
        "uploads": {"uploaded": 0, "processing": 1, "merged": 2, "error": 0},
        "report_version": 4,
        "notifications": [],
        "redis": {"processing": 1, "processed": 0},
        "finisher": {"finisher_runs": 3, "lock_busy": 1},
    }
    return {**status, **changes}


def test_the_status_table_shows_the_uploads_by_state_and_keeps_the_internals_for_counters() -> None:
    shown = text(status_table(a_status()))
    rows = {" ".join(line.strip("│ ").split("│")[0].split()): line for line in shown.splitlines()}
    assert "uploads merged" in rows and rows["uploads merged"].rstrip(" │").endswith("2")
    assert "uploads processing" in rows and "uploads error" not in rows  # none failed
    assert "report version" not in rows and "redis processing / processed" not in rows
    assert not any(row.startswith("finisher") for row in rows)
    shown = text(status_table(a_status(), counters=True))
    rows = {" ".join(line.strip("│ ").split("│")[0].split()): line for line in shown.splitlines()}
    assert "report version" in rows and "redis processing / processed" in rows
    assert "finisher runs" in rows and "finisher lock busy" in rows
    assert "finisher finisher" not in shown and "webhook" not in shown


def test_the_uploads_table_folds_a_long_path_instead_of_cutting_it() -> None:
    path = "src/packages/very/deep/directory/structure/module_with_a_long_name.py"
    upload = {"upload": 7, "file": path, "state": "merged", "format": "lcov", "flags": []}
    out = io.StringIO()
    Console(file=out, width=70, color_system=None).print(uploads_table([{**upload, "error": None}]))
    cells = [line.split("│")[2].strip() for line in out.getvalue().splitlines() if "│" in line]
    assert "".join(cells) == path  # the whole path, folded over lines


def test_the_status_table_shows_why_the_last_webhook_failed_but_not_an_old_error_once_it_went() -> (
    None
):
    failing = {"state": "failing", "attempts": 2, "error": "HTTP 500"}
    shown = text(status_table(a_status(notifications=[{"webhook": failing}])))
    assert "failing after 2 attempt(s): HTTP 500" in shown
    delivered = {"state": "delivered", "attempts": 3, "error": "HTTP 500"}
    shown = text(status_table(a_status(notifications=[{"webhook": delivered}])))
    assert "delivered after 3 attempt(s)" in shown and "HTTP 500" not in shown


def test_the_uploads_table_shows_the_error_or_else_the_warnings() -> None:
    shown = text(
        uploads_table(
            [
                {
                    "upload": 11,
                    "file": "a.info",
                    "state": "merged",
                    "format": "lcov",
                    "flags": ["unit", "py"],
                    "error": None,
                    "warnings": ["negative counts read as 0", "2 paths not found"],
                },
                {
                    "upload": 12,
                    "file": "b.xml",
                    "state": "error",
                    "format": None,
                    "flags": [],
                    "error": "malformed Cobertura",
                },
            ]
        )
    )
    first = next(line for line in shown.splitlines() if "a.info" in line)
    assert "unit,py" in first and "negative counts read as 0; 2 paths not found" in first
    second = next(line for line in shown.splitlines() if "b.xml" in line)
    assert " 12 " in second and "malformed Cobertura" in second


def test_the_commits_table_counts_every_pending_state_as_pending() -> None:
    listing = {
        "repository": "acme/web",
        "commits": [
            {
                "commit": SHA,
                "created_at": "2026-03-04T05:06:07.123+00:00",
                "uploads": {
                    "uploaded": 1,
                    "processing": 2,
                    "processed": 3,
                    "merged": 4,
                    "error": 5,
                },
                "coverage": None,
                "coverage_display": None,
                "change_display": None,
            },
            {
                "commit": "f" * 40,
                "created_at": "2026-03-04T05:06:07.123+00:00",
                "uploads": dict.fromkeys(("uploaded", "processing", "processed", "error"), 0)
                | {"merged": 1},
                "coverage": 99.58772,
                "coverage_display": "99.58",
                "change_display": "+49.58",
            },
        ],
    }
    shown = text(commits_table(listing))
    row = next(line for line in shown.splitlines() if "0123456789ab" in line)
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells == ["0123456789ab", "2026-03-04 05:06", "4", "5", "6", "-", "-"]
    row = next(line for line in shown.splitlines() if "ffffffffffff" in line)
    assert [cell.strip() for cell in row.strip("│").split("│")][-2:] == ["99.58", "+49.58"]


def test_print_failures_writes_each_failed_upload_and_its_reason_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_failures(
        [
            {"upload": 3, "file": "x.xml", "error": "malformed Cobertura [line 1]"},
            {"upload": 4, "file": "y.info", "error": "empty"},
        ]
    )
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "failed: upload 3 (x.xml): malformed Cobertura [line 1]",
        "failed: upload 4 (y.info): empty",
    ]
