"""What the pages show, read from the database (app/web/queries.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import sqlalchemy as sa

from app.db.models import Commit, CommitReport, Repository, UploadState
from app.runtime.services import Services
from app.web.queries import (
    _state,
    coverage_of,
    default_branch,
    find_commit,
    find_repository,
    repositories,
    repository_commits,
)
from app.web.reports import ReportCache


def add(services: Services, name: str, shas: dict[str, str | None], **repo: object) -> int:
    """A repository with commits (sha -> branch); its id."""
    with services.sessions.begin() as session:
        found = Repository(name=name, **repo)
        session.add(found)
        session.flush()
        session.add_all(Commit(repository_id=found.id, sha=s, branch=b) for s, b in shas.items())
        return found.id


def test_a_repository_is_found_whatever_the_case_of_its_name(services: Services) -> None:
    add(services, "acme/web", {})
    with services.sessions() as session:
        found = find_repository(session, "ACME/Web")
        assert found is not None and found.name == "acme/web"
        assert find_repository(session, "acme/other") is None


def test_the_default_branch_is_the_named_one_else_main_else_master_else_none(
    services: Services,
) -> None:
    add(services, "acme/named", {"a" * 40: "main"}, default_branch="trunk")
    add(services, "acme/both", {"b" * 40: "master", "c" * 40: "main"})
    add(services, "acme/master", {"d" * 40: "master", "e" * 40: "dev"})
    add(services, "acme/none", {"f" * 40: "dev"})
    with services.sessions() as session:
        by_name = {r.name: r for r in session.scalars(sa.select(Repository))}
        branches = {name: default_branch(session, repo) for name, repo in by_name.items()}
    assert branches == {
        "acme/named": "trunk", "acme/both": "main", "acme/master": "master", "acme/none": None,
    }  # fmt: skip


def test_a_commit_is_found_by_its_sha_or_a_unique_prefix_of_seven_or_more(
    services: Services,
) -> None:
    one, two = "abcdef1" + "0" * 33, "abcdef2" + "0" * 33
    add(services, "acme/web", {one: None, two: None})
    with services.sessions() as session:
        repo = find_repository(session, "acme/web")
        assert repo is not None
        shas = {
            asked: (c.sha if (c := find_commit(session, repo, asked)) else None)
            for asked in (one.upper(), "abcdef1", "abcdef", "abcdef%", "ABCDEF2000")
        }
    assert shas == {
        one.upper(): one,
        "abcdef1": one,
        "abcdef": None,  # too short to name one commit
        "abcdef%": None,  # a LIKE wildcard is a character, not a pattern
        "ABCDEF2000": two,
    }
    with services.sessions() as session:
        repo = find_repository(session, "acme/web")
        assert repo is not None and find_commit(session, repo, "abcdef0") is None


def test_an_abbreviated_sha_two_commits_share_names_neither(services: Services) -> None:
    add(services, "acme/web", {"1234567a" + "0" * 32: None, "1234567b" + "0" * 32: None})
    with services.sessions() as session:
        repo = find_repository(session, "acme/web")
        assert repo is not None and find_commit(session, repo, "1234567") is None


def test_coverage_is_unknown_without_lines() -> None:
    assert coverage_of({"lines": 4, "coverage": 75}) == 75.0
    assert coverage_of({"lines": 0, "coverage": 0}) is None and coverage_of(None) is None


def test_a_commit_is_pending_while_an_upload_is_then_errors_merged_or_empty() -> None:
    assert _state({UploadState.MERGED: 2, UploadState.UPLOADED: 1}) == "pending"
    assert _state({UploadState.MERGED: 2, UploadState.ERROR: 1}) == "errors"
    assert _state({UploadState.MERGED: 1}) == "merged"
    assert _state({}) == "empty"


def test_private_repositories_are_listed_only_for_a_reader_holding_their_token(
    services: Services,
) -> None:
    secret = add(services, "acme/secret", {}, private=True)
    add(services, "acme/open", {"a" * 40: "main"})
    with services.sessions() as session:
        assert [r["name"] for r in repositories(session, set())] == ["acme/open"]
        assert [r["name"] for r in repositories(session, None)] == ["acme/open"]
        listed = repositories(session, {secret})
    assert [(r["name"], r["private"]) for r in listed] == [
        ("acme/open", False), ("acme/secret", True),
    ]  # fmt: skip
    assert listed[0]["default_branch"] == "main"
    assert (listed[0]["latest_commit"], listed[0]["coverage"], listed[0]["trend"]) == (
        None, None, [],
    )  # fmt: skip  # no settled commit yet


def statements_of_the_commit_list(services: Services, name: str, listed: int) -> int:
    """Statements the commit list runs to show ``listed`` commits, each
    naming the one before as its parent (as ``--parent-sha`` does)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with services.sessions.begin() as session:
        repo = Repository(name=name)
        session.add(repo)
        session.flush()
        for n in range(listed + 1):  # the oldest, not listed, is the first one's parent
            sha = f"{n:040x}"
            parent = f"{n - 1:040x}" if n else None
            commit = Commit(
                repository_id=repo.id, sha=sha, branch="main", parent_commit_id=parent,
                created_at=start + timedelta(days=n),
            )  # fmt: skip
            session.add(commit)
            session.flush()
            totals = {"files": 1, "lines": 10, "hits": n % 10, "misses": 10 - n % 10}
            session.add(CommitReport(commit_id=commit.id, version=1, totals=totals))
    ran: list[str] = []

    def count(*args: Any) -> None:
        ran.append(args[2])

    engine = services.sessions.kw["bind"]
    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        with services.sessions() as session:
            repo = find_repository(session, name)
            assert repo is not None
            shown = repository_commits(session, cast(ReportCache, None), repo, limit=listed)
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
    bases = [c["base_commit"] for c in shown["commits"]]
    assert bases == [f"{n - 1:040x}" for n in range(listed, 0, -1)]
    return len(ran)


def test_the_commit_list_reads_its_commits_bases_in_a_fixed_number_of_statements(
    services: Services,
) -> None:
    """Three statements a row (the pull request, the parent, its totals) made
    the repository page's 20 commits 60 statements, most of its time."""
    few = statements_of_the_commit_list(services, "acme/few", 3)
    many = statements_of_the_commit_list(services, "acme/many", 20)

    assert many == few
