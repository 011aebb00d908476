"""The sign-in's state in Redis: sessions, sign-ins under way, access answers."""

from __future__ import annotations

import fakeredis
import pytest

from app.web.sessions import SessionStore


@pytest.fixture
def store() -> SessionStore:
    return SessionStore(fakeredis.FakeRedis(), "t")


def test_a_session_is_found_by_its_id_only_and_ends_when_signed_out(store: SessionStore) -> None:
    session_id = store.create("github", "octocat", "gho_x", ttl_s=60)

    viewer = store.load(session_id)
    assert viewer is not None and (viewer.service, viewer.login, viewer.token) == (
        "github",
        "octocat",
        "gho_x",
    )
    other = session_id[:-1] + ("A" if session_id[-1] != "A" else "B")
    assert store.load(other) is None and store.load("") is None
    # Redis holds the id's hash, never the id the cookie carries.
    assert all(session_id.encode() not in key for key in store.redis.keys("*"))
    assert 0 < int(store.redis.ttl(f"t:signin:session:{viewer.key}")) <= 60

    store.end(viewer)
    assert store.load(session_id) is None


def test_a_sign_in_under_way_is_taken_once(store: SessionStore) -> None:
    store.begin("s" * 43, {"service": "github", "verifier": "v", "next": "/"})

    assert store.take("s" * 43) == {"service": "github", "verifier": "v", "next": "/"}
    assert store.take("s" * 43) is None
    assert store.take("t" * 43) is None


def test_access_answers_are_cached_per_session_and_repository(store: SessionStore) -> None:
    one = store.load(store.create("github", "a", "t1", ttl_s=60))
    two = store.load(store.create("github", "b", "t2", ttl_s=60))
    assert one is not None and two is not None

    store.remember_access(one, 7, True, ttl_s=30)
    store.remember_access(one, 8, False, ttl_s=30)

    assert store.cached_access(one, [7, 8, 9]) == {7: True, 8: False}
    assert store.cached_access(two, [7, 8]) == {}
    assert 0 < int(store.redis.ttl(f"t:signin:access:{one.key}:7")) <= 30
