"""Which repository a request is for, and whether its token opens it.

An unknown repository and a token that does not open a known one get the
same 401 and the same words: the upload API never tells a stranger which
repositories exist. Names are compared without case, as on GitHub.
"""

from __future__ import annotations

import threading
import time
import zlib
from typing import NoReturn

import sqlalchemy as sa

from app.api.errors import ApiError
from app.db.models import Repository
from app.db.repos import SERVICES, repository_by_token, token_matches
from app.runtime.services import Services

#: Seconds a repository row (its token hash) is reused by an api process.
REPOSITORY_CACHE_S = 5.0
#: Repositories kept at most (the cache starts over past this).
REPOSITORY_CACHE_SIZE = 10_000
#: Locks of the one-reader-per-name rule: a name uses the lock its hash
#: picks, so the locks are a fixed few whatever names strangers send.
READER_LOCKS = 64

TOKENLESS = (
    "tokenless uploads are not accepted: give the repository's upload token "
    "(codecov-cli -t / CODECOV_TOKEN; `covworker repo add` issues one)"
)


def decode_slug(slug: str) -> str:
    """``owner::::repo`` -> ``owner/repo``; ``group:::sub::::repo`` -> ``group/sub/repo``."""
    owner, sep, name = slug.partition("::::")
    parts = [*owner.split(":::"), name] if sep else []
    if not sep or not all(parts) or any(":" in p or "/" in p or "\x00" in p for p in parts):
        raise ApiError(404, f"slug {slug[:300]!r} is not of the form owner::::repo")
    return "/".join(parts).lower()


def token_from_header(authorization: str | None) -> str:
    """The token of an ``Authorization: token <TOKEN>`` header, or ``""``."""
    if not authorization:
        return ""
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    raise ApiError(401, "the Authorization header must be 'token <upload token>'")


class RepositoryCache:
    """Repository rows by name, kept ``ttl_s`` seconds: every upload's POST
    needs its repository, and CI matrices upload to one repository in bursts.
    A rotated token (or a new repository) is seen within ``ttl_s``."""

    def __init__(self, ttl_s: float = REPOSITORY_CACHE_S) -> None:
        self.ttl_s = ttl_s
        self._rows: dict[str, tuple[float, Repository]] = {}
        #: One reader per name: when a row expires under a burst, the request
        #: threads that miss it together wait for one query, not one each.
        #: A fixed set, picked by the name's hash: names nobody has (a
        #: stranger's) must not grow anything.
        self._reading = tuple(threading.Lock() for _ in range(READER_LOCKS))

    def fresh(self, name: str) -> Repository | None:
        """The row of ``name`` if it is cached and fresh (no database read)."""
        hit = self._rows.get(name)
        return hit[1] if hit is not None and time.monotonic() - hit[0] < self.ttl_s else None

    def get(self, services: Services, name: str) -> Repository | None:
        if (repo := self.fresh(name)) is not None:
            return repo
        with self._reading[zlib.crc32(name.encode()) % READER_LOCKS]:
            if (repo := self.fresh(name)) is not None:
                return repo
            return self._read(services, name)

    def _read(self, services: Services, name: str) -> Repository | None:
        now = time.monotonic()
        with services.sessions() as session:
            repo = session.scalar(sa.select(Repository).where(Repository.name == name))
        if repo is None:
            self._rows.pop(name, None)
        else:
            if len(self._rows) > REPOSITORY_CACHE_SIZE:
                self._rows.clear()
            self._rows[name] = (now, repo)
        return repo


def authorise(
    services: Services, service: str, name: str, token: str, cache: RepositoryCache | None = None
) -> Repository:
    """The repository ``name`` on ``service`` if ``token`` opens it; else 401/404."""
    _check_service(service)
    return _check_repository(
        service, name, token, (cache or RepositoryCache(ttl_s=0)).get(services, name)
    )


def authorise_cached(
    service: str, name: str, token: str, cache: RepositoryCache
) -> Repository | None:
    """``authorise`` without the database (for an event loop): the same
    refusals, or None if the repository's row is not in ``cache``."""
    _check_service(service)
    repo = cache.fresh(name)
    return None if repo is None else _check_repository(service, name, token, repo)


def _check_service(service: str) -> None:
    if service not in SERVICES:
        raise ApiError(404, f"unknown git service {service!r}: one of {', '.join(SERVICES)}")


def refused(name: str) -> ApiError:
    """The one answer to a token that opens no repository ``name``, whether
    or not it exists."""
    return ApiError(
        401,
        f"the upload token is not valid for repository {name[:300]} (or there is no such "
        "repository: `covworker repo add` creates one)",
    )


def _check_repository(service: str, name: str, token: str, repo: Repository | None) -> Repository:
    if repo is None or repo.service != service:
        raise_refused(name, token)
    return check_token(repo, token)


def raise_refused(name: str, token: str) -> NoReturn:
    """Refuse ``token`` for a repository ``name`` that does not exist, with
    the answer, and the work, of a wrong token for one that does."""
    if not token:
        raise ApiError(401, TOKENLESS)
    token_matches(token, _DECOY_HASH)  # the same work as a known repository's check
    raise refused(name)


#: A hash no token has, compared against when the repository is unknown.
_DECOY_HASH = "0" * 64


def check_token(repo: Repository, token: str) -> Repository:
    if not token:
        raise ApiError(401, TOKENLESS)
    if not token_matches(token, repo.upload_token_hash):
        raise refused(repo.name)
    return repo


def authorise_legacy(services: Services, slug: str | None, token: str) -> Repository:
    """The legacy uploader names the repository ``owner/repo`` (or only by its token)."""
    if not token:
        raise ApiError(401, TOKENLESS, plain=True)
    try:
        if slug:
            slug = slug.lower()
            with services.sessions() as session:
                repo = session.scalar(sa.select(Repository).where(Repository.name == slug))
            if repo is None:
                raise refused(slug)
            return check_token(repo, token)
        with services.sessions() as session:
            found = repository_by_token(session, token)
        if found is None:
            raise ApiError(401, "the upload token is not valid for any repository")
        return found
    except ApiError as exc:
        raise ApiError(exc.status_code, exc.detail, plain=True) from None
