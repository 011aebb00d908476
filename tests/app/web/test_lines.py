"""The file page's line map (app/web/lines.py): each line's mark, runs of
misses folded, and rows written as escaped HTML."""

from __future__ import annotations

from typing import Any, cast

import pytest
from markupsafe import Markup
from sqlalchemy.orm import Session

from app.coverage import Totals
from app.db.models import Commit, Repository
from app.merge.file_lines import Window, window_of
from app.web.lines import (
    COLLAPSE_MISSES,
    FILE_PAGE_LINES,
    LEAD_CONTEXT,
    LEAD_WINDOWS,
    Edges,
    Landing,
    file_page,
    lead_links,
    lead_target,
    line_blocks,
    rows_html,
    stops_of,
)
from app.web.reports import ReportCache


class OneWindow:
    """A report cache that holds one window of one file."""

    def __init__(self, path: str, window: Window) -> None:
        self.path, self.window = path, window
        self.asked: list[tuple[int, str, int, int]] = []

    def file_window(
        self, session: Session, commit_id: int, path: str, start: int, limit: int
    ) -> Window | None:
        self.asked.append((commit_id, path, start, limit))
        return self.window if path == self.path else None


def page_of(window: Window, path: str = "src/a.py", **kwargs: Any) -> dict[str, Any] | None:
    cache = OneWindow("src/a.py", window)
    repo, commit = Repository(name="acme/web"), Commit(id=7, sha="c" * 40)
    return file_page(cast(Session, None), cast(ReportCache, cache), repo, commit, path, **kwargs)


def row(line: int, kind: str, hits: int = 0, branches: Any = None) -> dict[str, Any]:
    return {"line": line, "hits": hits, "kind": kind, "branches": branches}


def test_a_line_is_a_miss_without_hits_partial_with_branches_left_and_else_a_hit() -> None:
    window = Window(
        lines=[1, 2, 3, 4, 5],
        hits=[0, 2, 2, 2, 0],
        branches={2: (1, 2), 3: (2, 2), 5: (0, 2)},
        instrumented_lines=9,
        previous_from=None,
        next_from=6,
        totals=Totals(1, 9, 5, 3, 1),
    )
    data = page_of(window)
    assert data is not None
    assert [(r["line"], r["kind"]) for r in data["lines"]] == [
        (1, "miss"), (2, "partial"), (3, "hit"), (4, "hit"), (5, "miss"),
    ]  # fmt: skip
    assert data["lines"][1]["branches"] == {"covered": 1, "total": 2}
    assert data["lines"][3]["branches"] is None
    assert data["window"] == {
        "from": 1, "to": 5, "instrumented_lines": 9, "previous_from": None, "next_from": 6,
    }  # fmt: skip
    assert (data["repository"], data["commit"], data["path"]) == ("acme/web", "c" * 40, "src/a.py")
    assert data["totals"]["partials"] == 1


def test_an_unknown_file_is_none_and_an_empty_window_starts_where_it_was_asked() -> None:
    empty = Window([], [], {}, 3, 1, None, Totals(1, 3, 3, 0, 0))
    assert page_of(empty, path="other.py") is None
    data = page_of(empty, start=900)
    assert data is not None and data["lines"] == []
    assert (data["window"]["from"], data["window"]["to"]) == (900, None)


def test_the_page_asks_the_cache_for_the_window_from_the_line_asked() -> None:
    cache = OneWindow("a.py", Window([], [], {}, 0, None, None, Totals()))
    file_page(
        cast(Session, None),
        cast(ReportCache, cache),
        Repository(name="r/r"),
        Commit(id=3, sha="s"),
        "a.py",
        start=501,
        limit=20,
    )
    assert cache.asked == [(3, "a.py", 501, 20)]


def test_runs_of_enough_misses_fold_into_one_block_and_shorter_runs_stay_lines() -> None:
    assert COLLAPSE_MISSES == 4
    lines = [
        row(1, "hit", 1),
        *(row(n, "miss") for n in (2, 3, 4)),  # three: not folded
        row(5, "partial", 1),
        *(row(n, "miss") for n in range(6, 10)),  # four: folded
        row(10, "hit", 1),
        *(row(n, "miss") for n in range(11, 16)),  # a run at the end folds too
    ]
    blocks = line_blocks(lines)
    shown = [
        (b["first"], b["last"], len(b["run"])) if b["run"] else b["line"]["line"] for b in blocks
    ]
    assert shown == [1, 2, 3, 4, 5, (6, 9, 4), 10, (11, 15, 5)]
    assert line_blocks([]) == []


def test_the_rows_show_marks_hits_branches_and_folded_runs() -> None:
    blocks = line_blocks(
        [row(1, "partial", 3, {"covered": 1, "total": 2}), *(row(n, "miss") for n in range(2, 7))]
    )
    html = rows_html(blocks)
    assert isinstance(html, Markup)
    first, run = html.split("\n")
    assert first == (
        '<tr class="partial" id="L1"><td class="num"><a href="#L1">1</a></td>'
        '<td><span class="mark partial">partial</span></td>'
        '<td class="num">3</td><td>1/2</td></tr>'
    )
    assert '<td class="num"><a href="#L2">2\u20136</a></td>' in run and "5 missed lines" in run
    assert '<span class="small">2, <span id="L3">3</span>, <span id="L4">4</span>' in run


