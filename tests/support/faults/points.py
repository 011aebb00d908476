"""Fault points: named moments of a merge where the fault-injection suite makes
a worker die or stall.

Nothing of this is in the product: the test worker app
(``tests.support.faults.worker_app``) installs the points on its ``Services`` with
:func:`install`, as SQLAlchemy session events and a wrapper around the
finisher's read of the processed set. The suite in ``tests/faults/`` starts
real worker processes with, for example::

    COVWORKER_FAULT_POINTS=merge.in_transaction=kill@2

to SIGKILL the worker process the second time any of its threads reaches that
point. The spec is a comma-separated list of ``<point>=<action>[@<nth>]``:

- ``kill``: SIGKILL this process (a dead pod, the OOM killer);
- ``stop``: SIGSTOP this process (a frozen VM, a stalled container); whoever
  set it sends SIGCONT;
- ``sleep:<seconds>``: this thread sleeps (a deliberately slow merge).

With ``@<nth>`` only the nth hit in this process fires; without, every hit.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session

from app.errors import ConfigurationError
from app.runtime.services import Services

logger = logging.getLogger(__name__)

#: The finisher holds the commit lock and has read the batch it will merge.
MERGE_LOCKED = "merge.locked"
#: Inside the merge transaction, uploads flipped to merged, not yet committed.
MERGE_IN_TRANSACTION = "merge.in_transaction"
#: The merge transaction committed; Redis not yet tidied (SREM).
MERGE_COMMITTED = "merge.committed"

#: A commit's notification is committed and marked in Redis: the notifier is done.
NOTIFY_MARKED = "notify.marked"

POINTS = frozenset({MERGE_LOCKED, MERGE_IN_TRANSACTION, MERGE_COMMITTED, NOTIFY_MARKED})
ACTIONS = frozenset({"kill", "stop", "sleep"})


@dataclass(frozen=True, slots=True)
class Fault:
    action: str
    seconds: float = 0.0
    nth: int | None = None  # None: every hit


class FaultPoints:
    """The faults armed in this process, and how often each point was hit."""

    def __init__(self, faults: dict[str, Fault] | None = None) -> None:
        self.faults = dict(faults or {})
        self._hits: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, spec: str) -> FaultPoints:
        """Read ``<point>=<action>[@<nth>],...``; ConfigurationError on anything else."""
        faults: dict[str, Fault] = {}
        for item in filter(None, (part.strip() for part in spec.split(","))):
            point, _, rest = item.partition("=")
            action, _, nth = rest.partition("@")
            name, _, arg = action.partition(":")
            if point not in POINTS or name not in ACTIONS:
                raise ConfigurationError(
                    f"fault point {item!r}: use <point>=<action>[@<nth>] with a point of "
                    f"{sorted(POINTS)} and an action of {sorted(ACTIONS)}"
                )
            try:
                seconds = float(arg) if name == "sleep" else 0.0
                count = int(nth) if nth else None
            except ValueError:
                raise ConfigurationError(f"fault point {item!r}: not a number") from None
            faults[point] = Fault(name, seconds, count)
        return cls(faults)

    def hit(self, point: str) -> None:
        """Reached ``point``: fire its fault if one is armed for this hit."""
        fault = self.faults.get(point)
        if fault is None:
            return
        with self._lock:
            count = self._hits[point] = self._hits.get(point, 0) + 1
        if fault.nth is not None and count != fault.nth:
            return
        logger.warning("Fault point %s, hit %d: %s.", point, count, fault.action)
        # Sent to this very thread: a signal sent to the process may be taken by
        # another thread while this one runs on (and commits) for a while.
        if fault.action == "kill":
            signal.pthread_kill(threading.get_ident(), signal.SIGKILL)
        elif fault.action == "stop":
            signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
        else:
            time.sleep(fault.seconds)


def install(services: Services, faults: FaultPoints) -> None:
    """Make ``services`` reach the points of ``faults`` as the finisher runs.

    - ``merge.locked``: the finisher's read of a non-empty batch of the
      processed set (it holds the commit lock then);
    - ``merge.in_transaction``: the commit of a transaction that flipped
      uploads to ``merged`` is about to be sent (not yet committed);
    - ``merge.committed``: that transaction has committed;
    - ``notify.marked``: the notifier set the commit's ``notified`` marker, its
      last step (the notification is committed before).
    """
    if not faults.faults:
        return
    state = services.state
    read_batch = state.processed_ids

    def processed_ids(repoid: int, commitid: int, limit: int) -> list[int]:
        ids = read_batch(repoid, commitid, limit)
        if ids:
            faults.hit(MERGE_LOCKED)
        return ids

    state.processed_ids = processed_ids  # type: ignore[method-assign]
    mark_notified = state.mark_notified

    def marked(repoid: int, commitid: int, version: int) -> None:
        mark_notified(repoid, commitid, version)
        faults.hit(NOTIFY_MARKED)

    state.mark_notified = marked  # type: ignore[method-assign]

    def flag_merges(orm_execute_state: ORMExecuteState) -> None:
        if orm_execute_state.is_update and "merged_version" in str(orm_execute_state.statement):
            orm_execute_state.session.info["merging"] = True

    def before_commit(session: Session) -> None:
        if session.info.get("merging"):
            faults.hit(MERGE_IN_TRANSACTION)

    def after_commit(session: Session) -> None:
        if session.info.pop("merging", False):
            faults.hit(MERGE_COMMITTED)

    def after_rollback(session: Session, previous_transaction: Any) -> None:
        session.info.pop("merging", None)

    event.listen(services.sessions, "do_orm_execute", flag_merges)
    event.listen(services.sessions, "before_commit", before_commit)
    event.listen(services.sessions, "after_commit", after_commit)
    event.listen(services.sessions, "after_soft_rollback", after_rollback)
