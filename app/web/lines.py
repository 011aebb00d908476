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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup, escape
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.merge.file_lines import WINDOW_LINES, Window
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
        branches = None if br is None else {"covered": br[0], "total": br[1]}
        lines.append({"line": ln, "hits": hits, "kind": kind_of(hits, br), "branches": branches})
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


def kind_of(hits: int, branches: tuple[int, int] | None) -> str:
    """A line's mark: ``miss`` without hits, ``partial`` with a branch not
    covered, else ``hit``."""
    if hits == 0:
        return "miss"
    if branches is not None and branches[0] < branches[1]:
        return "partial"
    return "hit"


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


@dataclass(frozen=True, slots=True)
class Edges:
    """Whether the file has lines before and after the ones a page shows, and
    the page's query, which the links past them keep (``?lead=``)."""

    before: bool = False
    after: bool = False
    query: Mapping[str, str] | None = None

    def href(self, direction: str, line: int) -> str:
        kept = {k: v for k, v in (self.query or {}).items() if k not in ("from", "lead", "at")}
        return "?" + urlencode({**kept, "lead": direction, "at": line})

    def link(self, direction: str, line: int) -> str:
        """The link to the run of missed or partial lines past this page
        (HTML: the query escaped, the rest numbers)."""
        arrow, where = ("\u2191", "before") if direction == "previous" else ("\u2193", "after")
        return (
            f'<a class="lead" data-lead="{direction}" href="{escape(self.href(direction, line))}"'
            f' aria-label="{direction} miss or partial, {where} line {line}">'
            f"{arrow} {direction}</a>"
        )


def page_edges(data: dict[str, Any], query: Mapping[str, str]) -> Edges:
    """A file page's edges (:func:`app.web.page_data.file_data`'s ``data``):
    the source rows' when the page shows the source, else the window's."""
    shown = data.get("source_window") or data["window"]
    return Edges(bool(shown["previous_from"]), bool(shown["next_from"]), query)


def lead_links(stops: list[int], edges: Edges | None = None) -> dict[int, str]:
    """For each stop, the links to the previous and next one (HTML, numbers
    only); the first and the last stop of a page lead past it where the file
    goes on (``edges``, :func:`lead_target`)."""
    edges = edges or Edges()
    out = {}
    for i, line in enumerate(stops):
        links = []
        if i > 0:
            links.append(
                f'<a class="lead" href="#L{stops[i - 1]}" aria-label="previous miss '
                f'or partial, line {stops[i - 1]}">\u2191 previous</a>'
            )
        elif edges.before:
            links.append(edges.link("previous", line))
        if i + 1 < len(stops):
            links.append(
                f'<a class="lead" href="#L{stops[i + 1]}" aria-label="next miss '
                f'or partial, line {stops[i + 1]}">\u2193 next</a>'
            )
        elif edges.after:
            links.append(edges.link("next", line))
        out[line] = " ".join(links)
    return out


#: Windows of ``FILE_PAGE_LINES`` instrumented lines a lead past the page
#: reads at most (a longer stretch of hits costs another step).
LEAD_WINDOWS = 8
#: Lines shown above the line a lead lands on.
LEAD_CONTEXT = 10


@dataclass(frozen=True, slots=True)
class Landing:
    """Where a lead lands: the page's ``?from=`` and the address's fragment."""

    start: int
    fragment: str


def _marked(window: Window) -> Iterator[tuple[int, bool]]:
    """Each line of the window, and whether it is missed or partial."""
    for ln, hits in zip(window.lines, window.hits, strict=True):
        yield ln, kind_of(hits, window.branches.get(ln)) in STOP_KINDS


def lead_target(
    session: Session, cache: ReportCache, commit: Commit, path: str, direction: str, line: int
) -> Landing | None:
    """Where ``?lead=next&at=LINE`` (or ``previous``) lands: the start of the
    next run of missed or partial lines after ``line``'s (the previous one
    before it), with ``LEAD_CONTEXT`` lines above it; the same line when the
    file has none; when ``LEAD_WINDOWS`` windows held none, the first lines not
    read (``#leads``, from which ``n`` goes on), or going back the first line
    read (from which ``p`` goes on). None: the report has no such file. What one request
    reads is bounded by ``LEAD_WINDOWS``, whatever the size of the file."""

    def window(start: int) -> Window | None:
        return cache.file_window(session, commit.id, path, start, FILE_PAGE_LINES)

    def land(target: int) -> Landing:
        return Landing(max(1, target - LEAD_CONTEXT), f"L{target}")

    found = window(line)
    if found is None:
        return None
    if direction == "next":
        inside, start = False, line
        for _ in range(LEAD_WINDOWS):
            for ln, stop in _marked(found):
                if ln > line and stop and not inside:
                    return land(ln)
                inside = stop
            if found.next_from is None:  # the file's last lines: no run after
                return land(line)
            start = found.next_from
            if (following := window(start)) is None:
                break
            found = following
        return Landing(start, "leads")
    upper, back, run_start = line, found.previous_from, None
    for _ in range(LEAD_WINDOWS):
        if back is None or (preceding := window(back)) is None:
            return land(run_start if run_start is not None else line)  # the file's first lines
        for ln, stop in reversed([m for m in _marked(preceding) if m[0] < upper]):
            if stop:
                run_start = ln
            elif run_start is not None:
                return land(run_start)
        upper, back = preceding.lines[0] if preceding.lines else upper, preceding.previous_from
    # None in the windows read: their first line, from which ``p`` goes on back.
    return land(run_start) if run_start is not None else Landing(upper, f"L{upper}")


def rows_html(
    blocks: list[dict[str, Any]],
    stops: list[int] | None = None,
    added: frozenset[int] = frozenset(),
    edges: Edges | None = None,
) -> Markup:
    """The line table's rows as HTML, written here rather than by a Jinja
    loop: a template spends about 11 µs a row (5.8 ms of a 500-row page,
    half of what a GET costs), this about a tenth of that. Every value is a
    number or one of the three marks; each is escaped all the same.

    Each line is its own anchor (``id="L120"``, its number a link to it);
    a ``stops`` line (:func:`stops_of`) carries ``data-stop`` and links to
    the stops before and after it; an ``added`` line (the pull request's
    patch) has the class ``added``."""
    leads = lead_links([int(n) for n in stops or ()], edges)
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
