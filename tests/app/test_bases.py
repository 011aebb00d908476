"""``find_base``: which commit a commit is compared with."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from app.bases import find_base
from app.db.models import Commit, CommitReport, Repository, Upload, UploadState
from tests.support.pipeline import unit_services

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    services = unit_services(tmp_path)
    with services.sessions.begin() as session:
        session.add_all([Repository(id=1, name="acme/web"), Repository(id=2, name="acme/api")])
        session.flush()
        yield session
    services.close()


def commit(
    session: Session,
    sha: str,
    minute: int,
    *,
    branch: str | None = "main",
    parent: str | None = None,
    version: int = 1,
    pending: bool = False,
    repo: int = 1,
) -> Commit:
    """A commit made ``minute`` minutes after T0, merged ``version`` times."""
    found = Commit(
        repository_id=repo,
        sha=sha * 40 if len(sha) == 1 else sha,
        branch=branch,
        parent_commit_id=parent,
        created_at=T0 + timedelta(minutes=minute),
    )
    session.add(found)
    session.flush()
    session.add(CommitReport(commit_id=found.id, version=version))
    state = UploadState.PROCESSING if pending else UploadState.MERGED
    session.add(Upload(commit_id=found.id, state=state, raw=b""))
    session.flush()
    return found


def test_the_base_is_the_parent_an_upload_named_settled_or_not(session: Session) -> None:
    parent = commit(session, "p", 0, branch="feature", pending=True, version=0)
    commit(session, "m", 1)
    head = commit(session, "h", 2, parent=parent.sha)
    assert find_base(session, head) is parent


def test_an_unknown_parent_falls_back_to_the_previous_settled_commit_of_the_branch(
    session: Session,
) -> None:
    previous = commit(session, "a", 0)
    head = commit(session, "h", 1, parent="f" * 40)
    assert find_base(session, head) is previous


def test_the_previous_commit_skips_unsettled_later_and_other_branches_and_repositories(
    session: Session,
) -> None:
    settled = commit(session, "a", 0)
    commit(session, "b", 1, pending=True)  # an upload still in flight
    commit(session, "c", 2, version=0)  # nothing merged yet
    commit(session, "d", 3, branch="feature")
    commit(session, "e", 4, repo=2)
    head = commit(session, "h", 5)
    commit(session, "l", 6)  # made after the head
    assert find_base(session, head) is settled


def test_of_two_commits_made_at_once_the_later_one_inserted_is_the_base(session: Session) -> None:
    commit(session, "a", 0)
    second = commit(session, "b", 0)
    head = commit(session, "h", 1)
    assert find_base(session, head) is second


def test_a_commit_without_a_branch_or_a_known_parent_has_no_base(session: Session) -> None:
    commit(session, "a", 0, branch=None)
    head = commit(session, "h", 1, branch=None, parent="f" * 40)
    assert find_base(session, head) is None
    first = commit(session, "i", 2, branch="fresh")
    assert find_base(session, first) is None, "nothing before it on its branch"
