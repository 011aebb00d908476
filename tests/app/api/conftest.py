from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import Commit, Upload
from app.embedded import EmbeddedRuntime, embedded
from app.repos import add_repository
from tests.support.paths import FIXTURES

SHA = "a" * 40
MAX_BYTES = 200_000


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    """The embedded pipeline (fakeredis, SQLite, in-process worker)."""
    with embedded(
        database_path=tmp_path / "api.db",
        upload_url_secret="s3cret",
        max_upload_bytes=MAX_BYTES,
        allowed_hosts="testserver",
    ) as rt:
        yield rt


@pytest.fixture
def client(runtime: EmbeddedRuntime) -> Iterator[TestClient]:
    with TestClient(create_app(covworker=runtime.app)) as c:
        yield c


def add_repo(runtime: EmbeddedRuntime, name: str, service: str = "github") -> str:
    with runtime.app.services.sessions.begin() as session:
        return add_repository(session, name, service).token


@pytest.fixture
def token(runtime: EmbeddedRuntime) -> str:
    return add_repo(runtime, "acme/web")


def v1_payload(*reports: tuple[str, bytes], network: list[str] | None = None) -> bytes:
    files = [
        {
            "filename": name,
            "format": "base64+compressed",
            "data": base64.b64encode(zlib.compress(data)).decode(),
            "labels": "",
        }
        for name, data in reports
    ]
    return json.dumps(
        {
            "report_fixes": {"format": "legacy", "value": {}},
            "network_files": network or [],
            "coverage_files": files,
            "metadata": {},
        }
    ).encode()


def report(name: str) -> bytes:
    return (FIXTURES / "reports" / "coveragepy" / name).read_bytes()


def counts(runtime: EmbeddedRuntime) -> tuple[int, int]:
    """(commits, uploads) stored."""
    with runtime.app.services.sessions() as session:
        return (
            session.scalar(sa.select(sa.func.count()).select_from(Commit)) or 0,
            session.scalar(sa.select(sa.func.count()).select_from(Upload)) or 0,
        )
