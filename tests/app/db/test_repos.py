"""Repositories and their upload tokens: issued once, stored only as a hash,
each opening exactly its own repository."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Repository
from app.db.repos import (
    add_repository,
    hash_token,
    new_token,
    repository_by_token,
    rotate_token,
    token_matches,
    validate_service,
)
from app.errors import InvalidUpload
from app.runtime.services import Services


@pytest.fixture
def session(services: Services) -> Iterator[Session]:
    """One transaction on the unit services, committed after the test."""
    with services.sessions.begin() as session:
        yield session


def test_a_token_is_a_random_uuid_as_the_uploaders_expect() -> None:
    token = new_token()
    assert str(uuid.UUID(token)) == token
    assert new_token() != token


def test_a_token_is_hashed_with_sha256_ignoring_surrounding_whitespace() -> None:
    assert hash_token("abc") == hashlib.sha256(b"abc").hexdigest()
    assert hash_token("  abc\n") == hash_token("abc"), "as pasted into a CI secret"


def test_a_token_matches_only_its_own_hash_and_never_a_missing_one() -> None:
    stored = hash_token("right")
    assert token_matches("right", stored) is True
    assert token_matches("wrong", stored) is False
    assert token_matches("right", None) is False
    assert token_matches("", "") is False


def test_an_unknown_git_service_is_refused_naming_the_known_ones() -> None:
    assert validate_service("gitlab") == "gitlab"
    with pytest.raises(InvalidUpload, match="unknown git service 'gitea': use one of github, "):
        validate_service("gitea")


def test_adding_a_repository_stores_the_hash_of_the_token_it_shows_once(session: Session) -> None:
    issued = add_repository(session, "acme/web", "gitlab")
    assert (issued.repository, issued.created) == ("acme/web", True)
    repo = session.scalar(sa.select(Repository).where(Repository.name == "acme/web"))
    assert repo is not None and repo.service == "gitlab"
    assert repo.upload_token_hash == hash_token(issued.token)
    assert issued.token not in (repo.upload_token_hash, repo.name)


def test_a_repository_created_by_an_upload_gets_a_token_when_added(session: Session) -> None:
    session.add(Repository(name="acme/web"))
    session.flush()
    issued = add_repository(session, "acme/web")
    assert issued.created is False
    assert repository_by_token(session, issued.token) is not None


def test_a_repository_with_a_token_is_refused_and_keeps_it(session: Session) -> None:
    first = add_repository(session, "acme/web")
    with pytest.raises(InvalidUpload, match=r"already has an upload token; .* --rotate"):
        add_repository(session, "acme/web")
    found = repository_by_token(session, first.token)
    assert found is not None and found.name == "acme/web"


def test_rotating_a_token_retires_the_old_one(session: Session) -> None:
    old = add_repository(session, "acme/web")
    new = rotate_token(session, "acme/web")
    assert (new.repository, new.created) == ("acme/web", False)
    assert new.token != old.token
    assert repository_by_token(session, old.token) is None
    found = repository_by_token(session, new.token)
    assert found is not None and found.name == "acme/web"


def test_rotating_the_token_of_an_unknown_repository_says_how_to_create_it(
    session: Session,
) -> None:
    with pytest.raises(InvalidUpload, match="no repository acme/none; `covworker repo add"):
        rotate_token(session, "acme/none")


def test_a_token_opens_exactly_the_repository_it_was_issued_for(session: Session) -> None:
    web = add_repository(session, "acme/web")
    api = add_repository(session, "acme/api")
    by_web, by_api = (
        repository_by_token(session, web.token),
        repository_by_token(session, api.token),
    )
    assert by_web is not None and by_web.name == "acme/web"
    assert by_api is not None and by_api.name == "acme/api"
    assert repository_by_token(session, new_token()) is None
