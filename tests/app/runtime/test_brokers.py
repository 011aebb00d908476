"""The broker choice: settings, the redelivery delay, RabbitMQ's queues as covworker reads them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from app.errors import ConfigurationError
from app.runtime.brokers import (
    REDELIVERY_DELAYED,
    RabbitmqQueueInspector,
    RedeliveryDelay,
    inspector_of,
    join_queues,
    make_broker,
)
from app.settings import Settings
from app.web.ops import RedisLayout, inspected_broker_state
from tests.support.rabbitmq import delete_queues, require_rabbitmq

pytestmark = pytest.mark.timeout(60)


def test_the_broker_is_redis_unless_the_url_says_amqp() -> None:
    assert Settings().broker_kind == "redis"
    assert Settings(broker_url="redis://other:6379/1").broker_kind == "redis"
    assert Settings(broker_url="amqp://u:p@rabbit:5672/%2F").broker_kind == "rabbitmq"


def test_a_broker_url_of_another_scheme_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pydantic import ValidationError

    from app.settings import describe_validation_error

    monkeypatch.setenv("COVWORKER_BROKER_URL", "kafka://somewhere")
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert describe_validation_error(caught.value).startswith(
        "COVWORKER_BROKER_URL=kafka://somewhere: it must start with redis://"
    )


def test_a_cluster_without_rabbitmq_is_one_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="Redis broker cannot run on a Redis Cluster"):
        Settings(redis_cluster=True)
    assert Settings(redis_cluster=True, broker_url="amqp://rabbit/").redis_cluster


class Redelivered:
    """A message proxy as RabbitMQ's consumer makes it: ``redelivered`` set."""

    def __init__(self, message: dramatiq.Message, redelivered: bool) -> None:
        self._message = message
        self.redelivered = redelivered

    def __getattr__(self, name: str) -> object:
        return getattr(self._message, name)


@pytest.fixture
def stub() -> Iterator[tuple[StubBroker, dramatiq.Actor]]:  # type: ignore[type-arg]
    broker = StubBroker()
    finisher = dramatiq.actor(broker=broker, actor_name="upload_finisher")(lambda a, b: None)
    yield broker, finisher
    broker.close()


def test_a_redelivered_finisher_runs_later_as_a_delayed_copy_and_others_run_at_once(
    stub: tuple[StubBroker, dramatiq.Actor],  # type: ignore[type-arg]
) -> None:
    broker, finisher = stub
    other = dramatiq.actor(broker=broker, actor_name="upload_processor")(lambda a: None)
    delay = RedeliveryDelay(actors=frozenset({"upload_finisher"}), delay_ms=4000)
    redelivered = Redelivered(finisher.message(1, 2), redelivered=True)
    with pytest.raises(SkipMessage):
        delay.before_process_message(broker, redelivered)  # type: ignore[arg-type]
    (copy,) = broker.queues["default.DQ"].queue
    copy = dramatiq.Message.decode(copy)
    assert list(copy.args) == [1, 2] and copy.options[REDELIVERY_DELAYED] is True
    assert copy.options["eta"] >= int(time.time() * 1000) + 3000
    # the copy itself, a first delivery and another actor's redelivery run now
    again = Redelivered(copy.copy(queue_name="default"), redelivered=True)
    delay.before_process_message(broker, again)  # type: ignore[arg-type]
    delay.before_process_message(broker, Redelivered(finisher.message(1, 2), False))  # type: ignore[arg-type]
    delay.before_process_message(broker, Redelivered(other.message(3), True))  # type: ignore[arg-type]
    assert len(broker.queues["default.DQ"].queue) == 1


@pytest.fixture
def rabbit_settings(namespace: str) -> Iterator[Settings]:
    url = require_rabbitmq()
    settings = Settings(broker_url=url, queue_name=namespace)
    yield settings
    delete_queues(settings.queue_names)


def test_rabbitmq_queues_are_counted_and_dead_letters_listed_without_taking_them(
    rabbit_settings: Settings, namespace: str
) -> None:
    broker = make_broker(rabbit_settings, None, middleware=[])
    actor = dramatiq.actor(broker=broker, queue_name=namespace, actor_name="upload_processor")(
        lambda upload_id: None
    )
    try:
        for n in range(3):
            actor.send(n)
        actor.send_with_options(args=(9,), delay=60_000)
        consumer = broker.consume(namespace, prefetch=1, timeout=2000)
        dead = next(m for m in consumer if m is not None)  # dead-letter the first one
        inspector = inspector_of(broker)
        assert inspector.workers([namespace]) == 1  # the consumer above
        consumer.nack(dead)
        consumer.close()  # runs the nack
        deadline = time.monotonic() + 10
        while inspector.queue_state(namespace).dead < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        state = inspector.queue_state(namespace)
        assert (state.ready, state.delayed, state.dead) == (2, 1, 1)
        for _ in range(2):  # looking twice finds it twice: nothing taken
            (letter,) = inspector.dead_letters(namespace)
            assert (letter.message_id, letter.body["actor_name"]) == (
                dead.message_id,
                "upload_processor",
            )
            assert letter.body["args"] == [0] and letter.at_ms > 0
        layout = RedisLayout("unused", namespace, f"{namespace}.finish")
        page = inspected_broker_state(RabbitmqQueueInspector(rabbit_settings.broker_url), layout)
        assert (page["ready"], page["delayed"], page["dead"], page["workers"]) == (2, 1, 1, 0)
        assert page["in_flight"] is None
        assert [d["actor"] for d in page["dead_letters"]] == ["upload_processor"]
        with pytest.raises(dramatiq.errors.QueueJoinTimeout):
            join_queues(broker, [namespace], timeout_ms=300)  # two ready, one delayed
    finally:
        broker.close()
