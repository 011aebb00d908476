from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api import create_app
from app.embedded import EmbeddedRuntime, embedded


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    """The embedded pipeline (fakeredis, SQLite, in-process worker)."""
    with embedded(database_path=tmp_path / "api.db", upload_url_secret="s3cret") as rt:
        yield rt


@pytest.fixture
def client(runtime: EmbeddedRuntime) -> Iterator[TestClient]:
    with TestClient(create_app(covworker=runtime.app)) as c:
        yield c
