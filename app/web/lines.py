"""The file page: a file's line map in a commit's merged report.

The server keeps no source code, so the page is the instrumented lines
alone: each line's hits and mark (hit, partial, miss), the branches of a
line that has them, and runs of missed lines folded into one row.

A page shows a window of ``FILE_PAGE_LINES`` (500) instrumented lines from
``?from=<line>``, with links to the windows before and after: what one GET
costs is bounded by the window, whatever the size of the file (a file of a
million lines is 2,000 pages, not one page of 160 MB).
"""

from __future__ import annotations

import bisect
from typing import Any

from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.web.queries import report_version
from app.web.reports import ReportCache

#: A run of at least this many missed lines is collapsed on the file page.
COLLAPSE_MISSES = 4
#: Instrumented lines on one file page (and in one JSON answer).
FILE_PAGE_LINES = 500


def file_page(
    session: Session,
    cache: ReportCache,
    repo: Repository,
    commit: Commit,
    path: str,
    start: int = 1,
    limit: int = FILE_PAGE_LINES,
) -> dict[str, Any] | None:
    """The file's lines from line ``start`` on, ``limit`` of them at most."""
    version = report_version(session, commit.id)
    fc = cache.file_lines(session, commit.id, version, path)
    if fc is None:
        return None
    order = fc.lines
    at = bisect.bisect_left(order, start)
    window = order[at : at + limit]
    before = order[max(0, at - limit)] if at > 0 else None
    after = order[at + limit] if at + limit < len(order) else None
    lines: list[dict[str, Any]] = []
    for ln, hits in zip(window, fc.hits[at : at + limit], strict=True):
        br = fc.branches.get(ln)
        if hits == 0:
            kind = "miss"
        elif br is not None and br.covered < br.total:
            kind = "partial"
        else:
            kind = "hit"
        branches = None if br is None else {"covered": br.covered, "total": br.total}
        lines.append({"line": ln, "hits": hits, "kind": kind, "branches": branches})
    return {
        "repository": repo.name,
        "commit": commit.sha,
        "path": path,
        "totals": fc.totals.to_dict(),
        "lines": lines,
        "window": {
            "from": window[0] if window else start,
            "to": window[-1] if window else None,
            "instrumented_lines": len(order),
            "previous_from": before,
            "next_from": after,
        },
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
