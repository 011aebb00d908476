"""Who may read a repository's pages, and the operations page.

A public repository's pages are open. A private one's need its read token,
presented in ``Authorization: Bearer <token>`` or in the cookie the login
form sets. Only a SHA-256 of the token is stored, and tokens are compared
in constant time. Anything else gets the same 404 as an unknown repository,
so a page never tells a stranger that a private repository exists.
"""

from __future__ import annotations

import hashlib
import hmac
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


def presented_tokens(headers: Mapping[str, str], cookies: Mapping[str, str]) -> list[str]:
    """Tokens a request carries: the Authorization header's and the cookie's."""
    tokens = []
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        tokens.append(value.strip())
    tokens.extend(cookies.get(READ_COOKIE, "").split()[:MAX_COOKIE_TOKENS])
    return tokens


def token_matches(token_hash: str | None, tokens: Iterable[str]) -> bool:
    if not token_hash:
        return False
    found = False
    for token in tokens:  # no early exit: the time does not tell which one matched
        found |= hmac.compare_digest(hash_token(token), token_hash)
    return found


def can_read(repo: Repository, tokens: Iterable[str]) -> bool:
    return not repo.private or token_matches(repo.read_token_hash, tokens)


def readable_private_ids(session: Session, tokens: list[str]) -> set[int]:
    """Ids of the private repositories these tokens open."""
    if not tokens:
        return set()
    hashes = {hash_token(t) for t in tokens}
    return set(
        session.scalars(
            sa.select(Repository.id).where(
                Repository.private.is_(True), Repository.read_token_hash.in_(hashes)
            )
        )
    )


def ops_allowed(ops_token: str, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
    """The operations page is off (404) without a configured token."""
    if not ops_token:
        return False
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    candidates = [cookies.get(OPS_COOKIE, "")]
    if scheme.lower() in ("bearer", "token"):
        candidates.append(value.strip())
    expected = ops_token.encode()
    found = False
    for candidate in candidates:
        found |= bool(candidate) and hmac.compare_digest(candidate.encode(), expected)
    return found
