"""What a comparison of a head report with its base found: :class:`Comparison`
(totals, patch, files, flags) and its parts, which the comment, the statuses,
the pages and the webhook read; :mod:`app.pullrequests.compare` makes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.coverage.columnar import Part
from app.coverage.model import Totals
from app.pullrequests.diff import Diff

#: Files listed in ``to_json`` (the notification's "changed most").
DEFAULT_TOP_FILES = 10


def coverage_of(totals: Totals | None) -> float | None:
    """Percent of lines hit; None when there are no lines (Codecov's ``None``)."""
    if totals is None or totals.lines == 0:
        return None
    return totals.coverage


def change(base: float | None, head: float | None) -> float | None:
    """``head - base`` in points, rounded to 5 decimals; None if either is unknown."""
    if base is None or head is None:
        return None
    return round(head - base, 5)


@dataclass(frozen=True, slots=True)
class FileComparison:
    path: str  # head path (base path for a removed file)
    base_path: str | None  # None: not in the base
    head: Totals | None  # None: not in the head
    base: Totals | None
    #: Totals of the file's added coverable lines; None: not in the diff.
    patch: Totals | None = None
    #: Added lines without coverage / partially covered (head numbering).
    patch_misses: tuple[int, ...] = ()
    patch_partials: tuple[int, ...] = ()
    in_diff: bool = False
    #: Lines outside the diff whose state (hit, miss, partial, absent) changed.
    indirect_lines: int = 0
    #: The diff's status of the file (added, modified, removed, renamed); None: not in it.
    diff_status: str | None = None

    @property
    def change(self) -> float | None:
        """Head coverage minus base coverage, in points; None if either side has no lines."""
        return change(coverage_of(self.base), coverage_of(self.head))

    @property
    def patch_uncovered(self) -> int:
        return len(self.patch_misses) + len(self.patch_partials)


@dataclass(frozen=True, slots=True)
class FlagComparison:
    name: str
    head: Totals | None
    base: Totals | None
    patch: Totals | None
    #: The sha the flag's head coverage was carried from; None: uploaded.
    carried_from: str | None = None

    @property
    def carried_forward(self) -> bool:
        return self.carried_from is not None

    @property
    def change(self) -> float | None:
        return change(coverage_of(self.base), coverage_of(self.head))


@dataclass(frozen=True, slots=True)
class FlagInput:
    """A flag's report on one side; ``carried_from`` marks a carried-forward one."""

    report: Part
    carried_from: str | None = None


@dataclass(frozen=True, slots=True)
class Inputs:
    head: Part
    base: Part | None
    diff: Diff | None
    head_flags: Mapping[str, FlagInput]
    base_flags: Mapping[str, FlagInput]


@dataclass(slots=True)
class Comparison:
    head_sha: str
    base_sha: str | None
    head: Totals
    base: Totals | None  # None: no base report
    #: Totals of every added coverable line; None: no diff was given.
    patch: Totals | None
    files: dict[str, FileComparison] = field(default_factory=dict)  # by head path
    flags: dict[str, FlagComparison] = field(default_factory=dict)
    #: Files of the diff the provider gave no patch for (their patch is unknown).
    not_measured: list[str] = field(default_factory=list)
    #: The provider's file list may be incomplete.
    diff_truncated: bool = False
    #: Base lines the diff removed, by their base state (``adjust_base``); None: no diff.
    removed: Totals | None = None
    inputs: Inputs | None = field(default=None, repr=False, compare=False)

    @property
    def change(self) -> float | None:
        """``head - base`` coverage in points (to 5 decimals); None without a base."""
        if self.base is None:
            return None
        return change(coverage_of(self.base), coverage_of(self.head))

    @property
    def patch_coverage(self) -> float | None:
        """Patch coverage in percent; None when the diff adds no coverable line."""
        return coverage_of(self.patch)

    def files_in_patch(self) -> list[FileComparison]:
        """Files of the diff with coverable added lines."""
        return [f for f in self.files.values() if f.patch is not None and f.patch.lines]

    def files_with_missing_lines(self) -> list[FileComparison]:
        """Files of the diff with uncovered or partial added lines, most first."""
        rows = [f for f in self.files_in_patch() if f.patch_uncovered]
        rows.sort(key=lambda f: (-f.patch_uncovered, f.path))
        return rows

    def indirect_changes(self) -> list[FileComparison]:
        """Files with coverage changes the diff does not explain (most lines first)."""
        rows = [f for f in self.files.values() if f.indirect_lines]
        rows.sort(key=lambda f: (-f.indirect_lines, f.path))
        return rows

    def has_changes(self) -> bool:
        """Codecov's ``any_change``: indirect changes, or coverable lines in the diff."""
        return bool(self.indirect_changes()) or bool(self.patch and self.patch.lines)

    def to_json(self, *, top: int = DEFAULT_TOP_FILES) -> dict[str, Any]:
        """The JSON the webhook and the pages carry (``commit_delta``'s fields, and more)."""
        moved = [
            f
            for f in self.files.values()
            if f.head is None or f.base is None or f.change or f.in_diff
        ]
        moved.sort(key=lambda f: (-abs(_file_delta(f) or 0.0), f.path))
        return {
            "base_commit": self.base_sha,
            "head_commit": self.head_sha,
            "base": self.base.to_dict() if self.base is not None else None,
            "head": self.head.to_dict(),
            "change": self.change,
            "patch": self.patch.to_dict() if self.patch is not None else None,
            "patch_coverage": self.patch_coverage,
            "files_changed": len(moved) if self.base is not None else 0,
            "top_files": [_file_row(f) for f in moved[:top]] if self.base is not None else [],
            "indirect_changes": len(self.indirect_changes()),
            "not_measured": list(self.not_measured),
            "diff_truncated": self.diff_truncated,
            "flags": {
                name: {
                    "head": coverage_of(f.head),
                    "base": coverage_of(f.base),
                    "change": f.change,
                    "patch": coverage_of(f.patch),
                    "carried_from": f.carried_from,
                }
                for name, f in sorted(self.flags.items())
            },
        }


def _file_delta(f: FileComparison) -> float | None:
    if f.base is None:
        return coverage_of(f.head)
    if f.head is None:
        base = coverage_of(f.base)
        return None if base is None else -base
    return f.change


def _file_row(f: FileComparison) -> dict[str, Any]:
    status = "added" if f.base is None else "removed" if f.head is None else "changed"
    return {
        "path": f.path,
        "status": status,
        "base": coverage_of(f.base),
        "head": coverage_of(f.head),
        "change": _file_delta(f),
        "misses_change": (f.head.misses if f.head else 0) - (f.base.misses if f.base else 0),
        "patch": coverage_of(f.patch),
        "indirect_lines": f.indirect_lines,
    }
