"""Which commit a commit is compared with: one rule for the pages, the
merge's stored comparison, the notification and pull-request feedback.

It sits below ``app/web`` and ``app/pipeline`` so that both import it and
neither imports the other for it.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import PENDING_STATES, Commit, CommitReport, Upload


def settled(session: Session) -> Any:
    """A where-clause: the commit has a merged report and nothing pending."""
    pending = sa.exists().where(Upload.commit_id == Commit.id, Upload.state.in_(PENDING_STATES))
    return sa.and_(CommitReport.version > 0, ~pending)


def find_base(session: Session, commit: Commit) -> Commit | None:
    """The commit to compare ``commit`` with: the parent an upload named, if
    covworker has it; else the previous settled commit of the same branch."""
    parent = commit.parent_commit_id
    if parent:
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
