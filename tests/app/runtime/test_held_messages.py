"""Messages RabbitMQ's consumers hold: each worker reports its own to Redis
(``HeldMessagesReport``), and ``reported_held`` sums the reports of the live ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import fakeredis
import pytest

from app.runtime.held_messages import HeldMessagesReport, held_by, reported_held
from app.runtime.state import held_messages_key
from tests.support.threads import CountedStop

pytestmark = pytest.mark.timeout(30)


def consumer_holding(*tags: int) -> Any:
    """A consumer thread of Dramatiq's RabbitMQ broker, holding these delivery tags."""
    return SimpleNamespace(consumer=SimpleNamespace(known_tags=set(tags)))


@pytest.fixture
def client() -> Iterator[fakeredis.FakeRedis]:
    client = fakeredis.FakeRedis()
    yield client
    client.close()


def test_held_by_counts_the_tags_each_consumer_holds_by_queue() -> None:
    worker: Any = SimpleNamespace(
        consumers={
            "covworker": consumer_holding(1, 2, 3),
            "covworker.DQ": consumer_holding(4),
            "other": SimpleNamespace(consumer=SimpleNamespace()),  # Redis: it keeps no tags
        }
    )
    assert held_by(worker) == {"covworker": 3, "covworker.DQ": 1}


def test_no_report_means_no_count(client: fakeredis.FakeRedis) -> None:
    assert reported_held(client, "ns", ["covworker"]) is None


def test_the_reports_are_summed_in_flight_and_delayed_for_the_queues_asked(
    client: fakeredis.FakeRedis,
) -> None:
    client.set(held_messages_key("ns", "a:1"), json.dumps({"covworker": 2, "covworker.DQ": 1}))
    client.set(held_messages_key("ns", "b:2"), json.dumps({"covworker": 3, "other": 7}))
    client.set(held_messages_key("ns", "c:3"), b"not json")  # skipped, not fatal
    client.set(held_messages_key("elsewhere", "d:4"), json.dumps({"covworker": 100}))
    assert reported_held(client, "ns", ["covworker"]) == (5, 1)
    assert reported_held(client, "ns", ["covworker", "other"]) == (12, 1)


def test_a_worker_reports_what_it_holds_until_it_shuts_down(client: fakeredis.FakeRedis) -> None:
    consumers = {"covworker": consumer_holding(1, 2)}
    worker: Any = SimpleNamespace(consumers=consumers)
    report = HeldMessagesReport(client, "ns", interval_s=0.001)
    stop = report._stop = CountedStop()
    report.after_worker_boot(None, worker)  # type: ignore[arg-type]
    try:
        assert stop.wait_rounds(1)
        assert json.loads(client.get(report.key) or b"") == {"covworker": 2}
        assert 0 < client.ttl(report.key) <= 1, "a report expires unless renewed"
        consumers["covworker"] = consumer_holding(1, 2, 3)
        assert stop.wait_rounds(2)
        assert reported_held(client, "ns", ["covworker"]) == (3, 0)
    finally:
        report.before_worker_shutdown(None, worker)  # type: ignore[arg-type]
    assert client.get(report.key) is None, "a stopped worker is no longer counted"
    assert report._thread is None


def test_a_redis_error_is_logged_and_the_next_round_reports_again(
    client: fakeredis.FakeRedis, caplog: pytest.LogCaptureFixture
) -> None:
    worker: Any = SimpleNamespace(consumers={"covworker": consumer_holding(1)})
    failures = [ConnectionError("redis restarting")]
    set_ = client.set

    def flaky_set(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return set_(*args, **kwargs)

    client.set = flaky_set  # type: ignore[method-assign]
    report = HeldMessagesReport(client, "ns", interval_s=0.001)
    stop = report._stop = CountedStop()
    report.after_worker_boot(None, worker)  # type: ignore[arg-type]
    try:
        assert stop.wait_rounds(2)
        assert reported_held(client, "ns", ["covworker"]) == (1, 0)
    finally:
        report.before_worker_shutdown(None, worker)  # type: ignore[arg-type]
    assert "Could not report the messages this worker holds" in caplog.text
