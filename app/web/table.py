"""The commit page's file table, prepared once per (commit, base) version pair.

A 20,000-file commit must not be re-totalled, re-compared and re-sorted on
every request: ``PreparedTable`` holds the per-file totals as columns
(:class:`app.merge.report_summary.FileTotalsTable`), the comparison and each sort
order (built on first use), so a request only filters and slices. A row is
built only when it is shown: the first view of a new version (sorted by
name, the stored order) builds 100 rows, not 20,000.
"""

from __future__ import annotations

import threading
from typing import Any

from app.merge.report_summary import FileTotalsTable
from app.web.compare import change, compare_totals

#: Rows of the commit page's file table per page.
FILES_PER_PAGE = 100
FILE_SORTS = ("name", "coverage", "misses", "change")


def _coverage(hits: int, lines: int) -> float | None:
    """``Totals.coverage`` of a file, None without lines (as the rows always showed it)."""
    return round(100.0 * hits / lines, 5) if lines else None


class PreparedTable:
    """Rows, the comparison and the sort orders of one commit against one base."""

    def __init__(
        self,
        head: FileTotalsTable,
        base: FileTotalsTable | None,
        *,
        comparison: dict[str, Any] | None = None,
    ) -> None:
        """``comparison``: ``compare_totals(base, head)`` when it is at hand
        (stored by the merge, ``app.merge.report_summary``)."""
        if comparison is None:
            comparison = compare_totals(base.totals() if base is not None else None, head.totals())
        self.comparison = comparison
        self.totals = head.total()
        self._head, self._base = head, base
        self._lower: list[str] | None = None
        self._columns: dict[str, list[Any]] = {}
        self._orders: dict[tuple[str, bool], list[int]] = {}
        self._lock = threading.Lock()

    def _change(self, i: int) -> float | None:
        """As ``file_changes``: an added file's change is its coverage; no base, None."""
        if self._base is None:
            return None
        head = self._head
        head_cov = _coverage(head.hits[i], head.lines[i])
        at = self._base.index().get(head.paths[i])
        if at is None:
            return head_cov
        return change(_coverage(self._base.hits[at], self._base.lines[at]), head_cov)

    def row(self, i: int) -> dict[str, Any]:
        head = self._head
        lines, hits = head.lines[i], head.hits[i]
        return {
            "path": head.paths[i],
            "lines": lines,
            "hits": hits,
            "partials": head.partials[i],
            "misses": head.misses[i],
            "coverage": _coverage(hits, lines),
            "change": self._change(i),
        }

    def _column(self, sort: str) -> list[Any]:
        found = self._columns.get(sort)
        if found is None:
            head, n = self._head, len(self._head)
            if sort == "coverage":
                found = list(map(_coverage, head.hits, head.lines))
            elif sort == "change":
                found = [self._change(i) for i in range(n)]
            else:
                found = head.misses
            self._columns[sort] = found
        return found

    def ordered(self, sort: str, descending: bool) -> list[int]:
        """Row numbers in this order (ties by path); files without a coverage
        or change stay last. The paths are stored sorted, so by name is
        their own order."""
        with self._lock:
            found = self._orders.get((sort, descending))
            if found is not None:
                return found
            everything = range(len(self._head))
            if sort in ("coverage", "misses", "change"):
                values = self._column(sort)
                # sorted() is stable and the rows are in path order: ties stay by path.
                known = sorted(
                    (i for i in everything if values[i] is not None), key=values.__getitem__
                )
                unknown = [i for i in everything if values[i] is None]
            else:
                known, unknown = list(everything), []
            order = (known[::-1] if descending else known) + unknown
            self._orders[(sort, descending)] = order
            return order

    def page(
        self,
        *,
        sort: str = "name",
        descending: bool = False,
        query: str = "",
        page: int = 1,
        per_page: int = FILES_PER_PAGE,
    ) -> dict[str, Any]:
        """One page of the table: filtered by a substring of the path (any
        case), in the asked order."""
        sort = sort if sort in FILE_SORTS else "name"
        rows = self.ordered(sort, descending)
        needle = query.lower()
        if needle:
            if self._lower is None:
                self._lower = [p.lower() for p in self._head.paths]
            lower = self._lower
            rows = [i for i in rows if needle in lower[i]]
        pages = max(1, -(-len(rows) // per_page))
        page = min(max(1, page), pages)
        return {
            "sort": sort,
            "order": "desc" if descending else "asc",
            "query": query,
            "page": page,
            "pages": pages,
            "matching": len(rows),
            "files": [self.row(i) for i in rows[(page - 1) * per_page : page * per_page]],
        }
