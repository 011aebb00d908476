"""Which commit a commit is compared with: one rule for the pages, the
commits list, the JSON API, the badge's comparison, the CLI, the webhook and
pull-request feedback.

Codecov's rule, in order:

1. the commit belongs to a pull request covworker has read from the provider
   (a ``pulls`` row whose number the upload gave with ``-P``, or whose head
   is this commit): the pull request's base commit if it has a settled
   report, else the newest settled commit of the pull request's base branch
   uploaded no later than this commit;
2. else the parent an upload named (``--parent-sha``), if covworker has it;
3. else the previous settled commit of the same branch.

It sits below ``app/web`` and ``app/pipeline`` so that both import it and
neither imports the other for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, CommitReport, Pull, Repository, upload_pending, utcnow

#: Branches taken as the default when a repository names none.
USUAL_DEFAULT_BRANCHES = ("main", "master")


def default_branch(session: Session, repository_id: int) -> str | None:
    """The repository's default branch (named by a person or the provider);
    else ``main`` or ``master`` if it has commits on one; else None."""
    named = session.scalar(
        sa.select(Repository.default_branch).where(Repository.id == repository_id)
    )
    if named:
        return named
    found = set(
        session.scalars(
            sa.select(Commit.branch)
            .where(
                Commit.repository_id == repository_id,
                Commit.branch.in_(USUAL_DEFAULT_BRANCHES),
            )
            .distinct()
        )
    )
    return next((b for b in USUAL_DEFAULT_BRANCHES if b in found), None)


def settled(session: Session) -> Any:
    """A where-clause: the commit has a merged report and nothing pending."""
    return sa.and_(CommitReport.version > 0, ~upload_pending(Commit.id))


def pull_of(session: Session, commit: Commit) -> Pull | None:
    """The pull request ``commit`` belongs to, as last read from the provider:
    the one its uploads named (``-P``), else one whose head it is."""
    return pulls_of(session, [commit])[0]


def pulls_of(session: Session, commits: Sequence[Commit]) -> list[Pull | None]:
    """:func:`pull_of` of each of ``commits`` (of one repository), read in one
    query: a pull request by the number an upload named, else the one last
    updated of those whose head the commit is."""
    if not commits:
        return []
    numbers = {c.pullid for c in commits if c.pullid is not None}
    shas = {c.sha for c in commits}
    by_number: dict[int, Pull] = {}
    by_head: dict[str, Pull] = {}
    for found in session.scalars(
        sa.select(Pull)
        .where(
            Pull.repository_id == commits[0].repository_id,
            sa.or_(Pull.number.in_(sorted(numbers)), Pull.head_sha.in_(sorted(shas))),
        )
        .order_by(Pull.updated_at.desc(), Pull.id.desc())
    ):
        by_number.setdefault(found.number, found)  # (repository, number) is unique
        if found.head_sha is not None:
            by_head.setdefault(found.head_sha, found)  # the newest update first
    return [
        (by_number.get(c.pullid) if c.pullid is not None else None) or by_head.get(c.sha)
        for c in commits
    ]


def find_base(session: Session, commit: Commit, pull: Pull | None = None) -> Commit | None:
    """The commit to compare ``commit`` with (the module's rule).

    ``pull`` is the commit's pull request when the caller has just read it;
    else the stored one is looked up."""
    pull = pull if pull is not None else pull_of(session, commit)
    if pull is not None:
        return _pull_base(session, commit, pull)
    return _branch_base(session, commit)


def find_bases(session: Session, commits: Sequence[Commit]) -> list[Commit | None]:
    """:func:`find_base` of each of ``commits`` (of one repository): what a
    list of commits shows. Their pull requests and the parents they name are
    read in one query each, not one a commit; the rest as ``find_base``."""
    if not commits:
        return []
    named = {c.parent_commit_id for c in commits if c.parent_commit_id}
    parents = (
        {
            found.sha: found
            for found in session.scalars(
                sa.select(Commit).where(
                    Commit.repository_id == commits[0].repository_id, Commit.sha.in_(sorted(named))
                )
            )
        }
        if named
        else {}
    )
    return [
        _pull_base(session, commit, pull) if pull is not None
        else _branch_base(session, commit, parents)
        for commit, pull in zip(commits, pulls_of(session, commits), strict=True)
    ]  # fmt: skip


def _branch_base(
    session: Session, commit: Commit, parents: Mapping[str, Commit] | None = None
) -> Commit | None:
    """Rules 2 and 3: the parent an upload named, else the previous settled
    commit of the branch. ``parents``: the commits of the repository the
    caller read by SHA (each named parent covworker has), else looked up."""
    parent = commit.parent_commit_id
    if parent:
        if parents is not None:
            found = parents.get(parent)
        else:
            found = session.scalar(
                sa.select(Commit).where(
                    Commit.repository_id == commit.repository_id, Commit.sha == parent
                )
            )
        if found is not None:
            return found
    if not commit.branch:
        return None
    return session.scalar(
        sa.select(Commit)
        .join(CommitReport, CommitReport.commit_id == Commit.id)
        .where(
            Commit.repository_id == commit.repository_id,
            Commit.branch == commit.branch,
            Commit.id != commit.id,
            Commit.created_at < commit.created_at,
            settled(session),
        )
        .order_by(Commit.created_at.desc(), Commit.id.desc())
        .limit(1)
    )


def _pull_base(session: Session, commit: Commit, pull: Pull) -> Commit | None:
    """Codecov's base of a pull request's commit: the pull's base commit if
    settled, else the base branch's newest settled commit uploaded before."""
    candidates = (
        sa.select(Commit)
        .join(CommitReport, CommitReport.commit_id == Commit.id)
        .where(Commit.repository_id == commit.repository_id, settled(session))
    )
    if pull.base_sha:
        found = session.scalar(candidates.where(Commit.sha == pull.base_sha))
        if found is not None:
            return found
    if not pull.base_branch:
        return None
    return session.scalar(
        candidates.where(
            Commit.branch == pull.base_branch,
            Commit.id != commit.id,
            Commit.created_at <= commit.created_at,
        )
        .order_by(Commit.created_at.desc(), Commit.id.desc())
        .limit(1)
    )


def remember_pull(
    session: Session,
    repository_id: int,
    *,
    number: int,
    state: str,
    title: str,
    url: str,
    base_branch: str,
    base_sha: str | None,
    head_branch: str,
    head_sha: str | None,
) -> Pull:
    """Store the pull request as the provider just described it (insert or
    update by number); the caller commits."""
    row = session.scalar(
        sa.select(Pull)
        .where(Pull.repository_id == repository_id, Pull.number == number)
        .with_for_update()
    )
    if row is None:
        row = Pull(repository_id=repository_id, number=number)
        session.add(row)
    row.state = state[:16]
    row.title = title[:1024]
    row.url = url[:2048]
    row.base_branch = base_branch[:255]
    row.base_sha = base_sha[:64] if base_sha else None
    row.head_branch = head_branch[:255]
    row.head_sha = head_sha[:64] if head_sha else None
    row.updated_at = utcnow()
    session.flush()
    return row
