"""Who may read a repository's pages, and the operations token (app/web/access.py)."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa

from app.db.models import Repository
from app.errors import InvalidUpload
from app.runtime.services import Services
from app.web.access import (
    CSRF_COOKIE,
    MAX_COOKIE_TOKENS,
    OPS_COOKIE,
    READ_COOKIE,
    can_read,
    cookie_hashes,
    csrf_matches,
    csrf_value,
    hash_token,
    make_private,
    ops_allowed,
    presented_hashes,
    readable_private_ids,
    token_matches,
)


@pytest.fixture
def services(services: Services) -> Services:
    """The unit services (tests/app/conftest.py) with acme/open, acme/a and acme/b."""
    with services.sessions.begin() as session:
        session.add_all(Repository(name=name) for name in ("acme/open", "acme/a", "acme/b"))
    return services


def test_a_token_is_kept_as_its_sha256() -> None:
    assert hash_token("s3cret") == hashlib.sha256(b"s3cret").hexdigest()


def test_making_a_repository_private_stores_only_the_hash_of_a_new_token(
    services: Services,
) -> None:
    with services.sessions.begin() as session:
        token = make_private(session, "acme/a")
        again = make_private(session, "acme/b")
    assert token != again and len(token) == 32
    with services.sessions() as session:
        repo = session.scalars(sa.select(Repository).where(Repository.name == "acme/a")).one()
        assert repo.private and repo.read_token_hash == hash_token(token)
        assert token not in repr(session.execute(sa.select(Repository.__table__)).all())


def test_making_an_unknown_repository_private_is_refused_naming_it(services: Services) -> None:
    with services.sessions.begin() as session, pytest.raises(InvalidUpload, match="acme/nope"):
        make_private(session, "acme/nope")


def test_a_read_cookie_gives_at_most_twenty_well_formed_hashes() -> None:
    good = [hash_token(str(n)) for n in range(MAX_COOKIE_TOKENS + 5)]
    assert cookie_hashes(f"{good[0]} junk {good[1].upper()} {good[2]}x {good[3]}") == [
        good[0],
        good[3],
    ]
    assert cookie_hashes(" ".join(good)) == good[:MAX_COOKIE_TOKENS]
    assert cookie_hashes("") == []


def test_a_request_presents_the_bearer_tokens_hash_and_its_cookies_hashes() -> None:
    held = hash_token("from-cookie")
    cookies = {READ_COOKIE: held}
    assert presented_hashes({"authorization": "Bearer abc "}, cookies) == [hash_token("abc"), held]
    assert presented_hashes({"authorization": "token abc"}, {}) == [hash_token("abc")]
    assert presented_hashes({"authorization": "Basic abc"}, cookies) == [held]
    assert presented_hashes({"authorization": "Bearer  "}, {}) == []


def test_a_private_repository_opens_only_to_its_tokens_hash() -> None:
    secret = Repository(name="acme/a", private=True, read_token_hash=hash_token("t"))
    assert can_read(secret, [hash_token("other"), hash_token("t")])
    assert not can_read(secret, [hash_token("other")]) and not can_read(secret, [])
    assert can_read(Repository(name="acme/open", private=False), [])
    no_token = Repository(name="acme/b", private=True, read_token_hash=None)
    assert not can_read(no_token, [""]) and not token_matches(None, [""])


def test_the_listing_shows_the_private_repositories_the_hashes_open(services: Services) -> None:
    with services.sessions.begin() as session:
        token_a = make_private(session, "acme/a")
        make_private(session, "acme/b")
    with services.sessions() as session:
        rows = session.execute(sa.select(Repository.name, Repository.id))
        ids = {name: id_ for name, id_ in rows}
        assert readable_private_ids(session, [hash_token(token_a), "f" * 64]) == {ids["acme/a"]}
        assert readable_private_ids(session, []) == set()


def test_the_operations_page_is_off_without_a_token_and_opens_to_it_or_its_hash() -> None:
    bearer = {"authorization": "Bearer ops"}
    assert not ops_allowed("", bearer, {OPS_COOKIE: hash_token("")})
    assert ops_allowed("ops", bearer, {})
    assert ops_allowed("ops", {}, {OPS_COOKIE: hash_token("ops")})
    assert not ops_allowed("ops", {}, {OPS_COOKIE: "ops"})  # the cookie holds the hash
    assert not ops_allowed("ops", {"authorization": "Bearer nope"}, {OPS_COOKIE: ""})


def test_a_browser_keeps_its_csrf_value_and_a_missing_or_odd_one_is_replaced() -> None:
    held = "a" * 43
    assert csrf_value({CSRF_COOKIE: held}) == held
    odd = ({}, {CSRF_COOKIE: "short"}, {CSRF_COOKIE: "<x>" * 20})
    fresh = {csrf_value(cookies) for cookies in odd}
    assert len(fresh) == 3 and all(len(v) >= 32 and "<" not in v for v in fresh)


def test_a_form_matches_only_the_csrf_value_of_its_cookie() -> None:
    assert csrf_matches({CSRF_COOKIE: "v" * 43}, "v" * 43)
    assert not csrf_matches({CSRF_COOKIE: "v" * 43}, "w" * 43)
    assert not csrf_matches({}, "")  # no cookie: nothing matches, not even nothing
