"""Terminal output: rich tables for people, JSON for programs."""

from __future__ import annotations

import json
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from app.pullrequests.numbers import DisplayRounding, shown

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

#: Files the report table shows unless ``--all`` is given.
DEFAULT_MAX_FILES = 50


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def plain(value: object) -> str:
    """``value`` as text rich prints as it is: a path such as ``app/[slug]/page.tsx``
    or a parser's reason holds square brackets rich would read as markup."""
    return escape(str(value))


def rounding_of(given: dict[str, Any] | None) -> DisplayRounding:
    """The JSON's ``rounding`` (the repository's ``coverage.precision`` and
    ``coverage.round``), else Codecov's defaults."""
    return DisplayRounding(**given) if given else DisplayRounding()


def percent(value: float | None, rounding: dict[str, Any] | None = None) -> str:
    """A coverage percentage as the pages show it; a file without lines has
    none (shown as ``-``)."""
    figure = shown(rounding_of(rounding), value)
    return "-" if figure is None else figure


def with_unit(figure: str | None) -> str:
    """A displayed coverage or change with its unit, written as the pages, the
    badge and the pull-request comment write it (``73.68%``); ``-`` alone
    when it is unknown."""
    return "-" if figure is None else f"{figure}%"


def report_table(report: dict[str, Any], *, max_files: int | None = DEFAULT_MAX_FILES) -> Table:
    flag = f"  flag {report['flag']}" if report.get("flag") else ""
    table = Table(
        title=f"{plain(report['repository'])} @ {report['commit'][:12]}{plain(flag)}"
        f"  (version {report['version']})"
    )
    for column in ("file", "lines", "hits", "misses", "partials", "coverage %"):
        table.add_column(column, justify="left" if column == "file" else "right")
    files = list(report["files"].items())
    rounding = report.get("rounding")
    listed = files if max_files is None else files[:max_files]
    for path, t in listed:
        table.add_row(
            plain(path),
            *(str(t[k]) for k in ("lines", "hits", "misses", "partials")),
            percent(t["coverage"], rounding),
        )
    if len(files) > len(listed):
        table.add_row(f"... {len(files) - len(listed)} more files (--all shows them)", *[""] * 5)
    t = report["totals"]
    table.add_section()
    table.add_row(
        f"TOTAL ({t['files']} files)",
        *(str(t[k]) for k in ("lines", "hits", "misses", "partials")),
        percent(t["coverage"], rounding),
        style="bold",
    )
    if "base_commit" in report:
        base, change = report["base_commit"], report.get("change_display")
        table.caption = (
            f"base {base[:12]}, change {with_unit(change)}"
            if base and change
            else "no base to compare with"
        )
    return table


def flags_table(flags: dict[str, dict[str, Any]], rounding: dict[str, Any] | None = None) -> Table:
    table = Table(title="per flag")
    for column in ("flag", "uploads", "lines", "hits", "coverage %"):
        table.add_column(column, justify="left" if column == "flag" else "right")
    for flag, t in flags.items():
        table.add_row(
            plain(flag),
            str(t["uploads"]),
            str(t["lines"]),
            str(t["hits"]),
            percent(t["coverage"], rounding),
        )
    return table


