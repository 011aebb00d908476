"""Dramatiq's broker, Redis or RabbitMQ, and what covworker reads of its queues.

``COVWORKER_BROKER_URL`` picks the broker: ``redis://...`` (or empty: the
Redis of ``REDIS_URL``) runs Dramatiq's ``RedisBroker``, ``amqp://...``
Dramatiq's ``RabbitmqBroker`` (``pip install covworker[scale]``). Both carry
every actor, the gate's delayed copies and the dead letters the same way;
what differs is how their queues are looked at, so the rest of covworker
reads them through a ``QueueInspector`` (queue depths for ``/-/ops`` and the
metrics, the workers consuming, the dead letters) and waits for them
through ``join_queues``.

Two behaviours of RabbitMQ are evened out here:

- RabbitMQ hands a message of a worker that died (its connection closed)
  to another worker at once, where Dramatiq's Redis broker waits for the
  dead worker's heartbeat to time out. A finisher killed while holding a
  commit's lock would then be redelivered while the lock is still held,
  find it busy and leave the commit to the sweep. ``RedeliveryDelay`` sends
  a redelivered message of the actors that take that lock back as a delayed
  copy, due once the lock has expired: the Redis broker's guarantee
  (``COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS`` longer than the lock) on both.
- RabbitMQ counts only the messages no worker holds: a running message, and
  a delayed one a worker has taken to wait for its due time, are invisible to
  a queue declaration (only RabbitMQ's management plugin counts them). So
  ``join_queues`` on RabbitMQ is Dramatiq's own join (the ready and delayed
  queues seen empty twice in a row, ``interval_ms`` apart, on every queue,
  in two rounds over the queues), and a caller that must know
  the work is done asks PostgreSQL (every upload final), as the tests do.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import dramatiq
import redis
from dramatiq.broker import Consumer
from dramatiq.brokers.redis import RedisBroker
from dramatiq.common import dq_name, q_name, xq_name
from dramatiq.errors import QueueJoinTimeout
from dramatiq.middleware import Middleware, SkipMessage

from app.errors import ConfigurationError
from app.runtime.state import broker_namespace
from app.settings import Settings

#: Most dead letters a ``QueueInspector`` lists per queue.
DEAD_LETTER_LIMIT = 50
#: Option a redelivered message's delayed copy carries, so it runs when due.
REDELIVERY_DELAYED = "covworker_redelivery_delayed"


class FastPollQueues:
    """Consumers of ``fast_queues`` (and of their delayed messages) sleep at most ``fast_poll_ms``.

    A Dramatiq consumer that finds its queue empty waits up to the worker
    timeout (1 s by default) before it looks again. The finisher queue is idle
    most of the time and a message on it is waited for (a commit's
    notification), so its consumers wait at most ``fast_poll_ms``: one Redis
    call per poll on the Redis broker, one RabbitMQ frame wait on RabbitMQ.
    """

    fast_queues: frozenset[str]
    fast_poll_ms: int

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> Consumer:
        if q_name(queue_name) in self.fast_queues:
            timeout = min(timeout, self.fast_poll_ms)
        return super().consume(queue_name, prefetch, timeout)  # type: ignore[misc]


class CovworkerBroker(FastPollQueues, RedisBroker):
    """Dramatiq's Redis broker, with the finisher queue polled often (``FastPollQueues``)."""

    def __init__(self, *, fast_queues: Sequence[str], fast_poll_ms: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fast_queues = frozenset(fast_queues)
        self.fast_poll_ms = fast_poll_ms


def rabbitmq_broker_class() -> type[dramatiq.Broker]:
    """``CovworkerRabbitmqBroker``, imported on first use: pika is in ``covworker[scale]``."""
    try:
        from dramatiq.brokers.rabbitmq import RabbitmqBroker
    except ImportError as exc:  # pragma: no cover - the default install
        raise ConfigurationError(
            "COVWORKER_BROKER_URL=amqp://... needs RabbitMQ's client: "
            "pip install 'covworker[scale]'"
        ) from exc

    class CovworkerRabbitmqBroker(FastPollQueues, RabbitmqBroker):
        """Dramatiq's RabbitMQ broker, with the finisher queue polled often.

        Every delayed-message queue is, too: a worker moves a due delayed
        message (a gate's deferred or debounced copy) to its queue only when
        that consumer's wait returns, and RabbitMQ pushes messages, so a
        short wait costs a wake-up of a blocked thread, not a broker call.
        """

        def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> Consumer:
            if queue_name.endswith(".DQ"):
                timeout = min(timeout, self.fast_poll_ms)
            return super().consume(queue_name, prefetch, timeout)

        def __init__(self, *, fast_queues: Sequence[str], fast_poll_ms: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.fast_queues = frozenset(fast_queues)
            self.fast_poll_ms = fast_poll_ms

    return CovworkerRabbitmqBroker


def make_broker(
    settings: Settings, redis_client: Any, middleware: list[Middleware]
) -> dramatiq.Broker:
    """The broker ``settings`` name, with ``middleware``; ``redis_client`` is the
    Redis broker's client when the broker runs on ``REDIS_URL``."""
    separate_finisher = settings.finisher_queue_name != settings.queue_name
    common: dict[str, Any] = {
        # The finisher queue; none if it is the shared one.
        "fast_queues": [settings.finisher_queue_name] if separate_finisher else [],
        "fast_poll_ms": settings.finisher_queue_poll_ms,
        "middleware": middleware,
    }
    if settings.broker_kind == "rabbitmq":
        rabbitmq: Any = rabbitmq_broker_class()
        broker = rabbitmq(url=settings.broker_url, confirm_delivery=True, **common)
        broker.add_middleware(
            RedeliveryDelay(
                actors=LOCK_TAKING_ACTORS,
                delay_ms=int(settings.finisher_lock_timeout_s * 1000) + REDELIVERY_MARGIN_MS,
            )
        )
        return broker
    client = redis_client
    if settings.broker_url:  # the Redis broker on a Redis of its own
        client = redis.Redis.from_url(settings.broker_url)
    return CovworkerBroker(
        client=client,
        namespace=broker_namespace(settings.namespace),
        heartbeat_timeout=settings.broker_heartbeat_timeout_ms,
        maintenance_chance=settings.broker_maintenance_chance,
        **common,
    )


#: Actors whose message takes the commit's finisher lock (``RedeliveryDelay``).
LOCK_TAKING_ACTORS = frozenset({"upload_finisher"})
#: Slack between the lock's lease and a redelivered message's delay (ms).
REDELIVERY_MARGIN_MS = 2000


class RedeliveryDelay(Middleware):
    """A redelivered message of ``actors`` runs ``delay_ms`` later, as a delayed copy.

    RabbitMQ redelivers the messages of a worker whose connection closed (it
    was killed, or shut down with prefetched messages) at once. For an actor
    that takes a lease-bound lock, the redelivered message would find the dead
    holder's lock and leave; its copy runs once the lease has expired. Other
    actors are redelivered as they are.
    """

    def __init__(self, *, actors: frozenset[str], delay_ms: int) -> None:
        self.actors = actors
        self.delay_ms = delay_ms

    def before_process_message(
        self, broker: dramatiq.Broker, message: dramatiq.MessageProxy
    ) -> None:
        if (
            getattr(message, "redelivered", False)
            and message.actor_name in self.actors
            and not message.options.get(REDELIVERY_DELAYED)
        ):
            copy = message.copy(
                queue_name=q_name(message.queue_name), options={REDELIVERY_DELAYED: True}
            )
            broker.enqueue(copy, delay=self.delay_ms)
            raise SkipMessage(f"redelivered; its copy runs in {self.delay_ms} ms")


# -- looking at the queues -------------------------------------------------------


@dataclass(frozen=True)
class QueueState:
    """One queue's messages: ``ready`` waiting (on Redis, running ones too:
    ``stored``), ``delayed`` not yet due, ``dead`` dead-lettered."""

    queue: str
    ready: int
    stored: int
    delayed: int
    dead: int


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    queue: str
    body: dict[str, Any]
    at_ms: int


class QueueInspector:
    """What covworker reads of a broker's queues, whichever the broker."""

    def queue_state(self, queue: str) -> QueueState:
        raise NotImplementedError

    def dead_letters(self, queue: str, limit: int = DEAD_LETTER_LIMIT) -> list[DeadLetter]:
        raise NotImplementedError

    def workers(self, queues: Sequence[str]) -> int:
        """Worker processes consuming ``queues`` now."""
        raise NotImplementedError

    def in_flight(self) -> int | None:
        """Messages a worker holds (running or prefetched); None if the broker cannot say."""
        raise NotImplementedError

    def delayed_bodies(self, queues: Sequence[str], limit: int) -> list[dict[str, Any]]:
        """Delayed messages' bodies, as far as the broker shows them."""
        raise NotImplementedError

    def close(self) -> None:
        return None


def _decoded(raw: Any) -> dict[str, Any]:
    try:
        found = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class RedisQueueInspector(QueueInspector):
    """Dramatiq's Redis broker keys: ``<ns>:<queue>`` (list), ``.msgs``, ``.DQ.msgs``, ``.XQ``."""

    def __init__(self, client: redis.Redis, broker_namespace: str) -> None:
        self.client = client
        self.namespace = broker_namespace

    def key(self, queue: str, suffix: str = "") -> str:
        return f"{self.namespace}:{queue}{suffix}"

    def queue_state(self, queue: str) -> QueueState:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.llen(self.key(queue))
            pipe.hlen(self.key(queue, ".msgs"))
            pipe.hlen(self.key(queue, ".DQ.msgs"))
            pipe.zcard(self.key(queue, ".XQ"))
            ready, stored, delayed, dead = pipe.execute()
        return QueueState(queue, int(ready), int(stored), int(delayed), int(dead))

    def dead_letters(self, queue: str, limit: int = DEAD_LETTER_LIMIT) -> list[DeadLetter]:
        ids: Any = self.client.zrange(self.key(queue, ".XQ"), -limit, -1, withscores=True)
        if not ids:
            return []
        bodies = self.client.hmget(self.key(queue, ".XQ.msgs"), [i for i, _ in ids])
        return [
            DeadLetter(_text(message_id), queue, _decoded(body), int(at))
            for (message_id, at), body in zip(reversed(ids), reversed(bodies), strict=True)
        ]

    def workers(self, queues: Sequence[str]) -> int:
        return int(self.client.zcard(f"{self.namespace}:__heartbeats__"))

    def in_flight(self) -> int | None:
        found = 0
        for key in self.client.scan_iter(match=f"{self.namespace}:__acks__.*", count=500):
            if not _text(key).endswith(".DQ"):
                found += int(self.client.scard(key))
        return found

    def delayed_bodies(self, queues: Sequence[str], limit: int) -> list[dict[str, Any]]:
        raw = [b for q in queues for b in self.client.hvals(self.key(q, ".DQ.msgs"))]
        return [_decoded(b) for b in raw[:limit]]


class RabbitmqQueueInspector(QueueInspector):
    """RabbitMQ, read with passive queue declarations on a connection of its own.

    A declaration counts the messages no worker holds, and the consumers; the
    dead letters are read without acknowledgement and handed back when the
    channel closes, so looking never removes one.
    """

    def __init__(self, url: str) -> None:
        import pika

        self._pika = pika
        self.parameters = pika.URLParameters(url)

    @contextlib.contextmanager
    def _channel(self) -> Iterator[Any]:
        connection = self._pika.BlockingConnection(self.parameters)
        try:
            yield connection.channel()
        finally:
            with contextlib.suppress(Exception):
                connection.close()

    def _counts(self, names: Sequence[str]) -> list[tuple[int, int]]:
        """(messages, consumers) of each queue; (0, 0) for a queue not declared yet."""
        found = []
        connection = self._pika.BlockingConnection(self.parameters)
        try:
            channel = connection.channel()
            for name in names:
                try:
                    ok = channel.queue_declare(name, passive=True)
                    found.append((ok.method.message_count, ok.method.consumer_count))
                except self._pika.exceptions.ChannelClosedByBroker:  # 404: not declared
                    found.append((0, 0))
                    channel = connection.channel()
        finally:
            with contextlib.suppress(Exception):
                connection.close()
        return found

    def queue_state(self, queue: str) -> QueueState:
        (ready, _), (delayed, _), (dead, _) = self._counts([queue, dq_name(queue), xq_name(queue)])
        return QueueState(queue, ready, ready, delayed, dead)

    def dead_letters(self, queue: str, limit: int = DEAD_LETTER_LIMIT) -> list[DeadLetter]:
        letters: list[DeadLetter] = []
        with self._channel() as channel:
            try:
                for _ in range(limit):
                    method, properties, body = channel.basic_get(xq_name(queue), auto_ack=False)
                    if method is None:
                        break
                    message = _decoded(body)
                    letters.append(
                        DeadLetter(
                            str(message.get("message_id", "")),
                            queue,
                            message,
                            _death_ms(properties) or int(message.get("message_timestamp") or 0),
                        )
                    )
            except self._pika.exceptions.ChannelClosedByBroker:  # no dead-letter queue yet
                return []
        return letters  # unacknowledged: back on the queue as the channel closes

    def workers(self, queues: Sequence[str]) -> int:
        return max((consumers for _, consumers in self._counts(list(queues))), default=0)

    def in_flight(self) -> int | None:
        return None

    def delayed_bodies(self, queues: Sequence[str], limit: int) -> list[dict[str, Any]]:
        return []  # held by the workers until due: not readable without taking them


def _death_ms(properties: Any) -> int:
    """When RabbitMQ dead-lettered a message (its ``x-death`` header), in ms."""
    deaths = (getattr(properties, "headers", None) or {}).get("x-death") or []
    when: Any = deaths[0].get("time") if deaths else None
    return int(when.timestamp() * 1000) if hasattr(when, "timestamp") else 0


def queue_inspector(settings: Settings, redis_client: Any) -> QueueInspector:
    """The inspector of the broker ``settings`` name (``redis_client``: that of ``REDIS_URL``)."""
    if settings.broker_kind == "rabbitmq":
        return RabbitmqQueueInspector(settings.broker_url)
    client = redis.Redis.from_url(settings.broker_url) if settings.broker_url else redis_client
    return RedisQueueInspector(client, broker_namespace(settings.namespace))


def inspector_of(broker: dramatiq.Broker) -> QueueInspector:
    """The inspector of a running broker (its own connection settings)."""
    if isinstance(broker, RedisBroker):
        return RedisQueueInspector(broker.client, broker.namespace)
    parameters = broker.parameters  # type: ignore[attr-defined]
    inspector = RabbitmqQueueInspector.__new__(RabbitmqQueueInspector)
    import pika

    inspector._pika = pika
    inspector.parameters = parameters
    return inspector


def join_queues(
    broker: Any,
    queues: Sequence[str],
    *,
    timeout_ms: int,
    interval_ms: int = 20,
) -> None:
    """Wait until every one of ``queues`` is empty (delayed and, on Redis, unacked messages too).

    A message enqueues its successor on the other queue before it is acked,
    so it is counted on one queue or the other throughout; the queues are
    read one after the other, though, so two rounds in a row must see them
    all empty. On RabbitMQ, see the module docstring. Raises
    ``QueueJoinTimeout`` after ``timeout_ms``.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    rabbit = not isinstance(broker, RedisBroker)
    empty_rounds = 0
    while empty_rounds < 2:
        for queue in queues:
            left = max(1, round((deadline - time.monotonic()) * 1000))
            if rabbit:
                broker.join(queue, min_successes=2, idle_time=interval_ms, timeout=left)
            else:
                broker.join(queue, timeout=left, interval=interval_ms)
        if rabbit:
            counts = [broker.get_queue_message_counts(q) for q in queues]
            empty = all(c[0] == 0 and c[1] == 0 for c in counts)
        else:
            empty = all(broker.do_qsize(q) == 0 for q in queues)
        empty_rounds = empty_rounds + 1 if empty else 0
        if empty_rounds < 2:
            if time.monotonic() >= deadline:
                raise QueueJoinTimeout(",".join(queues))
            time.sleep(interval_ms / 1000)
