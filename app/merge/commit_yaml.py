"""A commit's ``codecov.yml`` through its repository's provider, in Codecov's
lookup order, cached in Redis per commit: read by the merge (carryforward,
before a commit's first pass) and by pull-request feedback (``prepare``), so
the provider is asked once per commit."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from app.db.models import Repository
from app.providers import ContentTooLarge, Provider
from app.pullrequests.config import MAX_YAML_BYTES, OVERSIZED_YAML
from app.runtime.services import Services

#: Where Codecov looks for the file, in order (its ``shared/yaml/fetcher.py``).
YAML_NAMES = ("codecov.yml", ".codecov.yml", "codecov.yaml", ".codecov.yaml")
YAML_DIRS = ("", "dev/", ".github/")
#: How long the YAML found at a commit is kept (a commit's files never change).
YAML_CACHE_S = 24 * 3600


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def lookups() -> ThreadPoolExecutor:
    """The process's threads for provider calls made at once (started once, not per call)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                max_workers=2 * (len(YAML_DIRS) * len(YAML_NAMES) + 2),
                thread_name_prefix="provider-lookup",
            )
        return _POOL


def load_yaml(
    services: Services, provider: Provider, repo: Repository, sha: str, pool: ThreadPoolExecutor
) -> str | None:
    """``codecov.yml`` at ``sha`` through the provider, cached in Redis; None if absent.

    The root's ``codecov.yml`` first (where most repositories keep it: one
    call); if it is not there, every other place Codecov looks at once (one
    round trip, not eleven); the first found in Codecov's order (root,
    ``dev/``, ``.github/``) wins. A commit the provider does not know ends
    the lookup at the first call (``UnknownCommit``).
    A file over ``MAX_YAML_BYTES`` is read no further and is
    ``OVERSIZED_YAML`` (the parser's ``larger than`` error), cached as such.
    """
    key = f"{services.settings.namespace}:prfeedback:yaml:{repo.id}:{sha}"
    cached = services.redis.get(key)
    if isinstance(cached, bytes):
        return None if cached == b"\0" else cached.decode("utf-8", "replace")
    paths = [directory + name for directory in YAML_DIRS for name in YAML_NAMES]

    def read(path: str) -> bytes | None:
        # read no further than the parser reads: a larger file is refused
        # while it streams, and only its refusal is kept
        try:
            return provider.file_contents(repo.name, path, sha, max_bytes=MAX_YAML_BYTES)
        except ContentTooLarge:
            return OVERSIZED_YAML.encode()

    found = read(paths[0])
    if found is None:
        answers = pool.map(read, paths[1:])
        found = next((a for a in answers if a is not None), None)
    services.redis.set(key, found if found is not None else b"\0", ex=YAML_CACHE_S)
    return None if found is None else found.decode("utf-8", "replace")
