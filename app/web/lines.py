"""The file page: a file's line map in a commit's merged report.

The server keeps no source code, so the page is the instrumented lines
alone: each line's hits and mark (hit, partial, miss), the branches of a
line that has them, and runs of missed lines folded into one row.

A page shows a window of ``FILE_PAGE_LINES`` (500) instrumented lines from
``?from=<line>``, with links to the windows before and after: what one GET
costs is bounded by the window, whatever the size of the file (a file of a
million lines is 2,000 pages, not one page of 160 MB). The window is read
from the rows the merge stored around it (``app.merge.file_lines``), not from
the report, so the first GET of a new version costs what the others do.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.merge.file_lines import WINDOW_LINES
from app.web.reports import ReportCache

#: A run of at least this many missed lines is collapsed on the file page.
COLLAPSE_MISSES = 4
#: Instrumented lines on one file page (and in one JSON answer): a stored
#: window, so a page reads two to four rows.
FILE_PAGE_LINES = WINDOW_LINES


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
    window = cache.file_window(session, commit.id, path, start, limit)
    if window is None:
        return None
    lines: list[dict[str, Any]] = []
    for ln, hits in zip(window.lines, window.hits, strict=True):
        br = window.branches.get(ln)
        if hits == 0:
            kind = "miss"
        elif br is not None and br[0] < br[1]:
            kind = "partial"
        else:
            kind = "hit"
        branches = None if br is None else {"covered": br[0], "total": br[1]}
        lines.append({"line": ln, "hits": hits, "kind": kind, "branches": branches})
    return {
        "repository": repo.name,
        "commit": commit.sha,
        "path": path,
        "totals": window.totals.to_dict(),
        "lines": lines,
        # Where each run of missed or partial lines starts, in this window.
        "stops": stops_of(lines),
        "window": {
            "from": window.lines[0] if window.lines else start,
            "to": window.lines[-1] if window.lines else None,
            "instrumented_lines": window.instrumented_lines,
            "previous_from": window.previous_from,
            "next_from": window.next_from,
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


#: Marks a reader stops at: the next/previous links and the ``n``/``p`` keys.
STOP_KINDS = ("miss", "partial")


def stops_of(lines: list[dict[str, Any]]) -> list[int]:
    """Where a run of missed or partial lines starts (instrumented lines in
    order; a run ends at a hit): what "next miss" moves to."""
    stops, inside = [], False
    for row in lines:
        stop = row["kind"] in STOP_KINDS
        if stop and not inside:
            stops.append(int(row["line"]))
        inside = stop
    return stops


def lead_links(stops: list[int]) -> dict[int, str]:
    """For each stop, the links to the previous and next one (HTML, numbers only)."""
    out = {}
    for i, line in enumerate(stops):
        links = []
        if i > 0:
            links.append(
                f'<a class="lead" href="#L{stops[i - 1]}" aria-label="previous miss '
                f'or partial, line {stops[i - 1]}">\u2191 previous</a>'
            )
        if i + 1 < len(stops):
            links.append(
                f'<a class="lead" href="#L{stops[i + 1]}" aria-label="next miss '
                f'or partial, line {stops[i + 1]}">\u2193 next</a>'
            )
        out[line] = " ".join(links)
    return out


def rows_html(
    blocks: list[dict[str, Any]],
    stops: list[int] | None = None,
    added: frozenset[int] = frozenset(),
) -> Markup:
    """The line table's rows as HTML, written here rather than by a Jinja
    loop: a template spends about 11 µs a row (5.8 ms of a 500-row page,
    half of what a GET costs), this about a tenth of that. Every value is a
    number or one of the three marks; each is escaped all the same.

    Each line is its own anchor (``id="L120"``, its number a link to it);
    a ``stops`` line (:func:`stops_of`) carries ``data-stop`` and links to
    the stops before and after it; an ``added`` line (the pull request's
    patch) has the class ``added``."""
    leads = lead_links([int(n) for n in stops or ()])
    out: list[str] = []
    for block in blocks:
        run = block["run"]
        if run:
            first = int(block["first"])
            numbers = ", ".join(_anchor(int(r["line"]), added) for r in run[1:])
            numbers = ", ".join(p for p in (str(first), numbers) if p)
            extra = " added" if first in added else ""
            stop = " data-stop" if first in leads else ""
            out.append(
                f'<tr class="run miss{extra}" id="L{first}"{stop}>'
                f'<td class="num"><a href="#L{first}">{first}\u2013{int(block["last"])}</a></td>'
                f'<td colspan="3"><details><summary>{len(run)} missed lines</summary>'
                f'<span class="small">{numbers}</span></details> {leads.get(first, "")}</td></tr>'
            )
            continue
        row = block["line"]
        kind = escape(row["kind"])
        line = int(row["line"])
        branches = row["branches"]
        shown = f"{int(branches['covered'])}/{int(branches['total'])}" if branches else ""
        extra = " added" if line in added else ""
        is_stop = line in leads
        out.append(
            f'<tr class="{kind}{extra}" id="L{line}"{" data-stop" if is_stop else ""}>'
            f'<td class="num"><a href="#L{line}">{line}</a></td>'
            f'<td><span class="mark {kind}">{kind}</span>{_added_mark(extra)}</td>'
            f'<td class="num">{int(row["hits"])}</td><td>{shown}'
            f"{' ' + leads[line] if is_stop and leads[line] else ''}</td></tr>"
        )
    return Markup("\n".join(out))


def _anchor(line: int, added: frozenset[int]) -> str:
    """A folded line's number, with its own anchor."""
    extra = ' class="added"' if line in added else ""
    return f'<span id="L{line}"{extra}>{line}</span>'


def _added_mark(extra: str) -> str:
    return ' <span class="mark added">added</span>' if extra else ""
