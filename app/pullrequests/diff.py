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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ADDED, MODIFIED, REMOVED, RENAMED = "added", "modified", "removed", "renamed"

#: GitHub's compare lists at most this many files.
GITHUB_COMPARE_FILE_LIMIT = 300


@dataclass(frozen=True, slots=True)
class Hunk:
    """``@@ -base_start,base_length +head_start,head_length @@``."""

    base_start: int
    base_length: int
    head_start: int
    head_length: int


@dataclass(slots=True)
class FileDiff:
    path: str  # head path (the base path for a removed file)
    status: str  # added | modified | removed | renamed
    previous_path: str | None = None  # renamed: the base path
    added: list[int] = field(default_factory=list)  # head line numbers, ascending
    removed: list[int] = field(default_factory=list)  # base line numbers, ascending
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False

    @property
    def base_path(self) -> str:
        return self.previous_path or self.path

    def head_line(self, base_line: int) -> int | None:
        """Where ``base_line`` of the base is in the head; None if the diff removed it."""
        raise NotImplementedError


@dataclass(slots=True)
class Diff:
    files: dict[str, FileDiff] = field(default_factory=dict)  # by head path
    #: Paths the provider named without a patch (too large, binary, ...).
    omitted: list[str] = field(default_factory=list)
    #: The provider's file list may be cut short (GitHub lists 300 files).
    truncated: bool = False

    def by_base_path(self) -> dict[str, FileDiff]:
        raise NotImplementedError


def parse_unified_diff(text: str) -> Diff:
    """``git diff`` (or any unified diff with ``diff --git`` / ``---``/``+++`` headers)."""
    raise NotImplementedError


def parse_patch(path: str, status: str, patch: str, previous_path: str | None = None) -> FileDiff:
    """One file's hunks (a GitHub ``patch`` or a GitLab ``diff``: no file headers)."""
    raise NotImplementedError


def from_github_compare(payload: Mapping[str, Any]) -> Diff:
    """``GET /repos/{o}/{r}/compare/{base}...{head}`` → Diff."""
    raise NotImplementedError


def from_gitlab_compare(payload: Mapping[str, Any]) -> Diff:
    """``GET /projects/{id}/repository/compare?from=&to=`` → Diff."""
    raise NotImplementedError
