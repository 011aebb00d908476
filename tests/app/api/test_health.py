from __future__ import annotations

import dramatiq.worker
import pytest
from fastapi.testclient import TestClient

from app.api import create_app
from app.embedded import EmbeddedRuntime


def test_healthz_answers_200_when_database_and_redis_answer(client: TestClient) -> None:
    reply = client.get("/healthz")
    assert reply.status_code == 200
    assert reply.json() == {"status": "ok", "database": "ok", "redis": "ok"}


def test_healthz_is_reachable_under_a_path_prefix_with_doubled_slashes(
    client: TestClient,
) -> None:
    assert client.get("/covworker//healthz").json()["status"] == "ok"


def test_healthz_answers_503_naming_redis_when_redis_is_down(
    monkeypatch: pytest.MonkeyPatch, runtime: EmbeddedRuntime
) -> None:
    # The worker's consumers, cut off too, wait this long before they reconnect,
    # and stopping the runtime waits for them (3 s by default).
    monkeypatch.setattr(dramatiq.worker, "CONSUMER_RESTART_DELAY_SECS", 0.05)
    with TestClient(create_app(covworker=runtime.app)) as c:
        runtime.app.services.redis.connection_pool.connection_kwargs["server"].connected = False
        reply = c.get("/healthz")
    assert reply.status_code == 503
    assert reply.json()["database"] == "ok"
    assert reply.json()["redis"].startswith("error")


def test_healthz_names_rabbitmq_when_it_is_the_broker_and_down(runtime: EmbeddedRuntime) -> None:
    services = runtime.app.services
    services.settings = services.settings.model_copy(
        update={"broker_url": "amqp://guest:guest@127.0.0.1:1/%2F"}  # nothing listens there
    )
    with TestClient(create_app(covworker=runtime.app)) as c:
        reply = c.get("/healthz")
    assert reply.status_code == 503
    assert (reply.json()["database"], reply.json()["redis"]) == ("ok", "ok")
    assert reply.json()["broker"].startswith("error: AMQPConnectionError")
