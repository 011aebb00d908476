"""Who may read a repository's pages, and the operations page.

A repository is private when it was added ``--private`` or the Git provider
says it is (``provider_private``, docs/sign-in.md). A public repository's
pages are open. A private one's need its read token, or a signed-in user
the provider lets read it (``app/web/signin.py``); the token is
presented in ``Authorization: Bearer <token>`` or in the cookie the login
form sets. Only a SHA-256 of the token is stored, in the database and in
the cookie (the browser never keeps the token itself), and hashes are
compared in constant time. Anything else gets the same 404 as an unknown
repository, so a page never tells a stranger that a private repository exists.

The login forms carry a per-browser CSRF value that must match their
cookie's (``CSRF_COOKIE``), so another site cannot sign a visitor in with
a token of its choosing.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Repository
from app.errors import InvalidUpload

#: Cookie holding the read tokens the browser signed in with, space-separated.
READ_COOKIE = "covworker_read"
#: Cookie holding the operations token.
OPS_COOKIE = "covworker_ops"
#: Most read tokens one browser keeps.
MAX_COOKIE_TOKENS = 20
#: Cookie of the login forms' CSRF value (double submit).
CSRF_COOKIE = "covworker_csrf"
#: Longest token a login form accepts (issued tokens are 32 characters).
MAX_TOKEN_CHARS = 256
_HEX_HASH = re.compile(r"[0-9a-f]{64}")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(24)


def make_private(session: Session, name: str) -> str:
    """Mark repository ``name`` private with a new read token; return the token
    (only its hash is stored, so this is the one time it is seen)."""
    repo = session.scalar(sa.select(Repository).where(Repository.name == name))
    if repo is None:
        raise InvalidUpload(f"repository {name!r} does not exist")
    token = new_token()
    repo.private = True
    repo.read_token_hash = hash_token(token)
    return token


def cookie_hashes(cookie: str) -> list[str]:
    """The token hashes a read cookie holds (anything else in it is ignored)."""
    return [h for h in cookie.split()[:MAX_COOKIE_TOKENS] if _HEX_HASH.fullmatch(h)]


def presented_hashes(headers: Mapping[str, str], cookies: Mapping[str, str]) -> list[str]:
    """Hashes of the tokens a request carries: the Authorization header's
    token, hashed, and the hashes the cookie holds."""
    hashes = []
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        hashes.append(hash_token(value.strip()))
    hashes.extend(cookie_hashes(cookies.get(READ_COOKIE, "")))
    return hashes


def token_matches(token_hash: str | None, hashes: Iterable[str]) -> bool:
    if not token_hash:
        return False
    found = False
    for presented in hashes:  # no early exit: the time does not tell which one matched
        found |= hmac.compare_digest(presented, token_hash)
    return found


def is_private(repo: Repository) -> bool:
    """Private on covworker (``--private``) or on the provider."""
    return repo.private or repo.provider_private is True


#: The query's form of :func:`is_private`.
PRIVATE = sa.or_(Repository.private.is_(True), Repository.provider_private.is_(True))


def can_read(repo: Repository, hashes: Iterable[str]) -> bool:
    return not is_private(repo) or token_matches(repo.read_token_hash, hashes)


def readable_private_ids(session: Session, presented: list[str]) -> set[int]:
    """Ids of the private repositories these token hashes open."""
    if not presented:
        return set()
    hashes = set(presented)
    return set(
        session.scalars(
            sa.select(Repository.id).where(PRIVATE, Repository.read_token_hash.in_(hashes))
        )
    )


def ops_allowed(ops_token: str, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
    """The operations page is off without a configured token. The header
    carries the token, the cookie its hash."""
    if not ops_token:
        return False
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    candidates = [cookies.get(OPS_COOKIE, "")]
    if scheme.lower() in ("bearer", "token") and value.strip():
        candidates.append(hash_token(value.strip()))
    expected = hash_token(ops_token)
    found = False
    for candidate in candidates:
        found |= bool(candidate) and hmac.compare_digest(candidate.encode(), expected.encode())
    return found


def csrf_value(cookies: Mapping[str, str]) -> str:
    """This browser's CSRF value: its cookie's, or a new one to set."""
    held = cookies.get(CSRF_COOKIE, "")
    return held if re.fullmatch(r"[A-Za-z0-9_-]{32,64}", held) else secrets.token_urlsafe(32)


def csrf_matches(cookies: Mapping[str, str], submitted: str) -> bool:
    held = cookies.get(CSRF_COOKIE, "")
    return bool(held) and hmac.compare_digest(held.encode(), submitted.encode())
