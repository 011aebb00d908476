"""The commit page's table built lazily from per-file columns shows exactly
the rows the table built every row from ``file_changes`` showed."""

from __future__ import annotations

import random
from functools import partial
from typing import Any

import pytest

from app.coverage import Totals
from app.merge.report_summary import FileTotalsTable
from app.web.compare import compare_totals, file_changes
from app.web.table import FILE_SORTS, PreparedTable


def reference_rows(
    head: dict[str, Totals],
    base: dict[str, Totals] | None,
    sort: str,
    descending: bool,
    query: str,
) -> list[dict[str, Any]]:
    """The table's matching rows as they were computed before: every row, then sort, filter."""
    changes = file_changes(base, head) if base is not None else {}
    rows = [
        {
            "path": path,
            "lines": t.lines,
            "hits": t.hits,
            "partials": t.partials,
            "misses": t.misses,
            "coverage": t.coverage if t.lines else None,
            "change": changes[path]["change"] if path in changes else None,
        }
        for path, t in head.items()
    ]
    if sort in ("coverage", "change"):
        known = sorted((r for r in rows if r[sort] is not None), key=lambda r: (r[sort], r["path"]))
        unknown = sorted((r for r in rows if r[sort] is None), key=lambda r: r["path"])
    elif sort == "misses":
        known, unknown = sorted(rows, key=lambda r: (r["misses"], r["path"])), []
    else:
        known, unknown = sorted(rows, key=lambda r: r["path"]), []
    ordered = (known[::-1] if descending else known) + unknown
    if query:
        ordered = [r for r in ordered if query.lower() in r["path"].lower()]
    return ordered


def random_totals(rng: random.Random, paths: list[str]) -> dict[str, Totals]:
    out = {}
    for path in paths:
        lines = rng.choice((0, 1, 2, 3, 4, 10))
        misses = rng.randint(0, lines)
        partials = rng.randint(0, lines - misses)
        out[path] = Totals(1, lines, lines - misses - partials, misses, partials)
    return dict(sorted(out.items()))


@pytest.mark.parametrize("seed", range(6))
def test_every_sort_order_filter_and_page_shows_the_rows_computed_from_file_changes(
    seed: int,
) -> None:
    rng = random.Random(seed)
    names = [f"src/{rng.choice('abAB')}/m{i:03}.py" for i in range(120)]
    head = random_totals(rng, [n for n in names if rng.random() < 0.85])
    base = None if seed == 0 else random_totals(rng, [n for n in names if rng.random() < 0.85])
    base_table = FileTotalsTable.from_totals(base) if base is not None else None
    table = PreparedTable(FileTotalsTable.from_totals(head), base_table)
    assert table.comparison == compare_totals(base, head)
    assert table.totals == sum(head.values(), Totals())
    for sort in (*FILE_SORTS, "unknown"):
        for descending in (False, True):
            for query in ("", "/a/", "M01", "nothing"):
                case = (sort, descending, query)
                shown = "name" if sort not in FILE_SORTS else sort
                want = reference_rows(head, base, shown, descending, query)

                show = partial(
                    table.page, sort=sort, descending=descending, query=query, per_page=25
                )
                pages = [show(page=n) for n in range(1, show(page=1)["pages"] + 1)]
                # The pages hold the matching rows in order, 25 a page, none empty
                # but the only page of no rows.
                assert [r for p in pages for r in p["files"]] == want, case
                assert [len(p["files"]) for p in pages[:-1]] == [25] * (len(pages) - 1), case
                assert 0 < len(pages[-1]["files"]) <= 25 or (want == [] and len(pages) == 1), case
                for n, got in enumerate(pages, 1):
                    assert got == {
                        "sort": shown,
                        "order": "desc" if descending else "asc",
                        "query": query,
                        "page": n,
                        "pages": len(pages),
                        "matching": len(want),
                        "files": got["files"],
                    }, (*case, n)
                # A page before the first shows the first; one past the last, the last.
                assert show(page=0) == pages[0] and show(page=9) == pages[-1], case


def test_a_stored_comparison_is_shown_as_it_was_stored() -> None:
    head = {"a.py": Totals(1, 2, 1, 1, 0)}
    stored = compare_totals({"a.py": Totals(1, 2, 2, 0, 0)}, head)
    table = PreparedTable(FileTotalsTable.from_totals(head), None, comparison=stored)
    assert table.comparison is stored