def pull_request_rows(
    feedback: dict[str, Any] | None, rounding: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """The pull request and each status/comment delivery, with why one failed."""
    if not feedback:
        return []
    info = feedback.get("info") or {}
    pull = info.get("pull")
    into = f" into {pull['base_branch']}" if pull and pull.get("base_branch") else ""
    rows = [("pull request", f"#{pull['number']}{into}" if pull else "none")]
    if info.get("patch") is not None:
        rows.append(("patch coverage", percent(info["patch"], rounding)))
    for d in feedback["deliveries"]:
        why = f": {d['error']}" if d["error"] and d["state"] != "sent" else ""
        rows.append((f"pr {d['target']}", f"{d['state']} after {d['attempts']} attempt(s){why}"))
    return rows


def figure_rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """Coverage, base and change as the JSON displays them (``app/figures.py``)."""
    if "coverage_display" not in figures:
        return []
    base = figures.get("base_commit")
    change = figures.get("change_display")
    return [
        ("coverage", with_unit(figures["coverage_display"])),
        ("base", base[:12] if base else "none"),
        ("change", with_unit(change)),
    ]


def status_table(status: dict[str, Any], *, counters: bool = False) -> Table:
    """The commit's figures, its uploads by state (those with any) and what
    was sent; the pipeline's internal counters only with ``counters``."""
    table = Table(
        title=f"{plain(status['repository'])} @ {status['commit'][:12]}", show_header=False
    )
    table.add_column("what")
    table.add_column("value", justify="right")
    for label, value in figure_rows(status):
        table.add_row(label, value)
    for state, n in status["uploads"].items():
        if n or state == "merged":
            table.add_row(f"uploads {state}", str(n))
    table.add_row("notifications", str(len(status["notifications"])))
    if status["notifications"] and (hook := status["notifications"][-1].get("webhook")):
        why = f": {hook['error']}" if hook["state"] != "delivered" and hook["error"] else ""
        table.add_row("webhook", plain(f"{hook['state']} after {hook['attempts']} attempt(s){why}"))
    for label, value in pull_request_rows(status.get("pull_request"), status.get("rounding")):
        table.add_row(plain(label), plain(value))
    if not counters:
        return table
    table.add_row("report version", str(status["report_version"]))
    table.add_row(
        "redis processing / processed",
        f"{status['redis']['processing']} / {status['redis']['processed']}",
    )
    for name, n in status["finisher"].items():
        label = name.replace("_", " ")
        table.add_row(label if label.startswith("finisher") else f"finisher {label}", str(n))
    return table


def _notes(upload: dict[str, Any]) -> list[str]:
    """An upload's warnings, then the records its parser skipped."""
    skipped = upload.get("skipped")
    return [*upload.get("warnings", []), *([skipped] if skipped else [])]


def uploads_table(uploads: list[dict[str, Any]]) -> Table:
    table = Table(title="uploads")
    for column in ("id", "file", "state", "format", "flags", "error / warnings"):
        # A path is folded onto further lines, never cut: it is what names the upload.
        overflow: Literal["fold", "ellipsis"] = (
            "fold" if column in ("file", "error / warnings") else "ellipsis"
        )
        table.add_column(column, justify="right" if column == "id" else "left", overflow=overflow)
    for u in uploads:
        style = "red" if u["state"] == "error" else None
        table.add_row(
            str(u["upload"]),
            plain(u["file"]),
            u["state"],
            plain(u["format"] or ""),
            plain(",".join(u["flags"])),
            plain(u["error"] or "; ".join(_notes(u))),
            style=style,
        )
    return table


def commits_table(listing: dict[str, Any]) -> Table:
    table = Table(title=f"commits of {plain(listing['repository'])} (newest first)")
    for column in ("commit", "uploaded", "merged", "failed", "pending", "coverage %", "change"):
        left = column in ("commit", "uploaded")
        table.add_column(column, justify="left" if left else "right", no_wrap=left)
    for c in listing["commits"]:
        u = c["uploads"]
        pending = u["uploaded"] + u["processing"] + u["processed"]
        table.add_row(
            c["commit"][:12],
            c["created_at"][:16].replace("T", " "),
            str(u["merged"]),
            str(u["error"]),
            str(pending),
            c.get("coverage_display") or "-",
            c.get("change_display") or "-",
        )
    return table


def print_failures(errors: list[dict[str, Any]]) -> None:
    """Each failed upload and why, on stderr."""
    for e in errors:
        err_console.print(
            f"[red]failed:[/red] upload {e['upload']} ({plain(e['file'])}): {plain(e['error'])}",
            highlight=False,
        )
