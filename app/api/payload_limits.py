"""Turns to receive a large PUT body, per repository and in all (one server process)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from app.api.errors import ApiError

#: ``Retry-After`` of a refusal for lack of a turn, in seconds.
RETRY_AFTER_S = 30
#: Headers of a refusal sent before the body was read: the connection is
#: closed after it, so the unread rest of the body is not parsed as a request.
CLOSE = {"Connection": "close"}


class LargeBodies:
    """Turns to receive a large body, in all and per repository (one server
    process; the event loop is its only user, so plain counters do)."""

    def __init__(self, at_once: int, per_repository: int) -> None:
        self.at_once, self.per_repository = at_once, per_repository
        self.by_repository: Counter[int] = Counter()

    @property
    def receiving(self) -> int:
        return self.by_repository.total()

    @contextmanager
    def turn(self, repoid: int) -> Iterator[None]:
        retry = {"Retry-After": str(RETRY_AFTER_S), **CLOSE}
        if self.by_repository[repoid] >= self.per_repository:
            raise ApiError(
                429,
                f"this repository already sends {self.per_repository} large payloads to this "
                f"server; retry in {RETRY_AFTER_S} s",
                plain=True,
                headers=retry,
            )
        if self.receiving >= self.at_once:
            raise ApiError(
                503,
                f"the server already receives {self.at_once} large payloads; "
                f"retry in {RETRY_AFTER_S} s",
                plain=True,
                headers=retry,
            )
        self.by_repository[repoid] += 1
        try:
            yield
        finally:
            self.by_repository[repoid] -= 1
            if not self.by_repository[repoid]:
                del self.by_repository[repoid]
