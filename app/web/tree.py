"""The commit page's file tree: coverage per directory, against the base.

A directory's totals are the sum of its files' (Codecov's file tree), its
coverage hits / lines as every total's (:class:`app.coverage.Totals`), and
its change the difference with the same directory at the base
(:func:`app.web.compare.change`); as for a file, a directory the base does
not have changes by its whole coverage, and without a base nothing is
compared. The tree is built once per (commit, base) version pair from the
per-file totals the merge stores (``ReportCache.tree``): the paths are
sorted, so each file adds to its own directory once and each directory to
its parent once, whatever the depth.

A view is one directory (``?dir=``, the root without one): its
subdirectories ``VIEW_DEPTH`` levels down, folded, its own files, and the
treemap of what it holds (``app/web/chart.py``). What one page shows is
bounded (``VIEW_ENTRIES``), whatever the size of the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import Totals
from app.db.models import Commit
from app.merge.report_summary import FileTotalsTable
from app.queries import report_version
from app.web.chart import Region
from app.web.compare import change
from app.web.render import file_url

#: Levels of subdirectories a view unfolds below its directory.
VIEW_DEPTH = 2
#: Most directories and files one view lists; the largest by lines are kept.
VIEW_ENTRIES = 400
#: Longest ``?dir=`` looked up; a longer one shows the root.
MAX_DIRECTORY_CHARS = 4096
#: Most regions of the treemap; the rest are named in the view's ``hidden``.
TREEMAP_REGIONS = 200


@dataclass(slots=True)
class _Sums:
    files: int = 0
    lines: int = 0
    hits: int = 0
    misses: int = 0
    partials: int = 0

    def add(self, other: _Sums) -> None:
        self.files += other.files
        self.lines += other.lines
        self.hits += other.hits
        self.misses += other.misses
        self.partials += other.partials

    def coverage(self) -> float | None:
        if not self.lines:
            return None
        return Totals(self.files, self.lines, self.hits, self.misses, self.partials).coverage


def _dirname(path: str) -> str:
    return path.rpartition("/")[0]


def directory_sums(table: FileTotalsTable) -> dict[str, _Sums]:
    """Totals of every directory of ``table`` (``""`` is the root)."""
    own: dict[str, _Sums] = {}
    for path, lines, hits, misses, partials in zip(
        table.paths, table.lines, table.hits, table.misses, table.partials, strict=True
    ):
        sums = own.get(_dirname(path))
        if sums is None:
            sums = own[_dirname(path)] = _Sums()
        sums.files += 1
        sums.lines += lines
        sums.hits += hits
        sums.misses += misses
        sums.partials += partials
    every: dict[str, _Sums] = {"": _Sums()}
    for directory in own:  # each directory and its ancestors exist, even without own files
        while directory not in every:
            every[directory] = _Sums()
            directory = _dirname(directory)
    # Deepest first: each directory's total is complete before it adds to its parent.
    for directory in sorted(every, key=lambda d: -d.count("/") - (d != "")):
        sums = every[directory]
        if directory in own:
            sums.add(own[directory])
        if directory:
            every[_dirname(directory)].add(sums)
    return every


@dataclass
class DirectoryTree:
    """Every directory's totals and change, its subdirectories and its files."""

    sums: dict[str, _Sums]
    changes: dict[str, float | None]
    children: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[int]] = field(default_factory=dict)
    head: FileTotalsTable = field(default_factory=lambda: FileTotalsTable([], [], [], [], []))

    @classmethod
    def build(cls, head: FileTotalsTable, base: FileTotalsTable | None) -> DirectoryTree:
        sums = directory_sums(head)
        base_sums = directory_sums(base) if base is not None else None
        changes: dict[str, float | None] = {}
        for directory, s in sums.items():
            before = base_sums.get(directory) if base_sums is not None else None
            if base_sums is None:
                changes[directory] = None
            elif before is None:  # an added directory changes as an added file does
                changes[directory] = s.coverage()
            else:
                changes[directory] = change(before.coverage(), s.coverage())
        children: dict[str, list[str]] = {}
        for directory in sorted(sums):
            if directory:
                children.setdefault(_dirname(directory), []).append(directory)
        files: dict[str, list[int]] = {}
        for i, path in enumerate(head.paths):
            files.setdefault(_dirname(path), []).append(i)
        return cls(sums, changes, children, files, head)

    def view(self, repo: str, sha: str, directory: str, args: dict[str, Any]) -> dict[str, Any]:
        """What the page shows of ``directory`` (the root if the report has no such one)."""
        if directory not in self.sums:
            directory = ""
        budget = [VIEW_ENTRIES]

        def link(target: str) -> str:
            kept = {k: v for k, v in args.items() if k not in ("dir", "page")}
            if target:
                kept["dir"] = target
            return "?" + urlencode(kept) + "#tree" if kept else "?#tree"

        def entry(d: str, depth: int) -> dict[str, Any]:
            s = self.sums[d]
            budget[0] -= 1
            node: dict[str, Any] = {
                "path": d,
                "name": d.rpartition("/")[2] or "/",
                "href": link(d),
                "files": s.files,
                "lines": s.lines,
                "hits": s.hits,
                "misses": s.misses,
                "partials": s.partials,
                "coverage": s.coverage(),
                "change": self.changes.get(d),
                "directories": [],
                "more": 0,
            }
            if depth < VIEW_DEPTH:
                subs = sorted(self.children.get(d, []), key=lambda c: (-self.sums[c].lines, c))
                for c in subs:
                    if budget[0] <= 0:
                        node["more"] += 1
                        continue
                    node["directories"].append(entry(c, depth + 1))
                node["directories"].sort(key=lambda n: n["path"])
            else:
                node["more"] = len(self.children.get(d, []))
            return node

        top = entry(directory, 0)
        head = self.head
        own = self.files.get(directory, [])
        largest = sorted(own, key=lambda i: (-head.lines[i], head.paths[i]))
        shown_files = sorted(largest[: max(0, budget[0])], key=lambda i: head.paths[i])
        top["own_files"] = [
            {
                "path": head.paths[i],
                "name": head.paths[i].rpartition("/")[2],
                "href": file_url(repo, sha, head.paths[i]),
                "lines": head.lines[i],
                "coverage": _Sums(1, head.lines[i], head.hits[i]).coverage(),
            }
            for i in shown_files
        ]
        top["own_files_more"] = len(own) - len(shown_files)
        regions = [
            Region(n["name"] + "/", n["href"], n["lines"], n["coverage"])
            for n in top["directories"]
        ] + [Region(f["name"], f["href"], f["lines"], f["coverage"]) for f in top["own_files"]]
        regions.sort(key=lambda r: (-r.lines, r.name))
        ancestors = []
        at = directory
        while at:
            ancestors.append(at)
            at = _dirname(at)
        return {
            "directory": directory,
            "up": [
                {"name": d.rpartition("/")[2] or "/", "href": link(d)} for d in reversed(ancestors)
            ],
            "root_href": link(""),
            "node": top,
            "regions": [
                {"name": r.name, "href": r.href, "lines": r.lines, "coverage": r.coverage}
                for r in regions[:TREEMAP_REGIONS]
            ],
            "hidden_regions": max(0, len(regions) - TREEMAP_REGIONS),
        }


class TreeSource(Protocol):
    """Where trees are built and kept (``app.web.reports.ReportCache.tree``)."""

    def tree(
        self, session: Session, commit_id: int, version: int, base_id: int | None, base_version: int
    ) -> DirectoryTree: ...


def commit_tree(
    session: Session, cache: TreeSource, commit: Commit, data: dict[str, Any], args: dict[str, Any]
) -> dict[str, Any]:
    """The commit page's view of its tree (``?dir=``), against the base its
    ``data`` (``queries.commit_page``) was compared with."""
    base_sha = data["base"]["commit"]
    base_id, base_version = None, 0
    if base_sha is not None:
        base_id = session.scalar(
            sa.select(Commit.id).where(
                Commit.repository_id == commit.repository_id, Commit.sha == base_sha
            )
        )
        base_version = report_version(session, base_id) if base_id is not None else 0
    built = cache.tree(session, commit.id, data["report_version"], base_id, base_version)
    directory = str(args.get("dir", ""))[:MAX_DIRECTORY_CHARS]
    return built.view(data["repository"], commit.sha, directory, args)
