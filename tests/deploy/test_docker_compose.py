"""No Docker engine runs here, so the compose file is checked by reading it."""

from __future__ import annotations

import importlib
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(30)


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_redis_postgres_migrations_and_the_worker_with_health_checks() -> None:
    services = compose()["services"]
    assert {"redis", "postgres", "migrations", "worker"} <= set(services)
    for name in ("redis", "postgres", "worker"):
        assert services[name]["healthcheck"]["test"], name
    assert services["worker"]["depends_on"]["migrations"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["migrations"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_compose_commands_are_the_projects_real_entry_points() -> None:
    services = compose()["services"]
    worker = services["worker"]["command"]
    assert worker[:2] == ["dramatiq", "app.actors"]
    importlib.import_module("app.worker")  # what `dramatiq app.actors` builds on
    assert entry_points(group="console_scripts", name="dramatiq"), "dramatiq CLI installed"

    migrate = services["migrations"]["command"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert migrate == ["covworker", "db", "upgrade"]
    module, func = scripts["covworker"].split(":")
    main = getattr(importlib.import_module(module), func)
    with pytest.raises(SystemExit) as exit_info:
        main(["db", "upgrade", "--help"])
    assert exit_info.value.code == 0

    sweeper = services["sweeper"]["command"]
    assert sweeper[:3] == ["covworker", "sweep", "--every"] and float(sweeper[3]) > 0
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "--help"])
    assert exit_info.value.code == 0


def test_both_containers_get_the_service_urls() -> None:
    services = compose()["services"]
    for name in ("migrations", "worker", "sweeper"):
        env = services[name]["environment"]
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert (
            env["DATABASE_URL"].startswith("postgresql+psycopg://")
            and "@postgres:" in env["DATABASE_URL"]
        )
