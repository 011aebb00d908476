from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import Commit, Upload
from app.db.repos import add_repository
from app.embedded import EmbeddedRuntime, embedded
from tests.app.web.conftest import GATE_DEFERRAL
from tests.support.paths import FIXTURES

SHA = "a" * 40
MAX_BYTES = 200_000
BASE = "/upload/github/acme::::web"
REFUSED = (
    "the upload token is not valid for repository {} (or there is no such repository: "
    "`covworker repo add` creates one)"
)
UPLOAD_BODY = {
    "ci_service": "github-actions",
    "ci_url": "https://ci.example/run/7",
    "env": {"PYTHON": "3.11"},
    "flags": ["unit", "backend"],
    "job_code": "unit",
    "name": "py311",
    "cli_args": {"build_code": "42"},
    "version": "11.3.1",
}
COVERAGE_BODY = {
    **UPLOAD_BODY,
    "branch": "main",
    "code": "default",
    "commitid": SHA,
    "parent_commit_id": "b" * 40,
    "pullid": "7",
}


def auth(token: str) -> dict[str, str]:
    """The header codecov-cli sends its upload token in."""
    return {"Authorization": f"token {token}"}


def put_path(location: str) -> str:
    """The path and query of a PUT URL handed out, for the TestClient."""
    parts = urlsplit(location)
    return f"{parts.path}?{parts.query}"


@contextmanager
def api_runtime(tmp_path: Path, **settings: Any) -> Iterator[EmbeddedRuntime]:
    """The embedded pipeline (fakeredis, SQLite, in-process worker) as the API
    tests run it; ``settings`` add to or override its settings."""
    with embedded(
        **{
            "database_path": tmp_path / "api.db",
            "upload_url_secret": "s3cret",
            "max_upload_bytes": MAX_BYTES,
            "allowed_hosts": "testserver",
            "finisher_debounce_ms": 0,  # the API does not depend on how passes are batched
            **GATE_DEFERRAL,  # nor on when a deferred message runs
            **settings,
        }
    ) as rt:
        yield rt


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    """The embedded pipeline (fakeredis, SQLite, in-process worker)."""
    with api_runtime(tmp_path) as rt:
        yield rt


@pytest.fixture
def client(runtime: EmbeddedRuntime) -> Iterator[TestClient]:
    with TestClient(create_app(covworker=runtime.app)) as c:
        yield c


def create_upload(client: TestClient, token: str) -> str:
    """A new awaiting upload (POST upload-coverage, 201); the path of its PUT URL."""
    created = client.post(f"{BASE}/upload-coverage", json=COVERAGE_BODY, headers=auth(token))
    assert created.status_code == 201, created.text
    return put_path(created.json()["raw_upload_location"])


def upload_payload(client: TestClient, token: str, payload: bytes) -> str:
    """A new upload with ``payload`` PUT (200); the path of its PUT URL."""
    path = create_upload(client, token)
    assert client.put(path, content=payload).status_code == 200
    return path


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
