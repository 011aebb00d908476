"""``Services``: the connections and tunables built once from ``Settings``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import sqlalchemy as sa
from redis import Redis
from sqlalchemy.orm import Session, sessionmaker

import app.runtime.cluster
from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import upgrade
from app.db.models import Instance
from app.errors import ConfigurationError
from app.runtime.services import Services, _redis_client, instance_id
from app.settings import Settings
from tests.support.pipeline import sqlite_settings, unit_services


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    """Sessions on a migrated SQLite file, without the rest of ``Services``."""
    settings = sqlite_settings(tmp_path)
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def test_the_instance_id_is_the_one_the_schema_was_created_with(
    sessions: sessionmaker[Session],
) -> None:
    with sessions.begin() as session:
        created = session.scalar(sa.select(Instance.id))
        # A second row (a restored copy merged in, say) does not change it.
        session.add(Instance(id="later", created_at=datetime(2999, 1, 1, tzinfo=UTC)))
    assert created and instance_id(sessions) == created


def test_a_database_without_an_instance_id_says_to_migrate_it(
    sessions: sessionmaker[Session],
) -> None:
    with sessions.begin() as session:
        session.execute(sa.delete(Instance))
    with pytest.raises(ConfigurationError, match="run `covworker db upgrade`"):
        instance_id(sessions)


def test_a_redis_url_is_a_plain_client_unless_the_settings_name_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = sqlite_settings(tmp_path)
    plain = _redis_client(settings.model_copy(update=dict(redis_url="redis://127.0.0.1:1/3")))
    try:
        assert type(plain) is Redis
        assert plain.connection_pool.connection_kwargs["db"] == 3
    finally:
        plain.close()
    seeds: list[str] = []

    def cluster_client(url: str) -> Any:
        seeds.append(url)
        return "a cluster client"

    monkeypatch.setattr(app.runtime.cluster, "cluster_client", cluster_client)
    # As a deployment says it: the cluster flag (which needs RabbitMQ) from the environment.
    monkeypatch.setenv("COVWORKER_REDIS_CLUSTER", "true")
    monkeypatch.setenv("COVWORKER_BROKER_URL", "amqp://guest:guest@127.0.0.1:1/%2F")
    found = _redis_client(
        Settings(redis_url="redis://10.0.0.1:7000", database_url=settings.database_url)
    )
    assert (found, seeds) == ("a cluster client", ["redis://10.0.0.1:7000"])


def test_services_carry_the_settings_tunables(tmp_path: Path) -> None:
    settings = sqlite_settings(
        tmp_path,
        namespace="ci",
        intermediate_ttl_s=600,
        finisher_lock_timeout_s=12.5,
        max_upload_bytes=1234,
        parse_budget_mb=3,
        parses_at_once=3,
    )
    upgrade(settings.database_url)
    client = fakeredis.FakeRedis()
    services = Services.from_settings(settings, redis_client=client)
    try:
        assert services.redis is client
        assert services.state.client is client
        assert (services.state.namespace, services.state.intermediate_ttl_s) == ("ci", 600)
        assert services.state.lock_timeout_s == 12.5
        assert services.limits.max_bytes == 1234
        assert (services.parse_budget.capacity, services.parse_budget.parses) == (3_000_000, 3)
        assert services.payload_store is None, "payloads in the database by default"
        with services.sessions() as session:
            created = session.scalar(sa.select(Instance.id))
        assert services.state.prefix == f"ci:{created}", "keys carry the database's id"
    finally:
        services.close()


def test_closing_services_releases_the_engine_and_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = unit_services(tmp_path)
    closed: list[str] = []
    monkeypatch.setattr(services.redis, "close", lambda: closed.append("redis"))
    monkeypatch.setattr(services.engine, "dispose", lambda: closed.append("engine"))
    monkeypatch.setattr(services.providers, "close", lambda: closed.append("providers"))
    services.close()
    assert closed == ["providers", "engine", "redis"]


def test_the_pipeline_state_takes_the_finishers_lock_lease_and_batch_from_settings(
    tmp_path: Path,
) -> None:
    services = unit_services(tmp_path, finisher_min_batch=3, finisher_lock_timeout_s=7.0)
    try:
        assert (services.state.min_batch, services.state.lock_timeout_s) == (3, 7.0)
    finally:
        services.close()
