"""A SeaweedFS S3 server and services storing payloads in it, for the storage tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.db.models import Repository
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload
from app.runtime.services import Services
from app.storage.s3 import S3Store
from tests.support.pipeline import unit_services
from tests.support.seaweedfs import SeaweedS3

SHA = "a" * 40
LCOV = b"SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n"


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    server = SeaweedS3(tmp_path_factory.mktemp("s3"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def services(tmp_path: Path, seaweed: SeaweedS3) -> Iterator[Services]:
    overrides = {k.removeprefix("COVWORKER_").lower(): v for k, v in seaweed.env().items()}
    overrides["s3_bucket"] = f"t-{os.urandom(4).hex()}"
    services = unit_services(tmp_path, **overrides)
    s3_store(services).ensure_bucket()  # as the api does at start-up
    yield services
    services.close()


def s3_store(services: Services) -> S3Store:
    assert isinstance(services.payload_store, S3Store)
    return services.payload_store


def awaiting_upload(services: Services, name: str = "acme/calc") -> tuple[int, Repository]:
    """A repository and an upload of it awaiting its payload (a presigned URL handed out)."""
    with services.sessions.begin() as session:
        repo = Repository(name=name)
        session.add(repo)
    upload_id = add_awaiting_upload(services, repo, SHA, CommitMeta(), UploadMeta(), "")
    return upload_id, repo
