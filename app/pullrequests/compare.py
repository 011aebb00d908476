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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.coverage.columnar import Accumulator, Columns, Part
from app.coverage.model import Totals
from app.pullrequests.config import path_matches
from app.pullrequests.diff import ADDED, REMOVED, Diff, FileDiff

#: Files listed in ``to_json`` (the notification's "changed most").
DEFAULT_TOP_FILES = 10

MISS, HIT, PARTIAL = 0, 1, 2


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
class _Inputs:
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
    inputs: _Inputs | None = field(default=None, repr=False, compare=False)

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

    def subset(
        self, *, flags: Iterable[str] | None = None, paths: tuple[str, ...] | None = None
    ) -> Comparison:
        """The same comparison restricted to ``flags`` (their merged reports) and
        ``paths`` (a status's filters)."""
        if self.inputs is None:
            raise ValueError("this comparison keeps no inputs to restrict")
        inp = self.inputs
        head, base = inp.head, inp.base
        head_flags, base_flags = inp.head_flags, inp.base_flags
        if flags is not None:
            wanted = list(flags)
            head = _merged(inp.head_flags, wanted)
            base = _merged(inp.base_flags, wanted) if inp.base is not None else None
            head_flags = {f: v for f, v in inp.head_flags.items() if f in wanted}
            base_flags = {f: v for f, v in inp.base_flags.items() if f in wanted}
        return compare(
            head,
            base,
            inp.diff,
            head_sha=self.head_sha,
            base_sha=self.base_sha,
            head_flags=head_flags,
            base_flags=base_flags,
            paths=paths,
        )

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


def _merged(flags: Mapping[str, FlagInput], wanted: list[str]) -> Part:
    acc = Accumulator()
    for name in wanted:
        found = flags.get(name)
        if found is not None:
            acc.add(found.report)
    return Part(acc.files)


# -- per file ------------------------------------------------------------------


def columns_totals(cols: Columns) -> Totals:
    """One file's totals (as :func:`app.coverage.model.file_totals`)."""
    lns, hits, br = cols
    n, missed = len(lns), hits.count(0)
    partials = 0
    if br:
        open_lines = [ln for ln, b in br.items() if b.covered < b.total]
        if open_lines:
            by_line = dict(zip(lns, hits, strict=True))
            partials = sum(1 for ln in open_lines if by_line.get(ln, 0) > 0)
    return Totals(1, n, n - missed - partials, missed, partials)


def line_states(cols: Columns) -> dict[int, int]:
    """Line -> MISS, HIT or PARTIAL."""
    lns, hits, br = cols
    states: dict[int, int] = dict(zip(lns, map(bool, hits), strict=True))
    for ln, b in br.items():
        if b.covered < b.total and states.get(ln):
            states[ln] = PARTIAL
    return states


def _same_states(a: Columns, b: Columns) -> bool:
    """Whether two files have the same lines in the same states (fast, in C mostly)."""
    if a[0] != b[0]:
        return False
    if a[1] != b[1] and bytes(map(bool, a[1])) != bytes(map(bool, b[1])):
        return False
    if a[2] == b[2]:
        return True
    return _partials(a) == _partials(b)


def _partials(cols: Columns) -> set[int]:
    return {ln for ln, s in line_states(cols).items() if s == PARTIAL} if cols[2] else set()


def _patch(cols: Columns | None, added: list[int]) -> tuple[Totals, list[int], list[int]]:
    """Totals of the ``added`` lines that have coverage, and the missed and partial ones."""
    if cols is None or not added:
        return Totals(), [], []
    states = line_states(cols)
    hits, misses, partials = 0, [], []
    for ln in added:
        state = states.get(ln)
        if state is None:
            continue
        if state == PARTIAL:
            partials.append(ln)
        elif state:
            hits += 1
        else:
            misses.append(ln)
    lines = hits + len(misses) + len(partials)
    return Totals(1 if lines else 0, lines, hits, len(misses), len(partials)), misses, partials


def _indirect(head: Columns, base: Columns, fd: FileDiff | None) -> int:
    """Lines outside the diff whose state differs, the base shifted by the diff."""
    if fd is None:
        if _same_states(head, base):
            return 0
        h, b = line_states(head), line_states(base)
        return sum(1 for ln in h.keys() | b.keys() if h.get(ln) != b.get(ln))
    shift = fd.shifter()
    h = line_states(head)
    shifted: dict[int, int] = {}
    for ln, state in line_states(base).items():
        to = shift(ln)
        if to is not None:
            shifted[to] = state
    added = set(fd.added)
    return sum(1 for ln in (h.keys() | shifted.keys()) - added if h.get(ln) != shifted.get(ln))


def _removed(base: Columns, fd: FileDiff) -> Totals:
    """The hits, misses and partials among the base lines ``fd`` removed."""
    if fd.status == REMOVED:
        return columns_totals(base)
    if not fd.removed:
        return Totals()
    states = line_states(base)
    found = [states[ln] for ln in fd.removed if ln in states]
    hits, partials = found.count(HIT), found.count(PARTIAL)
    misses = len(found) - hits - partials
    return Totals(1 if found else 0, len(found), hits, misses, partials)


def part_totals(part: Part, paths: tuple[str, ...] | None = None) -> Totals:
    """A report's totals (restricted to ``paths`` when given)."""
    total = Totals()
    files = lines = hits = misses = partials = 0
    for path, cols in part.files.items():
        if paths and not path_matches(paths, path):
            continue
        t = columns_totals(cols)
        files += 1
        lines += t.lines
        hits += t.hits
        misses += t.misses
        partials += t.partials
    return total + Totals(files, lines, hits, misses, partials)


