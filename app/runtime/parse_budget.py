"""A per-process budget on the bytes of uploads being parsed at once.

A parse holds up to 3 times its upload (LCOV, written straight into its
intermediate: 34.5 MiB traced for an 11 MiB, 1,000,000-line report) or
about 8 times (the formats parsed whole), and holds the GIL: 8 worker
threads that each take a big upload hold 8 of those, and a merge pass in
the same process gets an eighth of its interpreter. A thread
takes its upload's size from the budget before parsing and gives it back
after; one that does not fit waits, in arrival order, so a big upload is
not passed over forever by small ones; the shared queue's processors wait
ahead of the bulk queue's (``first``: a commit's uploads within its share,
app/ingest/admit.py), as the worker runs them first. An upload larger than
the whole budget is parsed alone.

The budget also caps how many parses run at once (``parses``): the bytes
alone let eight small parses share the interpreter with one big one, which
then takes eight times its CPU in wall-clock time (a 0.76 s parse seen
finishing after more than 5 s). Settings: ``COVWORKER_PARSE_BUDGET_MB``
and ``COVWORKER_PARSES_AT_ONCE`` (0: no limit on either).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Upload


class ParseBudget:
    """Bytes being parsed at once in this process, at most ``capacity``, by at
    most ``parses`` threads (0: unbounded)."""

    def __init__(self, capacity: int, *, parses: int = 0) -> None:
        if capacity < 0 or parses < 0:
            raise ValueError("a parse budget cannot be negative")
        self.capacity = capacity
        self.parses = parses
        self._in_use = 0
        self._holders = 0
        self._waiting: deque[object] = deque()
        self._first = 0  # how many at the head of ``_waiting`` came with ``first``
        self._changed = threading.Condition()

    @property
    def in_use(self) -> int:
        with self._changed:
            return self._in_use

    def _fits(self, need: int) -> bool:
        if self._holders == 0:
            return True
        if self.parses and self._holders >= self.parses:
            return False
        return not self.capacity or self._in_use + need <= self.capacity

    @contextmanager
    def hold(self, size: int, *, first: bool = False) -> Iterator[None]:
        """Parse ``size`` bytes inside this block; waits, first come first served,
        until they fit. With ``first``, in line behind the others that came
        with ``first`` only."""
        if self.capacity == 0 and self.parses == 0:
            yield
            return
        need = min(max(size, 1), self.capacity) if self.capacity else 0
        ticket = object()
        with self._changed:
            if first:
                self._waiting.insert(self._first, ticket)
                self._first += 1
            else:
                self._waiting.append(ticket)
            try:
                while self._waiting[0] is not ticket or not self._fits(need):
                    self._changed.wait()
            finally:
                if first:
                    self._first -= 1
                self._waiting.remove(ticket)
                self._changed.notify_all()  # the next in line may fit too
            self._in_use += need
            self._holders += 1
        try:
            yield
        finally:
            with self._changed:
                self._in_use -= need
                self._holders -= 1
                self._changed.notify_all()


def upload_raw_size(sessions: sessionmaker[Session], upload_id: int) -> int:
    """The stored size of an upload's raw payload (0: unknown), to take from the budget."""
    with sessions() as session:
        return session.scalar(sa.select(Upload.raw_size).where(Upload.id == upload_id)) or 0
