"""Terminal output: rich tables for people, JSON for programs."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def report_table(report: dict[str, Any], *, max_files: int = 50) -> Table:
    table = Table(
        title=f"{report['repository']} @ {report['commit'][:12]}  (version {report['version']})"
    )
    for column in ("file", "lines", "hits", "misses", "partials", "coverage %"):
        table.add_column(column, justify="left" if column == "file" else "right")
    files = list(report["files"].items())
    for path, t in files[:max_files]:
        table.add_row(
            path,
            *(str(t[k]) for k in ("lines", "hits", "misses", "partials")),
            f"{t['coverage']:.2f}",
        )
    if len(files) > max_files:
        table.add_row(f"... {len(files) - max_files} more files", "", "", "", "", "")
    t = report["totals"]
    table.add_section()
    table.add_row(
        f"TOTAL ({t['files']} files)",
        *(str(t[k]) for k in ("lines", "hits", "misses", "partials")),
        f"{t['coverage']:.2f}",
        style="bold",
    )
    return table


def status_table(status: dict[str, Any]) -> Table:
    table = Table(title=f"{status['repository']} @ {status['commit'][:12]}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for state, n in status["uploads"].items():
        table.add_row(f"uploads {state}", str(n))
    table.add_row("report version", str(status["report_version"]))
    table.add_row("notifications", str(len(status["notifications"])))
    if status["notifications"] and (hook := status["notifications"][-1].get("webhook")):
        why = f": {hook['error']}" if hook["state"] != "delivered" and hook["error"] else ""
        table.add_row("webhook", f"{hook['state']} after {hook['attempts']} attempt(s){why}")
    table.add_row(
        "redis processing / processed",
        f"{status['redis']['processing']} / {status['redis']['processed']}",
    )
    for name, n in status["finisher"].items():
        table.add_row(f"finisher {name.replace('_', ' ')}", str(n))
    return table
