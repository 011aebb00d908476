"""Source paths as one repository-relative POSIX form.

Two CI jobs, or two formats, name the same file differently: ``./src/a.py``,
``src\\a.py``, ``/home/runner/work/r/r/src/a.py`` under a Cobertura source
root. They must merge into one entry, so every parser passes its paths
through :class:`PathNormaliser`. Paths are only ever strings here: nothing
in a report is used to touch the filesystem.
"""

from __future__ import annotations

from collections.abc import Iterable

_DRIVE = tuple(f"{c}:/" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def is_absolute(path: str) -> bool:
    return path.startswith("/") or path.startswith(_DRIVE)


def clean(path: str) -> str:
    """Backslashes to slashes, no ``.`` / empty segments, every ``..`` folded.

    A ``..`` folds into the segment before it; one with nothing before it
    (``../src/a.py``, ``/../etc``) is dropped, as Codecov strips a path's
    leading ``../`` and a filesystem's root is its own parent. So a cleaned
    path never climbs: it names a file inside the repository, whatever the
    report says (``../../../victim/private/a.py`` -> ``victim/private/a.py``).
    """
    path = path.strip().replace("\\", "/")
    if path.startswith("file://"):
        path = path[7:]
    absolute = is_absolute(path)
    drive = path.startswith(_DRIVE)
    root = 1 if drive else 0  # a drive (``C:``) is a root: nothing folds into it
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if len(parts) > root:
                parts.pop()
            continue
        parts.append(seg)
    joined = "/".join(parts)
    if absolute and not drive:
        return "/" + joined
    return joined


class PathNormaliser:
    """Turns report paths into repository-relative POSIX paths.

    ``roots`` are absolute directories known to be the repository root (the
    caller's, e.g. the CI checkout) or source roots given by the report
    (Cobertura ``<sources>``). An absolute path under a root loses the root;
    an absolute path under none is kept as it is (cleaned), since without
    the checkout directory nothing better can be known.
    """

    def __init__(self, roots: Iterable[str] = ()) -> None:
        cleaned = {clean(r) for r in roots if r and r.strip()}
        # longest first, so a nested root wins over its parent
        self.roots = sorted((r for r in cleaned if is_absolute(r)), key=len, reverse=True)
        self._cache: dict[str, str] = {}

    def add_root(self, root: str) -> None:
        root = clean(root)
        if is_absolute(root) and root not in self.roots:
            self.roots.append(root)
            self.roots.sort(key=len, reverse=True)
            self._cache.clear()

    def relative_to_root(self, path: str) -> str | None:
        """``path`` (cleaned, absolute) relative to the longest matching root, if any."""
        for root in self.roots:
            if path == root:
                return ""
            prefix = root if root.endswith("/") else root + "/"
            if path.startswith(prefix):
                return path[len(prefix) :]
        return None

    def __call__(self, path: str) -> str:
        cached = self._cache.get(path)
        if cached is not None:
            return cached
        result = clean(path)
        if is_absolute(result):
            rel = self.relative_to_root(result)
            if rel:
                result = rel
        self._cache[path] = result
        return result


def join(prefix: str, path: str) -> str:
    return clean(f"{prefix}/{path}") if prefix else clean(path)


def place_under_checkout(path: str, bases: tuple[str, ...], checkout: str) -> str:
    """Where ``path`` lies without a file list, given the directories it may
    lie under (Cobertura's ``<source>``s) and the checkout (the coverage
    file's directory, absolute): when exactly one of ``bases`` is the
    checkout or below it, ``path`` joined with that base's place below the
    checkout (``/ck`` + ``/ck/toolz`` + ``__init__.py`` ->
    ``toolz/__init__.py``); else ``path`` as written, as nothing tells which
    base holds it."""
    checkout = clean(checkout)
    if not bases or not is_absolute(checkout) or is_absolute(clean(path)):
        return path
    placed = PathNormaliser([checkout])
    under = [
        rel for rel in (placed.relative_to_root(clean(base)) for base in bases) if rel is not None
    ]
    return join(under[0], path) if len(under) == 1 else path
