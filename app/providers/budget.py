"""What one repository may spend of the rate limit every repository shares.

All repositories of a service call the provider with covworker's one set of
credentials, and so share its rate limit (GitHub: 5,000 calls an hour per
token or App installation). Once it is spent the provider refuses the
credentials, and every repository's feedback stops. Two rules, checked in
Redis before each call (:meth:`app.providers.rest.RestProvider._call`), keep
one repository from spending it:

- a budget of calls per repository, a GCRA (generic cell rate algorithm: a
  token bucket kept as one timestamp per repository, shared by every
  process): ``COVWORKER_PROVIDER_CALLS_PER_REPOSITORY_HOUR`` calls an hour
  with bursts of ``COVWORKER_PROVIDER_CALLS_BURST``. A call past it is not
  made: :class:`OverBudget` says how long until :data:`COME_BACK_FOR_CALLS`
  calls are allowed again, and the outbox defers its row that long without
  counting an attempt;
- commits the provider does not know: once it answers that it has no such
  commit (an upload of a made-up or unpushed SHA), the SHA is remembered for
  ``COVWORKER_PROVIDER_UNKNOWN_COMMIT_TTL_S`` and every call naming it raises
  :class:`UnknownCommit` without being made; the feedback is skipped with
  that reason.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from app.lua import read_script
from app.providers.base import OverBudget, UnknownCommit

#: Spend one call of a repository's budget, or the ms until one is allowed.
GCRA_SCRIPT = read_script("provider_budget.lua")


#: A repository over its budget is told to come back once this many calls
#: (at most its burst) are available again: an attempt that needs several (a
#: prepare: the pull request, then the diff) then completes, rather than
#: spending the one call that came back and being deferred again each time.
COME_BACK_FOR_CALLS = 10


class CallBudget:
    """The per-repository budget and the unknown commits, in Redis.

    ``per_hour`` 0: no budget (the unknown commits are still remembered).
    """

    def __init__(
        self,
        redis: Any,
        namespace: str,
        *,
        per_hour: int,
        burst: int,
        unknown_commit_ttl_s: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis
        self.namespace = namespace
        self.per_hour = per_hour
        self.burst = burst
        self.unknown_commit_ttl_s = unknown_commit_ttl_s
        self.clock = clock
        self._gcra = redis.register_script(GCRA_SCRIPT)

    def _key(self, what: str, service: str, repo: str, *rest: str) -> str:
        # The name is hashed: a repository's name holds characters a key pattern reads.
        name = hashlib.sha256(f"{service}\0{repo}".encode()).hexdigest()[:24]
        return ":".join((self.namespace, "provider", what, name, *rest))

    def spend(self, service: str, repo: str) -> None:
        """Take one call of ``repo``'s budget, or raise :class:`OverBudget`."""
        if self.per_hour <= 0:
            return
        interval_ms = 3_600_000 / self.per_hour
        now_ms = int(self.clock() * 1000)
        key = self._key("budget", service, repo)
        wait_ms = int(self._gcra(keys=[key], args=[now_ms, interval_ms, self.burst]))
        if wait_ms > 0:
            # Until enough calls came back for a whole attempt, not just the next one.
            refill_ms = (min(COME_BACK_FOR_CALLS, self.burst) - 1) * interval_ms
            raise OverBudget(
                f"{repo} spent its budget of {self.per_hour} {service} calls an hour "
                f"(COVWORKER_PROVIDER_CALLS_PER_REPOSITORY_HOUR): deferred",
                (wait_ms + refill_ms) / 1000,
            )

    def check_commit(self, service: str, repo: str, sha: str) -> None:
        """Raise :class:`UnknownCommit` if the provider said it has no ``sha`` within the TTL."""
        if self.redis.exists(self._key("unknown-commit", service, repo, sha)):
            raise UnknownCommit(unknown_reason(service, repo, sha, self.unknown_commit_ttl_s), sha)

    def remember_unknown(self, service: str, repo: str, sha: str) -> None:
        key = self._key("unknown-commit", service, repo, sha)
        self.redis.set(key, b"1", ex=self.unknown_commit_ttl_s)


def unknown_reason(service: str, repo: str, sha: str, ttl_s: int | None = None) -> str:
    """Why a commit gets no feedback: the provider does not know it."""
    kept = f" (remembered for {ttl_s} s: no call names it until then)" if ttl_s else ""
    return f"{service} has no commit {sha[:40]} in {repo}{kept}: no feedback for it"
