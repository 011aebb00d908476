"""Fixing report paths with the repository's file list (the uploader's "network").

Reports name files in ways the repository does not: an absolute path on the
CI runner (``/home/runner/work/app/app/src/a.py``), a JaCoCo
package-relative one (``com/acme/Foo.java`` for
``src/main/java/com/acme/Foo.java``), a path under a Cobertura ``<source>``
the runner had. The uploaders send ``git ls-files`` along; a report path
that is not in it is resolved to the one listed file that shares its
longest ending (whole path segments). A path whose longest shared ending
belongs to several listed files is ambiguous, and one sharing none is
unknown: both are kept as they are, and reported as warnings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from app.coverage.model import Report
from app.coverage.paths import clean

#: Most warnings kept per upload (the count is always exact).
MAX_WARNINGS = 50


@dataclass
class Resolution:
    renamed: dict[str, str] = field(default_factory=dict)
    ambiguous: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        notes = [f"ambiguous path kept as is: {p}" for p in self.ambiguous]
        notes += [f"path not in the repository's file list, kept as is: {p}" for p in self.unknown]
        extra = len(notes) - MAX_WARNINGS
        return notes[:MAX_WARNINGS] + ([f"... and {extra} more"] if extra > 0 else [])


class NetworkPaths:
    """Resolves report paths against a repository's file list."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = {c for c in (clean(f).lstrip("/") for f in files) if c}
        #: every ending (whole segments) of every listed file -> the files with it
        self._endings: dict[str, list[str]] = {}
        for path in self.files:
            segments = path.split("/")
            for k in range(len(segments)):
                self._endings.setdefault("/".join(segments[k:]), []).append(path)

    def resolve(self, path: str) -> tuple[str, str]:
        """``(path, how)``: how is ``listed``, ``resolved``, ``ambiguous`` or ``unknown``."""
        cleaned = clean(path).lstrip("/")
        if cleaned in self.files:
            return cleaned, "listed"
        segments = cleaned.split("/")
        for k in range(len(segments)):  # longest ending first
            candidates = self._endings.get("/".join(segments[k:]))
            if candidates:
                if len(candidates) == 1:
                    return candidates[0], "resolved"
                return path, "ambiguous"
        return path, "unknown"

    def apply(self, report: Report) -> Resolution:
        """Rename the report's files in place (two that resolve alike merge)."""
        result = Resolution()
        files = report.files
        moves = []
        for path in files:
            target, how = self.resolve(path)
            if how == "ambiguous":
                result.ambiguous.append(path)
            elif how == "unknown":
                result.unknown.append(path)
            elif target != path:
                moves.append((path, target))
        for path, target in moves:
            result.renamed[path] = target
            coverage = files.pop(path)
            existing = files.get(target)
            if existing is None:
                files[target] = coverage
            else:
                existing.merge(coverage)
        return result
