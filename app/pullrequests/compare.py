"""The one comparison of a commit's report with its base.

The comment, the statuses, the pages and the webhook all read a
:class:`Comparison`; nothing else computes a change. Inputs are the
columnar reports the finisher stores (:class:`app.coverage.columnar.Part`,
``Part.from_bytes(row.report)``), so a 20,000-file report is compared
without a Python object per line.

Codecov's semantics:

- coverage is hits / lines in percent; a line is a hit, a miss (0 hits) or a
  partial (hit, some branch missed);
- patch coverage counts the added lines (head numbering) of added or
  modified files that have a coverage entry in the head: hits / (hits +
  misses + partials); no such line: ``None`` ("not affected");
- files the provider listed without a patch are ``not_measured``, never
  dropped silently;
- an indirect change is a line outside the diff whose state (hit, miss,
  partial, absent) differs between base (shifted by the diff) and head.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.coverage.columnar import Part
from app.coverage.model import Totals
from app.pullrequests.diff import Diff


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
    #: Lines outside the diff whose state changed (head numbering; a line only
    #: in the base counts at its shifted place).
    indirect_lines: int = 0

    @property
    def change(self) -> float | None:
        """Head coverage minus base coverage, in points; None if either side has no lines."""
        raise NotImplementedError


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
        raise NotImplementedError


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

    @property
    def change(self) -> float | None:
        """``head - base`` coverage in points (unrounded); None without a base."""
        raise NotImplementedError

    @property
    def patch_coverage(self) -> float | None:
        """Patch coverage in percent; None when the diff adds no coverable line."""
        raise NotImplementedError

    def files_with_missing_lines(self) -> list[FileComparison]:
        """Files of the diff with uncovered or partial added lines, most first."""
        raise NotImplementedError

    def indirect_changes(self) -> list[FileComparison]:
        """Files outside the patch whose coverage changed."""
        raise NotImplementedError

    def has_changes(self) -> bool:
        """Codecov's ``any_change``: indirect changes, or coverable lines in the diff."""
        raise NotImplementedError

    def to_json(self, *, top: int = 10) -> dict[str, object]:
        """The JSON the webhook and the pages carry."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class FlagInput:
    """A flag's report on one side; ``carried_from`` marks a carried-forward one."""

    report: Part
    carried_from: str | None = None


def compare(
    head: Part,
    base: Part | None,
    diff: Diff | None,
    *,
    head_sha: str,
    base_sha: str | None,
    head_flags: Mapping[str, FlagInput] | None = None,
    base_flags: Mapping[str, FlagInput] | None = None,
    paths: tuple[str, ...] | None = None,
) -> Comparison:
    """Compare ``head`` with ``base`` through ``diff`` (None: no diff known).

    ``paths`` restricts every number to the files those patterns match
    (a status's ``paths``).
    """
    raise NotImplementedError


def part_totals(part: Part, paths: tuple[str, ...] | None = None) -> Totals:
    """A report's totals (restricted to ``paths`` when given)."""
    raise NotImplementedError
