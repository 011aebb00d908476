"""The commit page's file table, prepared once per (commit, base) version pair.

A 20,000-file commit must not be re-totalled, re-compared and re-sorted on
every request: ``PreparedTable`` holds the rows, the comparison and each
sort order (built on first use), so a request only filters and slices.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from app.coverage import Totals
from app.web.compare import compare_totals, file_changes

#: Rows of the commit page's file table per page.
FILES_PER_PAGE = 100
FILE_SORTS = ("name", "coverage", "misses", "change")


def _sort_key(sort: str) -> Callable[[dict[str, Any]], Any]:
    if sort == "coverage":
        return lambda r: (r["coverage"], r["path"])
    if sort == "misses":
        return lambda r: (r["misses"], r["path"])
    if sort == "change":
        return lambda r: (r["change"], r["path"])
    return lambda r: r["path"]


class PreparedTable:
    """Rows, the comparison and the sort orders of one commit against one base."""

    def __init__(
        self,
        head: Mapping[str, Totals],
        base: Mapping[str, Totals] | None,
        *,
        comparison: dict[str, Any] | None = None,
    ) -> None:
        """``comparison``: ``compare_totals(base, head)`` when it is at hand
        (stored by the merge, ``app.report_summary``)."""
        self.comparison = comparison if comparison is not None else compare_totals(base, head)
        self.totals = sum(head.values(), Totals())
        changes = file_changes(base, head) if base is not None else {}
        self.rows: list[dict[str, Any]] = [
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
        self._lower = {path: path.lower() for path in head}
        self._orders: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def ordered(self, sort: str, descending: bool) -> list[dict[str, Any]]:
        """Rows in this order; files without a coverage or change stay last."""
        with self._lock:
            found = self._orders.get((sort, descending))
        if found is not None:
            return found
        key = _sort_key(sort)
        if sort in ("coverage", "change"):
            known = sorted((r for r in self.rows if r[sort] is not None), key=key)
            unknown = sorted((r for r in self.rows if r[sort] is None), key=_sort_key("name"))
        else:
            known, unknown = sorted(self.rows, key=key), []
        order = (known[::-1] if descending else known) + unknown
        with self._lock:
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
            lower = self._lower
            rows = [r for r in rows if needle in lower[r["path"]]]
        pages = max(1, -(-len(rows) // per_page))
        page = min(max(1, page), pages)
        return {
            "sort": sort,
            "order": "desc" if descending else "asc",
            "query": query,
            "page": page,
            "pages": pages,
            "matching": len(rows),
            "files": rows[(page - 1) * per_page : page * per_page],
        }
