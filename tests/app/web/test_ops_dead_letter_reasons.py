"""Why a message was dead-lettered, on the operations page, whichever the
broker: the worker records the reason (neither broker keeps it with the
dead letter). On RabbitMQ, which does not count over AMQP the messages its
consumers hold, the workers report them; without a report the page says
they are not known."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import dramatiq
import fakeredis
import pytest

from app.errors import UnknownEntity
from app.runtime.brokers import RabbitmqQueueInspector
from app.runtime.state import dead_letter_reason_key
from app.runtime.worker import build_broker
from app.settings import Settings
from app.web.ops import (
    IN_FLIGHT_REPORTED,
    IN_FLIGHT_UNKNOWN,
    RedisLayout,
    broker_state,
    inspected_broker_state,
    with_recorded_reasons,
    with_reported_held,
)
from tests.support.rabbitmq import delete_queues, require_rabbitmq
from tests.support.services import redis_test_url, require_redis

pytestmark = pytest.mark.timeout(60)


def test_a_recorded_reason_is_shown_instead_of_the_traceback_the_message_carries() -> None:
    client = fakeredis.FakeRedis()
    layout = RedisLayout("cw", "covworker")
    trace = "Traceback (most recent call last):\n  ...\nValueError: attempt 1"
    body = {"message_id": "m2", "actor_name": "upload_processor", "args": [9]}
    client.zadd(layout.queue_key(".XQ"), {"m2": 1_700_000_000_000, "m3": 1_700_000_000_001})
    client.hset(
        layout.queue_key(".XQ.msgs"),
        mapping={
            "m2": json.dumps({**body, "options": {"traceback": trace}}),
            "m3": json.dumps({**body, "message_id": "m3", "options": {}}),
        },
    )
    client.set(dead_letter_reason_key("cw", "m2"), json.dumps({"reason": "ValueError: attempt 2"}))
    reasons = {d["message_id"]: d["reason"] for d in broker_state(client, layout)["dead_letters"]}
    assert reasons == {"m2": "ValueError: attempt 2", "m3": "no reason recorded"}


@pytest.fixture
def rabbit_settings(namespace: str) -> Iterator[Settings]:
    url = require_rabbitmq()
    require_redis()
    settings = Settings(
        broker_url=url,
        redis_url=redis_test_url(),
        queue_name=namespace,  # queues of this test's own on the shared server
        namespace=namespace,
        max_retries=1,
        min_backoff_ms=10,
        max_backoff_ms=20,
        metrics=False,
    )
    yield settings
    delete_queues(settings.queue_names)


def test_on_rabbitmq_dead_letters_show_the_reason_of_their_last_attempt_and_in_flight_is_unknown(
    rabbit_settings: Settings, namespace: str
) -> None:
    import redis

    client = redis.Redis.from_url(rabbit_settings.redis_url)
    broker = build_broker(rabbit_settings, client)
    attempts: list[int] = []

    def flaky(n: int) -> None:
        attempts.append(n)
        raise ValueError(f"attempt {len(attempts)}")

    def unknown(upload_id: int) -> None:
        raise UnknownEntity(f"upload {upload_id} does not exist")

    options = {"broker": broker, "queue_name": namespace, "throws": (UnknownEntity,)}
    flaky_actor = dramatiq.actor(actor_name="flaky", **options)(flaky)
    unknown_actor = dramatiq.actor(actor_name="unknown", **options)(unknown)
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=100)
    inspector = RabbitmqQueueInspector(rabbit_settings.broker_url)
    try:
        worker.start()
        flaky_actor.send(1)
        unknown_actor.send(9)
        deadline = time.monotonic() + 30
        while inspector.queue_state(namespace).dead < 2:
            assert time.monotonic() < deadline, inspector.queue_state(namespace)
            time.sleep(0.05)
    finally:
        worker.stop()
        broker.close()
    layout = RedisLayout(namespace, *rabbit_settings.queue_names)
    state = inspected_broker_state(inspector, layout)
    letters = with_recorded_reasons(client, namespace, state["dead_letters"])
    assert sorted((d["actor"], d["reason"]) for d in letters) == [
        ("flaky", "ValueError: attempt 2"),  # the message itself carries attempt 1's
        ("unknown", "UnknownEntity: upload 9 does not exist"),  # failed at once: carries none
    ]
    assert (state["in_flight"], state["in_flight_note"]) == (None, IN_FLIGHT_UNKNOWN)
    assert inspector.queue_state(namespace).dead == 2  # looking took nothing
    client.close()


def test_on_rabbitmq_in_flight_is_what_the_workers_report_holding(
    rabbit_settings: Settings, namespace: str
) -> None:
    import redis

    client = redis.Redis.from_url(rabbit_settings.redis_url)
    broker = build_broker(rabbit_settings, client)
    release = threading.Event()

    def blocking(n: int) -> None:
        assert release.wait(30)

    actor = dramatiq.actor(actor_name="blocking", broker=broker, queue_name=namespace)(blocking)
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=100)
    inspector = RabbitmqQueueInspector(rabbit_settings.broker_url)
    layout = RedisLayout(namespace, *rabbit_settings.queue_names)

    def page() -> dict[str, object]:
        state = inspected_broker_state(inspector, layout)
        with_reported_held(client, namespace, state)
        return state

    def wait_for(in_flight: int | None) -> dict[str, object]:
        deadline = time.monotonic() + 15
        while (state := page())["in_flight"] != in_flight:
            assert time.monotonic() < deadline, state
            time.sleep(0.1)
        return state

    try:
        worker.start()
        actor.send(1)
        held = wait_for(1)  # running in the worker: not ready any more, yet not done
        assert (held["ready"], held["in_flight_note"]) == (0, IN_FLIGHT_REPORTED)
        release.set()
        wait_for(0)
    finally:
        release.set()
        worker.stop()
        broker.close()
    gone = page()  # a stopped worker takes its report with it
    assert (gone["in_flight"], gone["in_flight_note"]) == (None, IN_FLIGHT_UNKNOWN)
    client.close()