def _patch_totals(part: Part, diff: Diff, keep: Any) -> Totals:
    total = Totals()
    for fd in diff.files.values():
        if fd.status == REMOVED or not fd.added or (keep and not keep(fd.path)):
            continue
        t, _, _ = _patch(part.files.get(fd.path), fd.added)
        total = total + t
    return total


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
    (a status's ``paths``). Without a diff there is no patch and no
    indirect change (nothing says what the change touched).
    """
    head_flags = head_flags or {}
    base_flags = base_flags or {}

    def keep_all(path: str) -> bool:
        return True

    keep = (lambda path: path_matches(paths, path)) if paths else keep_all
    head_files = head.files
    base_files = base.files if base is not None else {}
    diff_files = diff.files if diff is not None else {}
    omitted = set(diff.omitted) if diff is not None else set()
    files: dict[str, FileComparison] = {}
    head_total = base_total = Totals()
    patch_total: Totals | None = Totals() if diff is not None else None
    h_sum = [0, 0, 0, 0, 0]
    matched_base: set[str] = set()

    for path, cols in head_files.items():
        if paths and not keep(path):
            continue
        ht = columns_totals(cols)
        h_sum[0] += 1
        h_sum[1] += ht.lines
        h_sum[2] += ht.hits
        h_sum[3] += ht.misses
        h_sum[4] += ht.partials
        fd = diff_files.get(path)
        if fd is not None and fd.status == ADDED:
            base_path = None
        else:
            base_path = fd.base_path if fd is not None else path
        bcols = base_files.get(base_path) if base_path is not None else None
        if bcols is not None and base_path is not None:
            matched_base.add(base_path)
        if base is None:
            if fd is None:
                continue
            bt = None
        else:
            bt = columns_totals(bcols) if bcols is not None else None
        patch: Totals | None = None
        misses: list[int] = []
        partials: list[int] = []
        if fd is not None and fd.status != REMOVED:
            patch, misses, partials = _patch(cols, fd.added)
            if patch_total is not None:
                patch_total = patch_total + patch
        indirect = 0
        if diff is not None and base is not None and path not in omitted:
            if bcols is None:
                if fd is None and not diff.truncated:
                    indirect = ht.lines  # appeared without the diff adding it
            elif fd is None or fd.status != ADDED:
                indirect = _indirect(cols, bcols, fd)
        if (
            fd is None
            and bcols is not None
            and bt == ht
            and path not in omitted
            and (indirect == 0 if diff is not None else _same_states(cols, bcols))
        ):
            continue  # unchanged: not listed
        files[path] = FileComparison(
            path=path,
            base_path=base_path if bcols is not None else None,
            head=ht,
            base=bt,
            patch=patch,
            patch_misses=tuple(misses),
            patch_partials=tuple(partials),
            in_diff=fd is not None,
            indirect_lines=indirect,
            diff_status=fd.status if fd is not None else None,
        )
    head_total = Totals(*h_sum)

    if base is not None:
        b_sum = [0, 0, 0, 0, 0]
        renamed_away = {fd.base_path for fd in diff_files.values() if fd.previous_path is not None}
        for path, bcols in base_files.items():
            if paths and not keep(path):
                continue
            bt = columns_totals(bcols)
            b_sum[0] += 1
            b_sum[1] += bt.lines
            b_sum[2] += bt.hits
            b_sum[3] += bt.misses
            b_sum[4] += bt.partials
            if path in matched_base or path in renamed_away:
                continue
            fd = diff_files.get(path)
            indirect = 0
            if diff is not None and fd is None and path not in omitted and not diff.truncated:
                indirect = bt.lines  # disappeared without the diff removing it
            files[path] = FileComparison(
                path=path,
                base_path=path,
                head=None,
                base=bt,
                in_diff=fd is not None,
                indirect_lines=indirect,
                diff_status=fd.status if fd is not None else None,
            )
        base_total = Totals(*b_sum)

    removed: Totals | None = None
    if diff is not None and base is not None:
        removed = Totals()
        for fd in diff_files.values():
            if fd.status == ADDED or (paths and not keep(fd.base_path)):
                continue
            bcols = base_files.get(fd.base_path)
            if bcols is not None:
                removed = removed + _removed(bcols, fd)

    flags: dict[str, FlagComparison] = {}
    for name in sorted(head_flags.keys() | base_flags.keys()):
        hf, bf = head_flags.get(name), base_flags.get(name)
        flags[name] = FlagComparison(
            name=name,
            head=part_totals(hf.report, paths) if hf is not None else None,
            base=part_totals(bf.report, paths) if bf is not None and base is not None else None,
            patch=(
                _patch_totals(hf.report, diff, keep if paths else None)
                if hf is not None and diff is not None
                else None
            ),
            carried_from=hf.carried_from if hf is not None else None,
        )

    return Comparison(
        head_sha=head_sha,
        base_sha=base_sha,
        head=head_total,
        base=base_total if base is not None else None,
        patch=patch_total,
        files=files,
        flags=flags,
        not_measured=sorted(p for p in omitted if keep(p)),
        diff_truncated=bool(diff is not None and diff.truncated),
        removed=removed,
        inputs=_Inputs(head, base, diff, head_flags, base_flags),
    )
