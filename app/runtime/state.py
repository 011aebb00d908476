"""A commit's processing state in Redis: the two upload sets, the
intermediate reports, the finisher lock and a few counters.

Every key of a commit carries the hash tag ``{<repoid>:<commitid>}``, so
the multi-key transactions below touch one Redis Cluster slot. Redis is a
cache of progress here, never the only copy: Postgres holds every upload's
raw bytes and state, and the sweep rebuilds these keys from it.

This module also owns every other Redis key name of covworker (the broker's
namespace, the gate's prefix and a commit's gate key, the last sweep's
record): the code that writes them and the operations page that reads them
import the names from here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import redis
from redis.lock import Lock

from app.lua import read_script


#: Counters kept per commit (``covworker status`` shows them).
def broker_namespace(namespace: str) -> str:
    """The Redis broker's key namespace (Dramatiq's queues, heartbeats, acks)."""
    return f"{namespace}-dramatiq"


def gate_prefix(namespace: str) -> str:
    """The per-commit gate's key prefix: its keys are ``<prefix>:{<gate key>}...``."""
    return f"{namespace}:gate"


def commit_key(repoid: int, commitid: int) -> str:
    """The gate key of a commit's finishers, called like the actor: ``<repoid>:<commitid>``."""
    return f"{repoid}:{commitid}"


def notify_key(repoid: int, commitid: int) -> str:
    """The gate key of a commit's notify: ``notify:<repoid>:<commitid>``. Not the
    finishers' key: the finisher that sends notify goes on to store the settled
    version's windows, and under its key notify would wait for them."""
    return f"notify:{repoid}:{commitid}"


def last_sweep_key(namespace: str) -> str:
    """The record of the last sweep (JSON), written by the sweep for the operations page."""
    return f"{namespace}:sweep:last"


def arrival_cursor_key(namespace: str, look: str) -> str:
    """Where the sweep's ``look`` at awaiting presigned uploads got to
    (``app.ingest.arrival``): the last upload looked for, ``<time>|<id>``."""
    return f"{namespace}:sweep:arrivals:{look}"


#: How long the reason a message was dead-lettered for is kept: as long as
#: Dramatiq keeps the dead letter itself (its ``dead_message_ttl``, 7 days).
DEAD_LETTER_REASON_TTL_S = 7 * 24 * 3600


def dead_letter_reason_key(namespace: str, message_id: str) -> str:
    """Why message ``message_id`` was dead-lettered (JSON), written by the
    worker that dead-lettered it (``app.runtime.worker.DeadLetterReasons``)."""
    return f"{namespace}:dead:{message_id}"


def held_messages_key(namespace: str, worker: str) -> str:
    """What one worker process's RabbitMQ consumers hold (app/runtime/held_messages.py)."""
    return f"{namespace}:held:{worker}"


def held_messages_pattern(namespace: str) -> str:
    return f"{namespace}:held:*"


def dead_letter_reasons(
    client: redis.Redis, namespace: str, message_ids: list[str]
) -> dict[str, str]:
    """The recorded reasons of these dead letters (those that have one).
    One GET each in a pipeline: the keys may live on different cluster nodes."""
    if not message_ids:
        return {}
    with client.pipeline(transaction=False) as pipe:
        for message_id in message_ids:
            pipe.get(dead_letter_reason_key(namespace, message_id))
        found = pipe.execute()
    reasons = {}
    for message_id, raw in zip(message_ids, found, strict=True):
        if raw:
            try:
                reasons[message_id] = str(json.loads(raw)["reason"])
            except (ValueError, KeyError, TypeError):
                continue
    return reasons


def last_sweep(client: redis.Redis, namespace: str) -> dict[str, object] | None:
    """The record of the last sweep, or None if none ran (or it expired)."""
    raw = client.get(last_sweep_key(namespace))
    return json.loads(raw) if raw else None


STAT_FIELDS = (
    "finisher_runs",
    "early_exits",
    "lock_busy",
    "batch_waits",
    "lock_acquisitions",
    "merge_passes",
    "uploads_merged",
    "redriven",
)
#: Counters expire this long after their last change (seconds).
STATS_TTL_S = 7 * 24 * 3600
#: A commit's last finisher run is remembered this long: a commit quiet
#: longer than that starts again from the base debounce.
RUN_TTL_S = 3600


