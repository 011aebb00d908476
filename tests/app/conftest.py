from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.runtime.services import Services
from tests.support.fake_github import GITHUB_SPEC, FakeGitHub, PrismProxy, prism_proxy
from tests.support.pipeline import Pipeline, real_services, unit_services
from tests.support.services import fresh_database, redis_test_url, require_redis


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    """fakeredis + a migrated SQLite file, closed after the test."""
    services = unit_services(tmp_path)
    yield services
    services.close()


@pytest.fixture(
    params=[
        pytest.param("embedded", id="fakeredis+sqlite"),
        pytest.param("real", id="redis+postgres", marks=pytest.mark.integration),
    ]
)
def pipeline(request: pytest.FixtureRequest, tmp_path: Path, namespace: str) -> Iterator[Pipeline]:
    """The pipeline's steps on fakeredis + SQLite, and on real Redis + PostgreSQL."""
    if request.param == "embedded":
        services = unit_services(tmp_path)
        yield Pipeline(services)
        services.close()
        return
    require_redis()
    with fresh_database(migrated=True) as url:
        services = real_services(redis_test_url(), url, namespace)
        yield Pipeline(services)
        services.close()


@pytest.fixture
def real_pipeline(namespace: str) -> Iterator[Pipeline]:
    """The pipeline's steps on real Redis + PostgreSQL only."""
    require_redis()
    with fresh_database(migrated=True) as url:
        services = real_services(redis_test_url(), url, namespace)
        yield Pipeline(services)
        services.close()


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, PrismProxy]]:
    """The fake GitHub behind Prism; a call its OpenAPI description refuses fails the test."""
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []
