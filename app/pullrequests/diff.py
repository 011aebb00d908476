"""Unified diffs as the comparison needs them.

A :class:`Diff` says, per file of the head, its status, its previous path,
the lines it added (head numbering) and removed (base numbering), and maps
a base line to its head line (the shift the hunks make), for indirect
changes. It is read from GitHub's compare (``files[].patch``), GitLab's
(``diffs[].diff``) or plain ``git diff`` text. Files a provider lists
without a patch (too large, binary, or beyond its file limit) are kept in
``omitted``: the comparison reports them as not measured.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

ADDED, MODIFIED, REMOVED, RENAMED = "added", "modified", "removed", "renamed"

#: GitHub's compare lists at most this many files.
GITHUB_COMPARE_FILE_LIMIT = 300

#: A base line number to its head line number (None: the diff removed it).
ShiftLine = Callable[[int], int | None]


@dataclass(frozen=True, slots=True)
class Hunk:
    """``@@ -base_start,base_length +head_start,head_length @@``."""

    base_start: int
    base_length: int
    head_start: int
    head_length: int

    @property
    def base_end(self) -> int:
        """The last base line the hunk spans (for an insertion: the line it follows)."""
        return self.base_start + self.base_length - 1 if self.base_length else self.base_start


@dataclass(slots=True)
class FileDiff:
    path: str  # head path (the base path for a removed file)
    status: str  # added | modified | removed | renamed
    previous_path: str | None = None  # renamed: the base path
    added: list[int] = field(default_factory=list)  # head line numbers, ascending
    removed: list[int] = field(default_factory=list)  # base line numbers, ascending
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False
    #: Base line -> head line of the context lines inside hunks.
    context: dict[int, int] = field(default_factory=dict)

    @property
    def base_path(self) -> str:
        return self.previous_path or self.path

    def head_line(self, base_line: int) -> int | None:
        """Where ``base_line`` of the base is in the head; None if the diff removed it."""
        return self.shifter()(base_line)

    def shifter(self) -> ShiftLine:
        """``head_line`` for many lines: the hunk table built once."""
        if self.status == REMOVED:
            return _gone
        if not self.hunks:
            return _same
        hunks = sorted(self.hunks, key=lambda h: h.base_start)
        ends = [h.base_end for h in hunks]
        offsets, total = [], 0
        for h in hunks:
            total += h.head_length - h.base_length
            offsets.append(total)
        removed = set(self.removed)
        context = self.context

        def shift(base_line: int) -> int | None:
            if base_line in removed:
                return None
            inside = context.get(base_line)
            if inside is not None:
                return inside
            # Hunks ending before the line shift it by their net growth.
            i = bisect_left(ends, base_line)
            return base_line + (offsets[i - 1] if i else 0)

        return shift


def _gone(base_line: int) -> int | None:
    return None


def _same(base_line: int) -> int | None:
    return base_line


@dataclass(slots=True)
class Diff:
    files: dict[str, FileDiff] = field(default_factory=dict)  # by head path
    #: Paths the provider named without a patch (too large, binary, ...).
    omitted: list[str] = field(default_factory=list)
    #: The provider's file list may be cut short (GitHub lists 300 files).
    truncated: bool = False

    def by_base_path(self) -> dict[str, FileDiff]:
        return {f.base_path: f for f in self.files.values() if f.status != ADDED}


class DiffError(ValueError):
    """A diff that cannot be read (a hunk header or count that does not add up)."""


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _hunks_into(
    fd: FileDiff, lines: Iterator[str] | list[str], first: str | None = None
) -> str | None:
    """Read hunks into ``fd`` until a line that is not part of one; return that line."""
    it = iter(lines)
    line = first if first is not None else next(it, None)
    added, removed, context = fd.added, fd.removed, fd.context
    while line is not None:
        m = _HUNK.match(line)
        if not m:
            return line
        b_start, b_len = int(m[1]), int(m[2]) if m[2] is not None else 1
        h_start, h_len = int(m[3]), int(m[4]) if m[4] is not None else 1
        fd.hunks.append(Hunk(b_start, b_len, h_start, h_len))
        b, h = b_start, h_start
        b_left, h_left = b_len, h_len
        while b_left > 0 or h_left > 0:
            line = next(it, None)
            if line is None:
                raise DiffError(f"{fd.path}: the hunk at -{b_start} +{h_start} ends early")
            tag = line[:1]
            if tag == "+":
                added.append(h)
                h += 1
                h_left -= 1
            elif tag == "-":
                removed.append(b)
                b += 1
                b_left -= 1
            elif tag == " " or line == "":
                context[b] = h
                b += 1
                h += 1
                b_left -= 1
                h_left -= 1
            elif tag == "\\":  # "\ No newline at end of file"
                continue
            else:
                raise DiffError(f"{fd.path}: unexpected line in a hunk: {line[:80]!r}")
            if b_left < 0 or h_left < 0:
                raise DiffError(f"{fd.path}: the hunk at -{b_start} +{h_start} overruns its counts")
        line = next(it, None)
        while line is not None and line.startswith("\\"):
            line = next(it, None)
    return None


def parse_patch(path: str, status: str, patch: str, previous_path: str | None = None) -> FileDiff:
    """One file's hunks (a GitHub ``patch`` or a GitLab ``diff``: no file headers)."""
    fd = FileDiff(path=path, status=status, previous_path=previous_path)
    rest = _hunks_into(fd, patch.split("\n"))
    if rest not in (None, ""):
        raise DiffError(f"{path}: expected a hunk header, found {rest[:80]!r}")
    return fd


_ESCAPES = {
    "n": "\n",
    "t": "\t",
    '"': '"',
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "r": "\r",
    "v": "\v",
}