def test_the_rows_escape_a_mark_and_refuse_a_line_number_that_is_not_a_number() -> None:
    html = rows_html(line_blocks([row(1, '"><script>alert(1)</script>', 1)]))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'class="&#34;&gt;' in html  # cannot close the attribute
    with pytest.raises(ValueError):
        rows_html(line_blocks([row("<b>1</b>", "hit", 1)]))  # type: ignore[arg-type]


def test_a_stop_is_where_a_run_of_missed_or_partial_lines_starts() -> None:
    kinds = {1: "hit", 2: "miss", 3: "partial", 4: "hit", 7: "partial", 9: "miss", 10: "hit"}
    assert stops_of([row(n, k) for n, k in kinds.items()]) == [2, 7]
    assert stops_of([row(1, "hit")]) == []


def test_each_stop_links_to_the_one_before_and_after_it() -> None:
    leads = lead_links([2, 7, 30])
    assert 'href="#L7"' in leads[2] and "previous" not in leads[2]
    assert 'href="#L2"' in leads[7] and 'href="#L30"' in leads[7]
    assert "next" not in leads[30]
    html = rows_html(line_blocks([row(1, "hit", 1), row(2, "miss"), row(3, "hit", 2)]), [2])
    assert '<tr class="miss" id="L2" data-stop>' in html
    added = rows_html(line_blocks([row(5, "hit", 1)]), [], frozenset({5}))
    assert '<tr class="hit added" id="L5">' in added and "mark added" in added


class WholeFile:
    """A report cache that holds one file, windowed as the stored rows are."""

    def __init__(self, hits: dict[int, int], branches: dict[int, tuple[int, int]] | None = None):
        self.lines, self.hits = sorted(hits), [hits[n] for n in sorted(hits)]
        self.branches = branches or {}
        self.asked = 0

    def file_window(
        self, session: Session, commit_id: int, path: str, start: int, limit: int
    ) -> Window | None:
        self.asked += 1
        totals = Totals(1, len(self.lines), 0, 0, 0)
        count = len(self.lines)
        return window_of(self.lines, self.hits, self.branches, 0, count, totals, start, limit)


def lead(cache: WholeFile, direction: str, line: int) -> Landing | None:
    commit = Commit(id=7, sha="c" * 40)
    return lead_target(
        cast(Session, None), cast(ReportCache, cache), commit, "a.py", direction, line
    )


def test_a_lead_past_the_page_lands_on_the_run_of_misses_beyond_it() -> None:
    size = 3 * FILE_PAGE_LINES
    hits = {n: 1 for n in range(1, size + 1)}
    hits.update({10: 0, 11: 0, 12: 0, 2 * FILE_PAGE_LINES - 5: 0})
    cache = WholeFile(hits, {size - 3: (1, 2)})  # a partial line in the last window
    far, last = 2 * FILE_PAGE_LINES - 5, size - 3

    assert lead(cache, "next", 10) == Landing(far - LEAD_CONTEXT, f"L{far}")
    assert lead(cache, "next", far) == Landing(last - LEAD_CONTEXT, f"L{last}")
    assert lead(cache, "next", last) == Landing(last - LEAD_CONTEXT, f"L{last}")  # none after
    assert lead(cache, "previous", last) == Landing(far - LEAD_CONTEXT, f"L{far}")
    assert lead(cache, "previous", far) == Landing(1, "L10")  # the run's start, not 12
    assert lead(cache, "previous", 10) == Landing(1, "L10")  # none before


def test_a_run_across_two_windows_is_one_run_for_the_leads() -> None:
    edge = FILE_PAGE_LINES  # the first window's last line
    hits = {n: 1 for n in range(1, 2 * FILE_PAGE_LINES + 1)}
    hits.update({n: 0 for n in range(edge - 3, edge + 4)})  # 497..503
    hits[edge + 50] = 0
    cache = WholeFile(hits)

    assert lead(cache, "next", edge - 3) == Landing(edge + 50 - LEAD_CONTEXT, f"L{edge + 50}")
    assert lead(cache, "previous", edge + 50) == Landing(edge - 3 - LEAD_CONTEXT, f"L{edge - 3}")


def test_a_lead_reads_a_bounded_number_of_windows_and_lands_where_it_stopped() -> None:
    size = (LEAD_WINDOWS + 2) * FILE_PAGE_LINES
    hits = {n: 1 for n in range(1, size + 1)}
    hits[1] = hits[size] = 0
    cache = WholeFile(hits)

    forward = lead(cache, "next", 1)
    asked, cache.asked = cache.asked, 0
    backward = lead(cache, "previous", size)

    assert forward == Landing(LEAD_WINDOWS * FILE_PAGE_LINES + 1, "leads")
    earliest = size - LEAD_WINDOWS * FILE_PAGE_LINES
    assert backward == Landing(earliest, f"L{earliest}")
    assert asked <= LEAD_WINDOWS + 1 and cache.asked <= LEAD_WINDOWS + 1
    assert lead(WholeFile({}), "next", 1) is not None  # a file without lines: stays


def test_the_first_and_last_stops_lead_past_the_page_where_the_file_goes_on() -> None:
    edges = Edges(before=True, after=True, query={"path": "a&b.py", "from": "501", "lead": "x"})

    leads = lead_links([520, 600], edges)

    assert 'data-lead="previous" href="?path=a%26b.py&amp;lead=previous&amp;at=520"' in leads[520]
    assert 'href="#L600"' in leads[520] and 'href="#L520"' in leads[600]
    assert 'data-lead="next" href="?path=a%26b.py&amp;lead=next&amp;at=600"' in leads[600]
    assert "data-lead" not in "".join(lead_links([520, 600]).values())  # the file ends here
