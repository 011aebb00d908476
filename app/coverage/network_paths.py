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

A relative path found neither way is then tried, as Codecov's path fixer
does, joined with the coverage file's directory (when the uploader names
the file by where it was) and then with each directory the report says it
may lie under (Cobertura's ``<source>``s, in the report's order): the first
joined path the list places wins (:meth:`NetworkPaths.place`). coverage.py
with ``source = ["toolz"]`` writes ``filename="__init__.py"`` under
``<source>/ck/toolz</source>``: ``__init__.py`` alone matches every
``__init__.py`` of the list, ``/ck/toolz/__init__.py`` only
``toolz/__init__.py``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.coverage.model import Report
from app.coverage.paths import clean, is_absolute, join

#: How :meth:`NetworkPaths.resolve` says it found a path in the list.
FOUND = ("listed", "resolved")
#: Most warnings kept per upload (the count is always exact).
MAX_WARNINGS = 50
#: Sorts after any character a path can hold: every key starting with a
#: prefix sorts before ``prefix + _AFTER_EVERY_CHARACTER``.
_AFTER_EVERY_CHARACTER = "\U0010ffff"


def _reverse(path: str) -> str:
    """``a/b/c.py`` -> ``c.py/b/a/``: a shared ending is then a shared prefix."""
    return "".join(f"{segment}/" for segment in reversed(path.split("/")))


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share: a bisection over
    slice comparisons, each done in C, so long paths cost no Python loop."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


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
    """Resolves report paths against a repository's file list.

    Costs are linear in the size of the list: each listed file is kept once,
    as its segments in reverse order (``c.py/b/a/``), in one sorted list. The
    listed files sharing the longest ending with a path are then one
    contiguous run of that list, next to where the reversed path would sort:
    found by bisection and a few string comparisons, never by building every
    ending of every path (which costs the square of a path's length).
    """

    def __init__(self, files: Iterable[str]) -> None:
        self.files = {c for c in (clean(f).lstrip("/") for f in files) if c}
        #: (reversed path with a "/" after every segment, the listed file), sorted
        self._reversed = sorted((_reverse(path), path) for path in self.files)
        self._keys = [key for key, _ in self._reversed]

    def resolve(self, path: str) -> tuple[str, str]:
        """``(path, how)``: how is ``listed``, ``resolved``, ``ambiguous`` or ``unknown``."""
        cleaned = clean(path).lstrip("/")
        if cleaned in self.files:
            return cleaned, "listed"
        key = _reverse(cleaned)
        keys = self._keys
        at = bisect.bisect_left(keys, key)
        # The longest shared ending is shared with a neighbour in sort order.
        shared = max(
            (_common_prefix(key, keys[i]) for i in (at - 1, at) if 0 <= i < len(keys)),
            default=0,
        )
        ending = key[: key.rfind("/", 0, shared) + 1]  # whole segments only
        if not ending:
            return path, "unknown"
        first = bisect.bisect_left(keys, ending, hi=at)
        last = bisect.bisect_right(keys, ending + _AFTER_EVERY_CHARACTER, lo=at)
        if last - first == 1:
            return self._reversed[first][1], "resolved"
        return path, "ambiguous"

    def place(self, path: str, bases: tuple[str, ...] = (), origin: str = "") -> tuple[str, str]:
        """:meth:`resolve`, then for a relative path not found: joined with
        ``origin`` (the coverage file's directory), then with each of
        ``bases`` in turn; the first found wins (module docstring)."""
        target, how = self.resolve(path)
        if how in FOUND or is_absolute(clean(path)):
            return target, how
        for base in (origin, *bases) if origin else bases:
            joined, joined_how = self.resolve(join(base, path))
            if joined_how in FOUND:
                return joined, "resolved"
        return target, how

    def resolve_into(self, path: str, result: Resolution) -> str:
        """The path ``path`` is to be known by, noted in ``result`` (renamed,
        ambiguous or unknown; a listed path is not noted)."""
        target, how = self.resolve(path)
        if how == "ambiguous":
            result.ambiguous.append(path)
        elif how == "unknown":
            result.unknown.append(path)
        elif target != path:
            result.renamed[path] = target
        return target

    def apply(self, report: Report) -> Resolution:
        """Rename the report's files in place (two that resolve alike merge)."""
        result = Resolution()
        files = report.files
        moves = [(path, self.resolve_into(path, result)) for path in list(files)]
        for path, target in moves:
            if target == path:
                continue
            coverage = files.pop(path)
            existing = files.get(target)
            if existing is None:
                files[target] = coverage
            else:
                existing.merge(coverage)
        return result