def _unquote(name: str) -> str:
    """Git's C-quoted path (``"a/caf\\303\\251.py"``) as text."""
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    raw, out, i = name[1:-1], bytearray(), 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt in "01234567" and i + 3 < len(raw) + 1:
                out.append(int(raw[i + 1 : i + 4], 8))
                i += 4
                continue
            out.extend(_ESCAPES.get(nxt, nxt).encode())
            i += 2
            continue
        out.extend(c.encode())
        i += 1
    return out.decode("utf-8", "replace")


def _strip_prefix(name: str) -> str | None:
    name = _unquote(name.split("\t", 1)[0] if not name.startswith('"') else name)
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name


def _git_header_paths(rest: str) -> tuple[str, str]:
    """``a/x b/y`` of ``diff --git``: quoted, or split where both halves agree."""
    if rest.startswith('"'):
        end = rest.index('"', 1)
        while rest[end - 1] == "\\":
            end = rest.index('"', end + 1)
        a, b = rest[: end + 1], rest[end + 2 :]
        return _unquote(a)[2:], _unquote(b)[2:]
    half = (len(rest) - 1) // 2
    if rest[half] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
        return rest[2:half], rest[half + 3 :]
    a, _, b = rest.partition(" b/")
    return a[2:], b


def parse_unified_diff(text: str) -> Diff:
    """``git diff`` (or any unified diff with ``diff --git`` / ``---``/``+++`` headers)."""
    diff = Diff()
    lines = iter(text.split("\n"))
    line = next(lines, None)
    while line is not None:
        if not (line.startswith("diff --git ") or line.startswith("--- ")):
            line = next(lines, None)
            continue
        old: str | None
        new: str | None
        old = new = None
        status = MODIFIED
        binary = False
        if line.startswith("diff --git "):
            old, new = _git_header_paths(line[len("diff --git ") :])
            line = next(lines, None)
            while line is not None and not line.startswith(("--- ", "@@", "diff --git ")):
                if line.startswith("new file mode"):
                    status = ADDED
                elif line.startswith("deleted file mode"):
                    status = REMOVED
                elif line.startswith("rename from "):
                    old = _unquote(line[len("rename from ") :])
                elif line.startswith("rename to "):
                    new = _unquote(line[len("rename to ") :])
                elif line.startswith("Binary files ") or line == "GIT binary patch":
                    binary = True
                line = next(lines, None)
        if line is not None and line.startswith("--- "):
            old_name = _strip_prefix(line[4:])
            line = next(lines, None)
            if line is None or not line.startswith("+++ "):
                raise DiffError(f"'--- {old_name}' is not followed by '+++'")
            new_name = _strip_prefix(line[4:])
            if old_name is None:
                status = ADDED
            elif new_name is None:
                status = REMOVED
            old = old_name if old_name is not None else old
            new = new_name if new_name is not None else new
            line = next(lines, None)
        path = new if status != REMOVED else old
        if path is None:
            path = old or new or ""
        previous = old if status in (MODIFIED, RENAMED) and old and old != path else None
        if previous is not None:
            status = RENAMED
        fd = FileDiff(path=path, status=status, previous_path=previous, binary=binary)
        line = _hunks_into(fd, lines, line)
        diff.files[path] = fd
    return diff


def _github_status(status: str) -> str | None:
    return {
        "added": ADDED,
        "removed": REMOVED,
        "modified": MODIFIED,
        "changed": MODIFIED,
        "renamed": RENAMED,
        "copied": ADDED,
    }.get(status)


def from_github_compare(payload: Mapping[str, Any]) -> Diff:
    """``GET /repos/{o}/{r}/compare/{base}...{head}`` → Diff.

    A file listed without ``patch`` although it changed lines (too large) is
    ``omitted``; a list of :data:`GITHUB_COMPARE_FILE_LIMIT` files may be cut.
    """
    diff = Diff()
    files = payload.get("files") or []
    diff.truncated = len(files) >= GITHUB_COMPARE_FILE_LIMIT
    for entry in files:
        status = _github_status(str(entry.get("status", "")))
        path = entry.get("filename")
        if status is None or not isinstance(path, str):
            continue
        previous = entry.get("previous_filename") if status == RENAMED else None
        patch = entry.get("patch")
        if patch is None:
            changed = int(entry.get("additions") or 0) + int(entry.get("deletions") or 0)
            if changed and status != REMOVED:
                diff.omitted.append(path)
                continue
            diff.files[path] = FileDiff(path=path, status=status, previous_path=previous)
            continue
        diff.files[path] = parse_patch(path, status, patch, previous)
    return diff


def from_gitlab_compare(payload: Mapping[str, Any]) -> Diff:
    """``GET /projects/{id}/repository/compare?from=&to=`` → Diff.

    An entry GitLab marks ``too_large`` or ``collapsed`` (its ``diff`` empty)
    is ``omitted``.
    """
    diff = Diff()
    for entry in payload.get("diffs") or []:
        new_path, old_path = entry.get("new_path"), entry.get("old_path")
        if entry.get("deleted_file"):
            status, path = REMOVED, old_path
        elif entry.get("new_file"):
            status, path = ADDED, new_path
        elif entry.get("renamed_file"):
            status, path = RENAMED, new_path
        else:
            status, path = MODIFIED, new_path
        if not isinstance(path, str):
            continue
        text = entry.get("diff") or ""
        if not text and (entry.get("too_large") or entry.get("collapsed")):
            if status != REMOVED:
                diff.omitted.append(path)
            continue
        if text.startswith("Binary files"):
            diff.files[path] = FileDiff(path=path, status=status, binary=True)
            continue
        previous = old_path if status == RENAMED else None
        diff.files[path] = parse_patch(path, status, text, previous)
    return diff
