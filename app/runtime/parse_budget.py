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

Inside that hold, the parse itself (``parsing``: the CPU-bound part, not
reading the payload nor storing the result) runs in at most ``parses``
threads at once, in a line of its own kept in the same order. The threads
share one interpreter: the bytes alone let eight small parses run beside a
big one, which then takes several times its CPU in wall-clock time. The
reads and writes around a parse wait on I/O and are not counted, so they
overlap the parses of other threads. Settings: ``COVWORKER_PARSE_BUDGET_MB``
and ``COVWORKER_PARSES_AT_ONCE`` (0: no limit on either; BENCHMARKS.md,
"Parses at once", for what the cap trades).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Upload


class _Line:
    """Threads waiting for their turn: in arrival order, those that came with
    ``first`` ahead of the others (and in arrival order among themselves)."""

    def __init__(self) -> None:
        self.waiting: deque[object] = deque()
        self.first = 0  # how many at the head of ``waiting`` came with ``first``

    def wait(self, changed: threading.Condition, fits: Callable[[], bool], *, first: bool) -> None:
        """Called holding ``changed``: returns at this thread's turn, once ``fits()``."""
        ticket = object()
        if first:
            self.waiting.insert(self.first, ticket)
            self.first += 1
        else:
            self.waiting.append(ticket)
        try:
            while self.waiting[0] is not ticket or not fits():
                changed.wait()
        finally:
            if first:
                self.first -= 1
            self.waiting.remove(ticket)
            changed.notify_all()  # the next in line may fit too


class ParseBudget:
    """Bytes of uploads held for parsing at once in this process, at most
    ``capacity``, and parses running at once, at most ``parses`` (0: unbounded)."""

    def __init__(self, capacity: int, *, parses: int = 0) -> None:
        if capacity < 0 or parses < 0:
            raise ValueError("a parse budget cannot be negative")
        self.capacity = capacity
        self.parses = parses
        self._in_use = 0
        self._holders = 0
        self._parsing = 0
        self._bytes = _Line()
        self._parse = _Line()
        self._changed = threading.Condition()
        self._thread = threading.local()  # this thread's hold: ``first`` or not

    @property
    def in_use(self) -> int:
        with self._changed:
            return self._in_use

    def _fits(self, need: int) -> bool:
        return self._holders == 0 or self._in_use + need <= self.capacity

    @contextmanager
    def hold(self, size: int, *, first: bool = False) -> Iterator[None]:
        """Read, parse and store ``size`` bytes inside this block; waits, first
        come first served, until they fit. With ``first``, in line behind the
        others that came with ``first`` only, here and in ``parsing``."""
        self._thread.first = first
        if self.capacity == 0:
            try:
                yield
            finally:
                self._thread.first = False
            return
        need = min(max(size, 1), self.capacity)
        with self._changed:
            self._bytes.wait(self._changed, lambda: self._fits(need), first=first)
            self._in_use += need
            self._holders += 1
        try:
            yield
        finally:
            self._thread.first = False
            with self._changed:
                self._in_use -= need
                self._holders -= 1
                self._changed.notify_all()

    @contextmanager
    def parsing(self) -> Iterator[None]:
        """The parse itself, inside ``hold``: waits until fewer than ``parses``
        threads are parsing, in the order of ``hold``."""
        if self.parses == 0:
            yield
            return
        first = getattr(self._thread, "first", False)
        with self._changed:
            self._parse.wait(self._changed, lambda: self._parsing < self.parses, first=first)
            self._parsing += 1
        try:
            yield
        finally:
            with self._changed:
                self._parsing -= 1
                self._changed.notify_all()


def upload_raw_size(sessions: sessionmaker[Session], upload_id: int) -> int:
    """The stored size of an upload's raw payload (0: unknown), to take from the budget."""
    with sessions() as session:
        return session.scalar(sa.select(Upload.raw_size).where(Upload.id == upload_id)) or 0
