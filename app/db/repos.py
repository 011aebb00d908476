"""Repositories and their upload tokens.

A token is a random UUID (what the Codecov uploaders expect to hold),
shown once when issued; only its sha256 is stored. Checking compares the
hash of the presented token with the one repository's hash in constant
time, so a token opens exactly the repository it was issued for.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.hosts import SERVICES as SERVICES
from app.db.models import Repository
from app.errors import InvalidUpload


def hash_token(token: str) -> str:
    return hashlib.sha256(token.strip().encode()).hexdigest()


def token_matches(token: str, stored_hash: str | None) -> bool:
    """Constant-time comparison of a presented token with a stored hash."""
    if not stored_hash:
        return False
    return hmac.compare_digest(hash_token(token), stored_hash)


def new_token() -> str:
    return str(uuid.uuid4())


def validate_service(service: str) -> str:
    if service not in SERVICES:
        raise InvalidUpload(f"unknown git service {service!r}: use one of {', '.join(SERVICES)}")
    return service


@dataclass(frozen=True)
class Issued:
    repository: str
    token: str
    created: bool


def add_repository(session: Session, name: str, service: str = "github") -> Issued:
    """Create ``name`` with a fresh token; an existing repository without a
    token (created by ``covworker upload``) gets one. One with a token is
    refused: its token can only be rotated, on purpose."""
    validate_service(service)
    repo = session.scalar(sa.select(Repository).where(Repository.name == name))
    if repo is not None and repo.upload_token_hash:
        raise InvalidUpload(
            f"repository {name} already has an upload token; "
            f"`covworker repo token {name} --rotate` issues a new one"
        )
    token = new_token()
    created = repo is None
    if repo is None:
        repo = Repository(name=name)
        session.add(repo)
    repo.service = service
    repo.upload_token_hash = hash_token(token)
    session.flush()
    return Issued(name, token, created)


def rotate_token(session: Session, name: str) -> Issued:
    repo = session.scalar(sa.select(Repository).where(Repository.name == name))
    if repo is None:
        raise InvalidUpload(f"no repository {name}; `covworker repo add {name}` creates it")
    token = new_token()
    repo.upload_token_hash = hash_token(token)
    session.flush()
    return Issued(name, token, False)


def repository_by_token(session: Session, token: str) -> Repository | None:
    """The repository a token opens (the legacy uploader may name no slug)."""
    return session.scalar(
        sa.select(Repository).where(Repository.upload_token_hash == hash_token(token))
    )


def learn_provider_private(session: Session, repository_id: int, private: bool) -> bool:
    """Store whether the provider says the repository is private; True if it changed.

    Called wherever the provider's repository is read (the default branch's
    refresh, a signed-in user's access check): a repository that turns
    private on GitHub or GitLab closes its pages from then on."""
    changed = session.execute(
        sa.update(Repository)
        .where(
            Repository.id == repository_id,
            Repository.provider_private.is_distinct_from(private),
        )
        .values(provider_private=private)
    )
    return bool(getattr(changed, "rowcount", 0))
