"""The one comparison of a commit's report with its base.

The comment, the statuses, the pages and the webhook all read a
:class:`Comparison`; nothing else computes a change. Inputs are the
columnar reports the finisher stores (:class:`app.coverage.columnar.Part`,
``codec.load_part(row.report)``), so a 20,000-file report is compared
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

from app.coverage.columnar import Accumulator, Columns, Part, file_counts
from app.coverage.model import Report, Totals
from app.pullrequests.config import CodecovConfig, path_matches
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
    n, missed, partials, branches = file_counts(cols)
    return Totals(1, n, n - missed - partials, missed, partials, branches)


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
    br = cols[2]
    branches = sum(1 for ln in added if ln in states and ln in br)
    totals = Totals(1 if lines else 0, lines, hits, len(misses), len(partials), branches)
    return totals, misses, partials


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
    states, br = line_states(base), base[2]
    found = [states[ln] for ln in fd.removed if ln in states]
    hits, partials = found.count(HIT), found.count(PARTIAL)
    misses = len(found) - hits - partials
    branches = sum(1 for ln in fd.removed if ln in states and ln in br)
    return Totals(1 if found else 0, len(found), hits, misses, partials, branches)


def summed(per_file: Iterable[Totals]) -> Totals:
    """The totals of many files' totals, added up in plain integers (a report
    has thousands of files: no ``Totals`` made per file added)."""
    files = lines = hits = misses = partials = branches = 0
    for t in per_file:
        files += t.files
        lines += t.lines
        hits += t.hits
        misses += t.misses
        partials += t.partials
        branches += t.branches
    return Totals(files, lines, hits, misses, partials, branches)


def part_totals(part: Part, paths: tuple[str, ...] | None = None) -> Totals:
    """A report's totals (restricted to ``paths`` when given)."""
    return summed(
        columns_totals(cols)
        for path, cols in part.files.items()
        if not paths or path_matches(paths, path)
    )


def _patch_totals(part: Part, diff: Diff, keep: Any) -> Totals:
    total = Totals()
    for fd in diff.files.values():
        if fd.status == REMOVED or not fd.added or (keep and not keep(fd.path)):
            continue
        t, _, _ = _patch(part.files.get(fd.path), fd.added)
        total = total + t
    return total


def apply_fixes_and_ignore(config: CodecovConfig, part: Part) -> Part:
    """``part`` with its paths rewritten by ``fixes`` and ``ignore``d files left out
    (two files that one fix maps to the same path are merged)."""
    if not config.ignore and not config.fixes:
        return part
    files: dict[str, Columns] = {}
    for path, cols in part.files.items():
        fixed = config.fix_path(path) if config.fixes else path
        if config.ignore and path_matches(config.ignore, fixed):
            continue
        found = files.get(fixed)
        if found is None:
            files[fixed] = cols
        else:
            acc = Accumulator()
            acc.add(Part({fixed: found}))
            acc.add(Part({fixed: cols}))
            files[fixed] = acc.files[fixed]
    return Part(files)


def _configured(
    config: CodecovConfig,
    head: Part,
    base: Part | None,
    diff: Diff | None,
    head_flags: Mapping[str, FlagInput],
    base_flags: Mapping[str, FlagInput],
) -> tuple[Part, Part | None, Diff | None, dict[str, FlagInput], dict[str, FlagInput]]:
    def fix(part: Part) -> Part:
        return apply_fixes_and_ignore(config, part)

    def flags(given: Mapping[str, FlagInput]) -> dict[str, FlagInput]:
        return {name: FlagInput(fix(f.report), f.carried_from) for name, f in given.items()}

    if diff is not None and config.ignore:
        diff = Diff(
            files={p: fd for p, fd in diff.files.items() if not path_matches(config.ignore, p)},
            omitted=[p for p in diff.omitted if not path_matches(config.ignore, p)],
            truncated=diff.truncated,
        )
    return (
        fix(head),
        fix(base) if base is not None else None,
        diff,
        flags(head_flags),
        flags(base_flags),
    )


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
    config: CodecovConfig | None = None,
) -> Comparison:
    """Compare ``head`` with ``base`` through ``diff`` (None: no diff known).

    ``paths`` restricts every number to the files those patterns match
    (a status's ``paths``). ``config`` applies the file's ``fixes`` (report
    paths rewritten) and ``ignore`` (files left out) to both sides and the
    diff, as Codecov applies them when it processes a report. Without a diff
    there is no patch and no indirect change (nothing says what the change
    touched).
    """
    head_flags = head_flags or {}
    base_flags = base_flags or {}
    if config is not None and (config.ignore or config.fixes):
        head, base, diff, head_flags, base_flags = _configured(
            config, head, base, diff, head_flags, base_flags
        )

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
    head_per_file: list[Totals] = []
    matched_base: set[str] = set()

    for path, cols in head_files.items():
        if paths and not keep(path):
            continue
        ht = columns_totals(cols)
        head_per_file.append(ht)
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
    head_total = summed(head_per_file)

    if base is not None:
        base_per_file: list[Totals] = []
        renamed_away = {fd.base_path for fd in diff_files.values() if fd.previous_path is not None}
        for path, bcols in base_files.items():
            if paths and not keep(path):
                continue
            bt = columns_totals(bcols)
            base_per_file.append(bt)
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
        base_total = summed(base_per_file)

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


# -- per-file totals: what the pages keep cached -----------------------------------
#
# The pages and the notification's webhook body compare cached per-file totals
# (no line data): the total change, and per file the coverage before and after,
# the files whose coverage moved most first. ``app.web.compare`` re-exports these.


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
