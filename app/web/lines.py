"""The file page: a file's line map in a commit's merged report.

The server keeps no source code, so the page is the instrumented lines
alone: each line's hits and mark (hit, partial, miss), the branches of a
line that has them, and runs of missed lines folded into one row.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.coverage import Totals
from app.db.models import Commit, Repository
from app.web.queries import report_version
from app.web.reports import ReportCache

#: A run of at least this many missed lines is collapsed on the file page.
COLLAPSE_MISSES = 4


def file_page(
    session: Session, cache: ReportCache, repo: Repository, commit: Commit, path: str
) -> dict[str, Any] | None:
    report = cache.report(session, commit.id, report_version(session, commit.id))
    fc = report.files.get(path)
    if fc is None:
        return None
    lines: list[dict[str, Any]] = []
    for ln in sorted(fc.lines):
        hits = fc.lines[ln]
        br = fc.branches.get(ln)
        if hits == 0:
            kind = "miss"
        elif br is not None and br.covered < br.total:
            kind = "partial"
        else:
            kind = "hit"
        branches = None if br is None else {"covered": br.covered, "total": br.total}
        lines.append({"line": ln, "hits": hits, "kind": kind, "branches": branches})
    totals = cache.file_totals(session, commit.id, report_version(session, commit.id)).get(path)
    return {
        "repository": repo.name,
        "commit": commit.sha,
        "path": path,
        "totals": (totals or Totals()).to_dict(),
        "lines": lines,
    }


def line_blocks(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The file page's rows: single lines, and runs of ``COLLAPSE_MISSES`` or
    more consecutive missed lines folded into one block."""
    blocks: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if len(run) >= COLLAPSE_MISSES:
            blocks.append({"run": list(run), "first": run[0]["line"], "last": run[-1]["line"]})
        else:
            blocks.extend({"line": r, "run": None} for r in run)
        run.clear()

    for row in lines:
        if row["kind"] == "miss":
            run.append(row)
            continue
        flush()
        blocks.append({"line": row, "run": None})
    flush()
    return blocks
