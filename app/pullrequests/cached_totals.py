"""Comparisons of cached per-file totals (no line data): the total change, and
per file the coverage before and after, the files whose coverage moved most
first. What the pages and the notification's webhook body read
(``app.web.compare`` re-exports these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.coverage.model import Report, Totals
from app.pullrequests.comparison import DEFAULT_TOP_FILES, change, coverage_of


def file_changes(
    base_files: Mapping[str, Totals], head_files: Mapping[str, Totals]
) -> dict[str, dict[str, Any]]:
    """Per path of either side: base and head coverage and the change.

    A file only in the head is ``added`` (its change is its coverage, from
    nothing); one only in the base is ``removed``.
    """
    rows: dict[str, dict[str, Any]] = {}
    for path in head_files.keys() | base_files.keys():
        head, base = head_files.get(path), base_files.get(path)
        head_cov, base_cov = coverage_of(head), coverage_of(base)
        if base is None:
            status, delta = "added", head_cov
        elif head is None:
            status, delta = "removed", None if base_cov is None else -base_cov
        else:
            status, delta = "changed", change(base_cov, head_cov)
        rows[path] = {
            "path": path,
            "status": status,
            "base": base_cov,
            "head": head_cov,
            "change": delta,
            "misses_change": (head.misses if head else 0) - (base.misses if base else 0),
        }
    return rows


def compare_totals(
    base_files: Mapping[str, Totals] | None,
    head_files: Mapping[str, Totals],
    *,
    top: int = DEFAULT_TOP_FILES,
) -> dict[str, Any]:
    """``compare`` on per-file totals (what the pages keep cached)."""
    head_total = sum(head_files.values(), Totals())
    if base_files is None:
        return {
            "base": None,
            "head": head_total.to_dict(),
            "change": None,
            "files_changed": 0,
            "top_files": [],
        }
    base_total = sum(base_files.values(), Totals())
    rows = file_changes(base_files, head_files)
    moved = [r for r in rows.values() if r["status"] != "changed" or r["change"]]
    moved.sort(key=lambda r: (-abs(r["change"] or 0.0), r["path"]))
    return {
        "base": base_total.to_dict(),
        "head": head_total.to_dict(),
        "change": change(coverage_of(base_total), coverage_of(head_total)),
        "files_changed": len(moved),
        "top_files": moved[:top],
    }


def report_change(
    base_report: Report | None, head_report: Report, *, top: int = DEFAULT_TOP_FILES
) -> dict[str, Any]:
    """The change from ``base_report`` (None: no base known) to ``head_report``.

    ``{"base": totals | None, "head": totals, "change": points | None,
    "files_changed": n, "top_files": [{path, status, base, head, change,
    misses_change}, ...]}``; JSON-serialisable.
    """
    base_files = base_report.file_totals() if base_report is not None else None
    return compare_totals(base_files, head_report.file_totals(), top=top)


def compare_flags(
    base_flags: Mapping[str, Totals],
    head_flags: Mapping[str, Totals],
    carried: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per flag of the head: its coverage, the base's, the change, and the sha
    its coverage was carried forward from (None: uploaded)."""
    carried = carried or {}
    out: dict[str, dict[str, Any]] = {}
    for flag, head in sorted(head_flags.items()):
        base = base_flags.get(flag)
        out[flag] = {
            "head": coverage_of(head),
            "base": coverage_of(base),
            "change": change(coverage_of(base), coverage_of(head)),
            "carried_from": carried.get(flag),
        }
    return out
