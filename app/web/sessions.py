"""Signed-in users' sessions, the sign-ins under way and the access answers, in Redis.

The browser holds a random session id in an ``HttpOnly`` cookie
(``SESSION_COOKIE``); Redis holds, under the id's SHA-256 (so a copy of
Redis opens no browser's session), who the user is and the provider token
the access checks are made with, for ``COVWORKER_SIGNIN_SESSION_S``. Signing
out deletes it. A sign-in under way is kept under its ``state`` for
``PENDING_TTL_S`` and taken once (``GETDEL``), so a ``state`` is good for
one callback. Each key is a single key of its own: nothing here needs a
Redis Cluster's slots to agree.

Keys (``NS`` is ``COVWORKER_NAMESPACE``)::

    NS:signin:session:<sha256 of the id>      JSON {service, login, token}
    NS:signin:pending:<sha256 of the state>   JSON {service, verifier, next}
    NS:signin:access:<session hash>:<repo id> b"1" may read, b"0" may not
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from redis import Redis

#: The browser's session id.
SESSION_COOKIE = "covworker_session"
#: The ``state`` of this browser's sign-in under way: the callback must carry
#: the same, so another site cannot finish a sign-in in this browser.
STATE_COOKIE = "covworker_signin"
#: How long a sign-in may wait at the provider (s).
PENDING_TTL_S = 600


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Viewer:
    """A signed-in user."""

    service: str
    login: str
    token: str
    #: The SHA-256 of the session id: the key of its Redis entries.
    key: str


class SessionStore:
    """The sessions, sign-ins under way and cached access answers of one namespace."""

    def __init__(self, redis: Redis, namespace: str) -> None:
        self.redis = redis
        self.prefix = f"{namespace}:signin"

    # -- sign-ins under way ------------------------------------------------------

    def begin(self, state: str, pending: dict[str, Any]) -> None:
        key = f"{self.prefix}:pending:{_digest(state)}"
        self.redis.set(key, json.dumps(pending), ex=PENDING_TTL_S)

    def take(self, state: str) -> dict[str, Any] | None:
        """The sign-in begun with ``state``, once; None if unknown or taken."""
        raw = self.redis.getdel(f"{self.prefix}:pending:{_digest(state)}")
        if not isinstance(raw, bytes | str):
            return None
        found = json.loads(raw)
        return found if isinstance(found, dict) else None

    # -- sessions ----------------------------------------------------------------

    def create(self, service: str, login: str, token: str, ttl_s: int) -> str:
        """A new session; the id for the cookie (never stored)."""
        session_id = secrets.token_urlsafe(32)
        value = json.dumps({"service": service, "login": login, "token": token})
        self.redis.set(f"{self.prefix}:session:{_digest(session_id)}", value, ex=ttl_s)
        return session_id

    def load(self, session_id: str) -> Viewer | None:
        if not session_id or len(session_id) > 128:
            return None
        key = _digest(session_id)
        raw = self.redis.get(f"{self.prefix}:session:{key}")
        if not isinstance(raw, bytes | str):
            return None
        found = json.loads(raw)
        return Viewer(str(found["service"]), str(found["login"]), str(found["token"]), key)

    def end(self, viewer: Viewer) -> None:
        self.redis.delete(f"{self.prefix}:session:{viewer.key}")

    # -- access answers ----------------------------------------------------------

    def _access_key(self, viewer: Viewer, repo_id: int) -> str:
        return f"{self.prefix}:access:{viewer.key}:{repo_id}"

    def cached_access(self, viewer: Viewer, repo_ids: list[int]) -> dict[int, bool]:
        """The answers still cached for these repositories."""
        if not repo_ids:
            return {}
        pipe = self.redis.pipeline(transaction=False)  # one key per command: any Cluster slot
        for repo_id in repo_ids:
            pipe.get(self._access_key(viewer, repo_id))
        values = pipe.execute()
        return {
            repo_id: value in (b"1", "1")
            for repo_id, value in zip(repo_ids, values, strict=True)
            if value is not None
        }

    def remember_access(self, viewer: Viewer, repo_id: int, readable: bool, ttl_s: int) -> None:
        self.redis.set(self._access_key(viewer, repo_id), b"1" if readable else b"0", ex=ttl_s)