#: A finisher's first look at its commit in one round trip (the script
#: says what it reads and returns).
FINISHER_ENTRY_SCRIPT = read_script("finisher_entry.lua")


@dataclass(frozen=True, slots=True)
class FinisherEntry:
    """What a finisher saw, atomically, as it arrived (see ``enter_finisher``)."""

    processing: int
    processed: int
    notified: bool
    #: The commit lock, held by this finisher; None if nothing was processed
    #: or too few for a batch while others are processing (the lock is not
    #: tried), or another finisher holds it.
    lock: Lock | None


@dataclass(frozen=True, slots=True)
class CommitKeys:
    processing: str
    processed: str
    lock: str
    stats: str
    notified: str
    #: The commit report's latest version, written after each merge commits.
    version: str
    report_prefix: str
    #: How long the commit's last finisher run took (ms): its next debounce.
    last_run: str = ""

    def report(self, upload_id: int) -> str:
        return f"{self.report_prefix}{upload_id}"


class ProcessingState:
    """The Redis side of the pipeline, for every commit.

    Keys start with ``<namespace>:<instance id>``: the id of the database
    (``app.db.models.Instance``, created with the schema). A database that is
    recreated or restored gets a new id, so what Redis kept for the old one
    (counters, sets, the notified marker) is never read as its state.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        namespace: str = "covworker",
        instance: Callable[[], str] | str = "",
        intermediate_ttl_s: int = 24 * 3600,
        lock_timeout_s: float = 60.0,
        min_batch: int = 1,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self._instance = instance
        self._prefix: str | None = None
        self.intermediate_ttl_s = intermediate_ttl_s
        self.lock_timeout_s = lock_timeout_s
        #: ``COVWORKER_FINISHER_MIN_BATCH`` (``batch_ready``).
        self.min_batch = min_batch
        self._finisher_entry = client.register_script(FINISHER_ENTRY_SCRIPT)

    @property
    def prefix(self) -> str:
        """``<namespace>:<instance id>``, the instance read once, on first use."""
        if self._prefix is None:
            instance = self._instance() if callable(self._instance) else self._instance
            self._prefix = f"{self.namespace}:{instance}" if instance else self.namespace
        return self._prefix

    # -- Redis data loss ------------------------------------------------------------

    @property
    def epoch_key(self) -> str:
        """A marker that lives as long as Redis keeps its data: no TTL, never
        deleted by covworker. Missing means Redis lost (or never had) it."""
        return f"{self.prefix}:epoch"

    def epoch_missing(self) -> bool:
        return not self.client.exists(self.epoch_key)

    def claim_epoch(self) -> str | None:
        """Start a new epoch if the marker is missing: its token for the one
        caller that did, None for everyone else (the marker was there, or
        another caller set it first)."""
        token = uuid.uuid4().hex
        return token if self.client.set(self.epoch_key, token, nx=True) else None

    def keys(self, repoid: int, commitid: int) -> CommitKeys:
        base = f"{self.prefix}:{{{repoid}:{commitid}}}"
        return CommitKeys(
            processing=f"{base}:processing",
            processed=f"{base}:processed",
            lock=f"{base}:lock",
            stats=f"{base}:stats",
            notified=f"{base}:notified",
            version=f"{base}:version",
            report_prefix=f"{base}:report:",
            last_run=f"{base}:last_run",
        )

    # -- the two sets -----------------------------------------------------------

    def mark_processing(self, repoid: int, commitid: int, upload_ids: Iterable[int]) -> int:
        """Add the uploads to the commit's processing set; how many are in it
        after that, read in the same round trip (0 when none are given). Not
        in a transaction: another upload joining in between only moves the
        count by one, and it chooses a lane, it does not settle anything."""
        ids = list(upload_ids)
        if not ids:
            return 0
        key = self.keys(repoid, commitid).processing
        with self.client.pipeline(transaction=False) as pipe:
            pipe.sadd(key, *ids)
            pipe.scard(key)
            _, processing = pipe.execute()
        return int(processing)

    def drop_processing(self, repoid: int, commitid: int, upload_id: int) -> int:
        """Take the upload out of processing; how many of the commit's uploads
        are still processing after that, read in the same transaction."""
        keys = self.keys(repoid, commitid)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.srem(keys.processing, upload_id)
            pipe.scard(keys.processing)
            _, processing = pipe.execute()
        return int(processing)

    def drop_failed(self, repoid: int, commitid: int, upload_id: int) -> int:
        """As ``drop_processing``, for an upload that ended in error: its commit's
        settled state changed (one more failed upload), so the notified marker
        no longer describes it and goes too, in the same transaction."""
        keys = self.keys(repoid, commitid)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.srem(keys.processing, upload_id)
            pipe.delete(keys.notified)
            pipe.scard(keys.processing)
            _, _, processing = pipe.execute()
        return int(processing)

    def tracked(self, uploads: Sequence[tuple[int, int, int]]) -> list[bool]:
        """For each (repoid, commitid, upload_id): is it in its commit's
        processing or processed set? One round trip however many uploads."""
        with self.client.pipeline(transaction=False) as pipe:
            for repoid, commitid, upload_id in uploads:
                keys = self.keys(repoid, commitid)
                pipe.sismember(keys.processing, str(upload_id))
                pipe.sismember(keys.processed, str(upload_id))
            found = pipe.execute()
        return [bool(found[i] or found[i + 1]) for i in range(0, len(found), 2)]

    def mark_processed(self, repoid: int, commitid: int, upload_id: int) -> int:
        """processing -> processed, atomically (also if it was in neither); how
        many of the commit's uploads are still processing after that, read in
        the same transaction, so whichever upload leaves the set last sees 0
        (the processor then sends the finisher ahead; a redelivered upload
        that was no longer in the set may see 0 too, which only sends one
        more finisher)."""
        keys = self.keys(repoid, commitid)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.srem(keys.processing, upload_id)
            pipe.sadd(keys.processed, upload_id)
            pipe.scard(keys.processing)
            _, _, processing = pipe.execute()
        return int(processing)

    def counts(self, repoid: int, commitid: int) -> tuple[int, int]:
        """(uploads processing, uploads processed) right now."""
        keys = self.keys(repoid, commitid)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.scard(keys.processing)
            pipe.scard(keys.processed)
            processing, processed = pipe.execute()
        return int(processing), int(processed)

    def processed_ids(self, repoid: int, commitid: int, limit: int) -> list[int]:
        """At most ``limit`` ids of the processed set, in ascending order.

        SRANDMEMBER with a count costs O(limit), not O(set): a commit with
        100,000 processed uploads is read one batch at a time, never whole.
        """
        members = self.client.srandmember(self.keys(repoid, commitid).processed, limit)
        return sorted(int(m) for m in members or ())

    # -- intermediate reports -----------------------------------------------------

    def store_intermediate(self, repoid: int, commitid: int, upload_id: int, data: bytes) -> None:
        key = self.keys(repoid, commitid).report(upload_id)
        self.client.set(key, data, ex=self.intermediate_ttl_s)

    def has_intermediate(self, repoid: int, commitid: int, upload_id: int) -> bool:
        return self.intermediates_exist([(repoid, commitid, upload_id)])[0]

    def intermediates_exist(self, uploads: Sequence[tuple[int, int, int]]) -> list[bool]:
        """For each (repoid, commitid, upload_id): is its intermediate still in
        Redis? One round trip however many uploads (the sweep asks for many)."""
        with self.client.pipeline(transaction=False) as pipe:
            for repoid, commitid, upload_id in uploads:
                pipe.exists(self.keys(repoid, commitid).report(upload_id))
            return [bool(found) for found in pipe.execute()]

    def load_intermediates(
        self, repoid: int, commitid: int, upload_ids: Sequence[int]
    ) -> list[bytes | None]:
        if not upload_ids:
            return []
        keys = self.keys(repoid, commitid)
        blobs = self.client.mget([keys.report(u) for u in upload_ids])
        return [b.encode() if isinstance(b, str) else b for b in blobs]

    # -- after a merge transaction has committed ------------------------------------

    def settle_merged(
        self,
        repoid: int,
        commitid: int,
        done: Sequence[int],
        redrive: Sequence[int],
        version: int | None = None,
    ) -> None:
        """Take merged (or otherwise final) uploads out of the processed set and
        move uploads to re-drive back to processing, in one transaction, so the
        two sets are never both empty while an upload is still on its way.
        ``version``: the report version the pass committed (the notified
        marker counts only if it names it)."""
        keys = self.keys(repoid, commitid)
        with self.client.pipeline(transaction=True) as pipe:
            if version is not None:
                pipe.set(keys.version, version, ex=STATS_TTL_S)
            if redrive:
                pipe.sadd(keys.processing, *redrive)
                pipe.srem(keys.processed, *redrive)
            if done:
                pipe.srem(keys.processed, *done)
                pipe.delete(*[keys.report(u) for u in done])
                pipe.delete(keys.notified)
            pipe.execute()

    # -- the finisher lock ------------------------------------------------------------

    def lock(self, repoid: int, commitid: int) -> Lock:
        """The commit's finisher lock; callers acquire it without blocking."""
        return self.client.lock(
            self.keys(repoid, commitid).lock, timeout=self.lock_timeout_s, blocking=False
        )

    def batch_ready(self, processing: int, processed: int) -> bool:
        """Whether a pass merges now: once ``min_batch`` uploads are processed, or
        any are and none of the commit's is processing any more (its last
        upload in flight never waits)."""
        return processed > 0 and (processing == 0 or processed >= self.min_batch)

    def enter_finisher(self, repoid: int, commitid: int) -> FinisherEntry:
        """Read the counts and the notified marker and, if a batch is ready
        (``batch_ready``), try the commit lock, all in one script.

        A finisher that will leave (nothing processed, too few for a batch,
        or the lock busy) is counted in the stats by the same script; the holder counts itself
        when it is done.
        """
        keys = self.keys(repoid, commitid)
        token = uuid.uuid4().hex.encode()
        processing, processed, notified, locked = self._finisher_entry(
            keys=[
                keys.processing,
                keys.processed,
                keys.notified,
                keys.lock,
                keys.stats,
                keys.version,
            ],
            args=[token, int(self.lock_timeout_s * 1000), STATS_TTL_S, self.min_batch],
        )
        lock = None
        if locked:
            lock = self.lock(repoid, commitid)
            # What Lock.acquire records on success: release() and reacquire()
            # check that the key still holds this token.
            lock.local.token = token
        return FinisherEntry(int(processing), int(processed), bool(notified), lock)

    # -- notification marker and counters ----------------------------------------------

    def record_run(self, repoid: int, commitid: int, seconds: float) -> None:
        """How long a finisher run of the commit that merged took."""
        self.client.set(self.keys(repoid, commitid).last_run, int(seconds * 1000), ex=RUN_TTL_S)

    def last_run_ms(self, repoid: int, commitid: int) -> int:
        """How long the commit's last finisher run that merged took (0: none lately)."""
        raw = self.client.get(self.keys(repoid, commitid).last_run)
        try:
            return int(raw) if raw is not None else 0
        except ValueError:
            return 0

    def mark_notified(self, repoid: int, commitid: int, version: int) -> None:
        self.client.set(self.keys(repoid, commitid).notified, version, ex=STATS_TTL_S)

    def count(self, repoid: int, commitid: int, **increments: int) -> None:
        key = self.keys(repoid, commitid).stats
        with self.client.pipeline(transaction=False) as pipe:
            for name, amount in increments.items():
                pipe.hincrby(key, name, amount)
            pipe.expire(key, STATS_TTL_S)
            pipe.execute()

    def stats(self, repoid: int, commitid: int) -> dict[str, int]:
        raw = self.client.hgetall(self.keys(repoid, commitid).stats)
        found = {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in raw.items()}
        return {name: found.get(name, 0) for name in STAT_FIELDS}
