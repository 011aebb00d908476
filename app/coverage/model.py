"""The one coverage model every parser produces and the merge works on.

Per file, per line: a hit count, and optionally the line's branches. A
line's branches are known either by identity (the format names each branch,
as LCOV's BRDA or coverage.py's arcs do) or only as counts (covered / total,
as Cobertura's condition-coverage). Merging adds hits; branches with
identities on both sides are unioned, otherwise the maximum of the counts
is kept (two runs of the same code cannot have more branches than the
larger of them knows of).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field

SERIAL_VERSION = 1


@dataclass(slots=True)
class Branches:
    """The branches of one line: counts, and identities when the format has them."""

    covered: int
    total: int
    covered_ids: frozenset[str] | None = None
    all_ids: frozenset[str] | None = None

    def merged(self, other: Branches) -> Branches:
        if self.all_ids is not None and other.all_ids is not None:
            assert self.covered_ids is not None and other.covered_ids is not None
            all_ids = self.all_ids | other.all_ids
            covered_ids = self.covered_ids | other.covered_ids
            return Branches(len(covered_ids), len(all_ids), covered_ids, all_ids)
        return Branches(max(self.covered, other.covered), max(self.total, other.total))


@dataclass(slots=True)
class FileCoverage:
    lines: dict[int, int] = field(default_factory=dict)
    branches: dict[int, Branches] = field(default_factory=dict)

    def merge(self, other: FileCoverage) -> None:
        lines = self.lines
        for ln, hits in other.lines.items():
            lines[ln] = lines.get(ln, 0) + hits
        for ln, br in other.branches.items():
            mine = self.branches.get(ln)
            self.branches[ln] = br if mine is None else mine.merged(br)


@dataclass(slots=True, frozen=True)
class Totals:
    files: int = 0
    lines: int = 0
    hits: int = 0
    misses: int = 0
    partials: int = 0

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
        )

    def to_dict(self) -> dict[str, float | int]:
        return {
            "files": self.files,
            "lines": self.lines,
            "hits": self.hits,
            "misses": self.misses,
            "partials": self.partials,
            "coverage": self.coverage,
        }


def file_totals(fc: FileCoverage) -> Totals:
    hits = misses = partials = 0
    branches = fc.branches
    for ln, count in fc.lines.items():
        if count == 0:
            misses += 1
            continue
        br = branches.get(ln)
        if br is not None and br.covered < br.total:
            partials += 1
        else:
            hits += 1
    return Totals(1, len(fc.lines), hits, misses, partials)


@dataclass(slots=True)
class Report:
    """Coverage of one upload, or of a whole commit once merged."""

    files: dict[str, FileCoverage] = field(default_factory=dict)

    def merge(self, other: Report) -> None:
        """Merge ``other`` into this report, in place."""
        for path, fc in other.files.items():
            mine = self.files.get(path)
            if mine is None:
                mine = self.files[path] = FileCoverage()
            mine.merge(fc)

    def totals(self) -> Totals:
        total = Totals()
        for fc in self.files.values():
            total = total + file_totals(fc)
        return total

    def file_totals(self) -> dict[str, Totals]:
        return {path: file_totals(fc) for path, fc in sorted(self.files.items())}

    # -- serialisation: compact JSON, zlib-compressed; never pickle --------

    def to_bytes(self) -> bytes:
        files = {}
        for path, fc in self.files.items():
            flat: list[int] = []
            for ln, hits in fc.lines.items():
                flat.append(ln)
                flat.append(hits)
            branches = {
                str(ln): [
                    b.covered,
                    b.total,
                    sorted(b.covered_ids) if b.covered_ids is not None else None,
                    sorted(b.all_ids) if b.all_ids is not None else None,
                ]
                for ln, b in fc.branches.items()
            }
            files[path] = [flat, branches]
        payload = json.dumps({"v": SERIAL_VERSION, "f": files}, separators=(",", ":"))
        return zlib.compress(payload.encode(), 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> Report:
        payload = json.loads(zlib.decompress(data))
        if payload.get("v") != SERIAL_VERSION:
            raise ValueError(f"unsupported serialised report version {payload.get('v')!r}")
        report = cls()
        for path, (flat, branches) in payload["f"].items():
            it = iter(flat)
            fc = FileCoverage(lines=dict(zip(it, it, strict=True)))
            for ln, (cov, tot, cids, aids) in branches.items():
                fc.branches[int(ln)] = Branches(
                    cov,
                    tot,
                    frozenset(cids) if cids is not None else None,
                    frozenset(aids) if aids is not None else None,
                )
            report.files[path] = fc
        return report

    def to_json(self) -> dict[str, object]:
        """The report as users see it: totals and per-file totals."""
        return {
            "totals": self.totals().to_dict(),
            "files": {path: t.to_dict() for path, t in self.file_totals().items()},
        }
