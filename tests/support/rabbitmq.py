"""The RabbitMQ the tests share (127.0.0.1:5672, guest/guest by default).

The server is shared, so a test names its own queues (its namespace is in
them) and deletes them, with their delayed and dead-letter queues, after.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from dramatiq.common import dq_name, xq_name

from app.settings import Settings
from tests.support.services import service_missing

DEFAULT_TEST_RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


def rabbitmq_test_url() -> str:
    return os.environ.get("COVWORKER_TEST_RABBITMQ_URL", DEFAULT_TEST_RABBITMQ_URL)


def require_rabbitmq() -> str:
    """The URL of a RabbitMQ that answers (skip, or fail under CI=true, if none)."""
    try:
        import pika

        pika.BlockingConnection(pika.URLParameters(rabbitmq_test_url())).close()
    except Exception as exc:
        service_missing("RabbitMQ", exc)
    return rabbitmq_test_url()


def delete_queues(queues: Iterable[str], url: str | None = None) -> None:
    """Delete ``queues`` and their ``.DQ``/``.XQ`` queues (missing ones are fine),
    on the RabbitMQ at ``url`` (the tests' by default; a benchmark names its own)."""
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(url or rabbitmq_test_url()))
    try:
        for queue in queues:
            for name in (queue, dq_name(queue), xq_name(queue)):
                channel = connection.channel()
                with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):
                    channel.queue_delete(name)
                with contextlib.suppress(Exception):
                    channel.close()
    finally:
        connection.close()


def delete_covworker_queues(queue_name: str, url: str | None = None) -> None:
    """Delete every queue covworker declares for ``COVWORKER_QUEUE_NAME=queue_name``
    (the shared, finisher and bulk queues, each with its ``.DQ``/``.XQ``)."""
    delete_queues(Settings(queue_name=queue_name).queue_names, url)
