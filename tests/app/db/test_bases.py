"""``find_base``: which commit a commit is compared with."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.bases import find_base, find_bases, pull_of, remember_pull
from app.db.models import Commit, CommitReport, Pull, Repository, Upload, UploadState
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


def pull(session: Session, number: int = 7, **fields: object) -> None:
    values: dict[str, object] = {
        "number": number,
        "state": "open",
        "title": "a feature",
        "url": f"https://github.com/acme/web/pull/{number}",
        "base_branch": "main",
        "base_sha": None,
        "head_branch": "feature",
        "head_sha": None,
    }
    values.update(fields)
    remember_pull(session, 1, **values)  # type: ignore[arg-type]


def test_a_commit_uploaded_with_a_pull_number_and_no_parent_is_compared_with_the_pulls_base(
    session: Session,
) -> None:
    # As the Codecov Action uploads: -B feature -P 7, no parent SHA.
    base = commit(session, "b", 0)
    commit(session, "f", 1, branch="feature")  # the pull request's previous push
    head = commit(session, "h", 2, branch="feature")
    head.pullid = 7
    pull(session, base_sha=base.sha, head_sha=head.sha)
    assert find_base(session, head) is base


def test_a_pulls_unsettled_base_commit_falls_back_to_the_base_branchs_newest_settled_commit(
    session: Session,
) -> None:
    older = commit(session, "a", 0)
    unsettled = commit(session, "b", 1, pending=True)
    head = commit(session, "h", 2, branch="feature")
    pull(session, base_sha=unsettled.sha, head_sha=head.sha)  # found by its head
    assert find_base(session, head) is older


def test_the_bases_of_many_commits_found_together_are_each_ones_base(session: Session) -> None:
    """``find_bases`` (a list of commits) reads the pull requests and the parents
    at once; each answer is ``find_base``'s, whichever rule gives it."""
    main = commit(session, "a", 0)
    named = commit(session, "b", 1, parent=main.sha)  # the parent an upload named
    unknown_parent = commit(session, "c", 2, parent="f" * 40)  # the branch's previous
    by_number = commit(session, "d", 3, branch="feature")
    by_number.pullid = 7
    pull(session, 7, base_sha=main.sha)
    by_head = commit(session, "e", 4, branch="other")
    pull(session, 8, base_branch="main", head_sha=by_head.sha)
    branchless = commit(session, "9", 5, branch=None)
    commit(session, "8", 6, repo=2)
    listed = [named, unknown_parent, by_number, by_head, branchless, main]

    found = find_bases(session, listed)

    assert found == [find_base(session, c) for c in listed]
    assert found == [main, named, main, unknown_parent, None, None]
    pulls = [pull_of(session, c) for c in listed]
    assert [p.number if p is not None else None for p in pulls] == [None, None, 7, 8, None, None]
    assert find_bases(session, []) == []


def test_a_remembered_pull_is_updated_in_place(session: Session) -> None:
    pull(session, head_sha="a" * 40)
    pull(session, head_sha="b" * 40, base_branch="develop")
    rows = session.scalars(sa.select(Pull)).all()
    assert [(r.number, r.head_sha, r.base_branch) for r in rows] == [(7, "b" * 40, "develop")]
