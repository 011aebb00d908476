"""The one coverage model every parser produces and the merge works on.

Per file, per line: a hit count, and optionally the line's branches. A
line's branches are known either by identity (the format names each branch,
as LCOV's BRDA, coverage.py's arcs or Go's blocks do) or only as counts
(covered / total, as Cobertura's condition-coverage or JaCoCo's cb/mb).

Merging adds hits. Branches are a join-semilattice, so the merge is
associative, commutative and idempotent whatever mix of sources it sees:

- identities are unioned (a branch covered by any run is covered);
- identities carry a *scheme* prefix (``"lcov:0,1"``, ``"arc:12"``,
  ``"go:3.5,4.2"``); identities of different schemes name the same branches
  differently, so their counts are combined by maximum, not added;
- count-only branches are combined by maximum (two runs of the same code
  cannot have more branches than the larger of them knows of);
- *missed* identities (a format that names only the branches a run missed,
  as coverage.py's Cobertura ``missing-branches`` does) are intersected: a
  branch is missed after the merge only if every such run missed it, as
  ``coverage combine`` (and Codecov) read it. ``miss_total`` is the largest
  branch count those runs gave; their contribution to ``covered`` is
  ``miss_total`` minus the missed ids no identity-known run covered.

``covered`` / ``total`` are the effective counts: the maximum of every
count-only contribution, of the per-scheme sizes of the unioned identities
and of the missed-identity contribution. Each of those only grows under
merging (unions grow, the intersection shrinks), so any bracketing of a
merge gives the same maximum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Protocol

from app.coverage.skipped import SkippedRecords

EMPTY: frozenset[str] = frozenset()


def scheme_size(ids: frozenset[str]) -> int:
    """The number of distinct branches ``ids`` name: the largest per-scheme group."""
    if not ids:
        return 0
    schemes: dict[str, int] = {}
    for branch_id in ids:
        scheme = branch_id.partition(":")[0]
        schemes[scheme] = schemes.get(scheme, 0) + 1
    return max(schemes.values())


class Branches:
    """The branches of one line: counts, and identities when the format has them.

    Immutable, so merged reports can share instances safely.
    """

    __slots__ = ("all_ids", "covered", "covered_ids", "miss_total", "missed_ids", "total")

    covered: int
    total: int
    covered_ids: frozenset[str] | None
    all_ids: frozenset[str] | None
    missed_ids: frozenset[str] | None
    miss_total: int

    def __init__(
        self,
        covered: int,
        total: int,
        covered_ids: frozenset[str] | None = None,
        all_ids: frozenset[str] | None = None,
    ) -> None:
        if covered_ids is not None or all_ids is not None:
            covered_ids = covered_ids or frozenset()
            all_ids = (all_ids or frozenset()) | covered_ids
            covered = max(covered, scheme_size(covered_ids))
            total = max(total, scheme_size(all_ids))
        object.__setattr__(self, "covered", covered)
        object.__setattr__(self, "total", max(total, covered))
        object.__setattr__(self, "covered_ids", covered_ids)
        object.__setattr__(self, "all_ids", all_ids)
        object.__setattr__(self, "missed_ids", None)
        object.__setattr__(self, "miss_total", 0)

    @classmethod
    def from_missed(cls, total: int, missed_ids: frozenset[str]) -> Branches:
        """``total`` branches of which exactly ``missed_ids`` were not taken."""
        if len(missed_ids) > total:
            raise ValueError(f"{len(missed_ids)} missed branches of only {total}")
        return cls._trusted(total - len(missed_ids), total, None, None, missed_ids, total)

    @classmethod
    def counted(cls, covered: int, total: int) -> Branches:
        """Fast path for parsers: counts only, ``0 <= covered <= total``."""
        return cls._trusted(covered, total, None, None)

    @classmethod
    def from_ids(cls, covered_ids: frozenset[str], all_ids: frozenset[str]) -> Branches:
        """Identity-known branches; ``covered_ids`` must be a subset of ``all_ids``."""
        return cls(0, 0, covered_ids, all_ids)

    @classmethod
    def of_one_scheme(cls, covered_ids: frozenset[str], all_ids: frozenset[str]) -> Branches:
        """Fast path for parsers: ids of one scheme, ``covered_ids`` a subset of ``all_ids``."""
        return cls._trusted(len(covered_ids), len(all_ids), covered_ids, all_ids)

    @classmethod
    def _trusted(
        cls,
        covered: int,
        total: int,
        covered_ids: frozenset[str] | None,
        all_ids: frozenset[str] | None,
        missed_ids: frozenset[str] | None = None,
        miss_total: int = 0,
    ) -> Branches:
        """Build without recomputing: the caller guarantees the invariants."""
        self = object.__new__(cls)
        _set_covered(self, covered)
        _set_total(self, total)
        _set_covered_ids(self, covered_ids)
        _set_all_ids(self, all_ids)
        _set_missed_ids(self, missed_ids)
        _set_miss_total(self, miss_total)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Branches is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Branches):
            return NotImplemented
        return (
            self.covered == other.covered
            and self.total == other.total
            and (self.covered_ids or frozenset()) == (other.covered_ids or frozenset())
            and (self.all_ids or frozenset()) == (other.all_ids or frozenset())
            and self.missed_ids == other.missed_ids
            and self.miss_total == other.miss_total
        )

    def __hash__(self) -> int:
        return hash(
            (
                self.covered,
                self.total,
                self.covered_ids or frozenset(),
                self.all_ids or frozenset(),
                self.missed_ids,
                self.miss_total,
            )
        )

    def __repr__(self) -> str:
        ids = f", {sorted(self.covered_ids or ())}, {sorted(self.all_ids or ())}"
        missed = ""
        if self.missed_ids is not None:
            missed = f", missed={sorted(self.missed_ids)} of {self.miss_total}"
        return f"Branches({self.covered}, {self.total}{ids if self.all_ids else ''}{missed})"

    def merged(self, other: Branches) -> Branches:
        """The join of two branch sets (see the module docstring)."""
        if self is other:
            return self
        covered = max(self.covered, other.covered)
        total = max(self.total, other.total)
        missed, miss_total = _meet(self, other)
        if self.all_ids is None and other.all_ids is None:
            if missed is not None:
                covered = max(covered, miss_total - len(missed))
            return Branches._trusted(covered, total, None, None, missed, miss_total)
        covered_ids, grew = _union(self.covered_ids or EMPTY, other.covered_ids or EMPTY)
        if grew:
            covered = max(covered, scheme_size(covered_ids))
        all_ids, grew = _union(self.all_ids or EMPTY, other.all_ids or EMPTY)
        if grew:
            total = max(total, scheme_size(all_ids))
        if missed is not None:
            covered = max(covered, miss_total - len(missed - covered_ids))
        return Branches._trusted(
            covered, max(total, covered), covered_ids, all_ids, missed, miss_total
        )


#: Setters of the slots of :class:`Branches`, past its ``__setattr__``: how
#: ``_trusted`` fills a new instance, a third of the time ``object.__setattr__``
#: takes (parsers build one per branch line).
_set_covered, _set_total, _set_covered_ids, _set_all_ids, _set_missed_ids, _set_miss_total = (
    getattr(Branches, name).__set__
    for name in ("covered", "total", "covered_ids", "all_ids", "missed_ids", "miss_total")
)


class FileByIds:
    """A file as a line-by-line parser collects it: hits per line, and per
    line the ids of its branches (``all_ids``) and of those taken (``covered``)."""

    __slots__ = ("all_ids", "covered", "lines", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: dict[int, int] = {}
        self.all_ids: dict[int, set[str]] = {}
        self.covered: dict[int, set[str]] = {}

    def coverage(self) -> FileCoverage:
        return FileCoverage(self.lines, branches_of_ids(self.all_ids, self.covered))


def branches_of_ids(
    all_ids: Mapping[int, Set[str]], covered: Mapping[int, Set[str]]
) -> dict[int, Branches]:
    """Per line, the branches of one scheme a parser collected by identity:
    ``all_ids[ln]`` the branches of line ``ln``, ``covered[ln]`` (a subset)
    those taken. A line whose set stayed empty has no branches."""
    return {
        ln: Branches.of_one_scheme(frozenset(covered.get(ln, ())), frozenset(ids))
        for ln, ids in all_ids.items()
        if ids
    }


def _meet(a: Branches, b: Branches) -> tuple[frozenset[str] | None, int]:
    """The missed ids of both (intersected; ``None`` is "no such run") and their total."""
    if a.missed_ids is None:
        return b.missed_ids, b.miss_total
    if b.missed_ids is None:
        return a.missed_ids, a.miss_total
    return a.missed_ids & b.missed_ids, max(a.miss_total, b.miss_total)


def _union(a: frozenset[str], b: frozenset[str]) -> tuple[frozenset[str], bool]:
    """``a | b``, reusing a side that already holds the other; and whether it grew
    beyond both sides (only then can the per-scheme count exceed theirs)."""
    if a is b or b <= a:
        return a, False
    if a <= b:
        return b, False
    return a | b, True


@dataclass(slots=True)
class FileCoverage:
    lines: dict[int, int] = field(default_factory=dict)
    branches: dict[int, Branches] = field(default_factory=dict)

    def merge(self, other: FileCoverage) -> None:
        lines = self.lines
        if not lines:
            lines.update(other.lines)
        else:
            get = lines.get
            for ln, hits in other.lines.items():
                lines[ln] = get(ln, 0) + hits
        mine = self.branches
        if not mine:
            mine.update(other.branches)
            return
        for ln, br in other.branches.items():
            old = mine.get(ln)
            mine[ln] = br if old is None else old.merged(br)

    def copy(self) -> FileCoverage:
        return FileCoverage(dict(self.lines), dict(self.branches))


@dataclass(slots=True, frozen=True)
class Totals:
    """Codecov's report totals: ``files``, their ``lines`` (hits + misses +
    partials), and ``branches``: the lines that
    carry branches, covered or not (Codecov's ``ReportTotals.branches``, its
    lines of type ``b``)."""

    files: int = 0
    lines: int = 0
    hits: int = 0
    misses: int = 0
    partials: int = 0
    branches: int = 0

    @property
    def coverage(self) -> float:
        """Percentage of lines hit, as Codecov computes it (hits / lines)."""
        return round(100.0 * self.hits / self.lines, 5) if self.lines else 0.0

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            self.files + other.files,
            self.lines + other.lines,
            self.hits + other.hits,
            self.misses + other.misses,
            self.partials + other.partials,
            self.branches + other.branches,
        )

    def to_dict(self) -> dict[str, float | int]:
        return {
            "files": self.files,
            "lines": self.lines,
            "hits": self.hits,
            "misses": self.misses,
            "partials": self.partials,
            "branches": self.branches,
            "coverage": self.coverage,
        }


def file_totals(fc: FileCoverage) -> Totals:
    """A line is a miss (0 hits), a partial (hit, some branch missed) or a hit;
    a branch line is a line with branches."""
    lines = fc.lines
    misses = sum(1 for count in lines.values() if count == 0)
    partials = branches = 0
    for ln, br in fc.branches.items():
        if ln in lines:
            branches += 1
            if br.covered < br.total and lines[ln] > 0:
                partials += 1
    n = len(lines)
    return Totals(1, n, n - misses - partials, misses, partials, branches)


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


class FileSink(Protocol):
    """Where a streaming parser hands each file as it finishes it.

    A :class:`Report` is one (it keeps the files as objects); the
    intermediate's writer (:class:`app.coverage.columnar_write.ColumnWriter`) is
    the other, and keeps only their numbers. The same path may be added more
    than once; the sink merges it. ``file_count`` counts distinct paths, for
    the parse limits.

    ``bases`` are directories a relative ``path`` may lie under, in the
    order to try (Cobertura's ``<source>``s): a sink that places paths by
    the repository's file list tries them (``app.ingest.parse``); the
    others ignore them.
    """

    warnings: list[str]
    #: The bad records the parser skipped (``app.coverage.skipped``).
    skipped: SkippedRecords

    def add_file(self, path: str, fc: FileCoverage, bases: tuple[str, ...] = ()) -> None: ...

    def __contains__(self, path: object) -> bool: ...

    def file_count(self) -> int: ...


@dataclass(slots=True)
class Report:
    """Coverage of one upload, or of a whole commit once merged.

    ``warnings`` are what the parser forgave in this upload (a negative
    LCOV count clamped to 0, ...), one readable line per kind with its
    count. They belong to the upload, not to the coverage: they are neither
    merged nor serialised, and equal reports may carry different warnings.
    ``bases`` are, per path the parser could not place alone, the
    directories it may lie under (:class:`FileSink`); the upload's too.
    ``skipped`` are the bad records the parser skipped, the upload's too.
    """

    files: dict[str, FileCoverage] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list, compare=False, repr=False)
    skipped: SkippedRecords = field(default_factory=SkippedRecords, compare=False, repr=False)
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    def merge(self, other: Report) -> None:
        """Merge ``other`` into this report, in place (``other`` is not changed)."""
        files = self.files
        for path, fc in other.files.items():
            mine = files.get(path)
            if mine is None:
                files[path] = fc.copy()
            else:
                mine.merge(fc)

    def add_file(self, path: str, fc: FileCoverage, bases: tuple[str, ...] = ()) -> None:
        """``fc`` as the coverage of ``path``, merged into what is there (:class:`FileSink`)."""
        if bases:
            self.bases[path] = bases
        mine = self.files.get(path)
        if mine is None:
            self.files[path] = fc
        else:
            mine.merge(fc)

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def file_count(self) -> int:
        return len(self.files)

    def copy(self) -> Report:
        """An independent copy (Branches are immutable and shared)."""
        return Report({path: fc.copy() for path, fc in self.files.items()})

    def totals(self) -> Totals:
        return summed(file_totals(fc) for fc in self.files.values())

    def file_totals(self) -> dict[str, Totals]:
        return {path: file_totals(fc) for path, fc in sorted(self.files.items())}

    def to_json(self) -> dict[str, object]:
        """The report as users see it: totals and per-file totals."""
        return {
            "totals": self.totals().to_dict(),
            "files": {path: t.to_dict() for path, t in self.file_totals().items()},
        }
