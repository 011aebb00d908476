"""Object storage with real SeaweedFS, Redis and PostgreSQL: presigned
uploads whose arrival chain was lost are found by the sweep (the
create-upload goes through the api, the payload through the presigned URL);
``covworker upload`` stores its payloads as objects."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import redis
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import CommitReport, Upload, UploadState, utcnow
from app.db.repos import add_repository
from app.ingest.arrival import (
    ARRIVAL_GRACE_S,
    KEY_DAY_SLACK_S,
    SWEEP_LOOKBACK_S,
    key_days,
)
from app.recovery import sweeper
from app.runtime.state import broker_namespace
from app.runtime.worker import CovworkerApp, build_app
from app.settings import Settings
from tests.support.pipeline import Outbox, Pipeline
from tests.support.private_services import free_port
from tests.support.processes import covworker, service_env
from tests.support.seaweedfs import SeaweedS3
from tests.support.services import fresh_database, redis_test_url, require_redis

pytestmark = [pytest.mark.integration]

SHA = "b" * 40
LCOV = b"SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n"


@pytest.fixture
def presigning_app(seaweed: SeaweedS3, namespace: str) -> Iterator[CovworkerApp]:
    """covworker on real Redis and PostgreSQL, handing out presigned PUTs."""
    require_redis()
    with fresh_database(migrated=True) as db_url:
        settings = _settings(seaweed, namespace, db_url, s3_presign=True)
        app = build_app(settings)
        try:
            yield app
        finally:
            app.close()


def _settings(seaweed: SeaweedS3, namespace: str, db_url: str, **overrides: object) -> Settings:
    store: dict[str, object] = {
        k.removeprefix("COVWORKER_").lower(): v for k, v in seaweed.env().items()
    }
    store["s3_bucket"] = f"t-{os.urandom(4).hex()}"
    return Settings(
        redis_url=redis_test_url(),
        database_url=db_url,
        namespace=namespace,
        upload_url_secret="presign-secret",
        allowed_hosts="testserver",
        **{**store, **overrides},  # type: ignore[arg-type]
    )


def _create_uploads(app: CovworkerApp, count: int) -> list[tuple[int, str]]:
    """``count`` create-upload calls through the api: (upload id, PUT URL) each."""
    with app.services.sessions.begin() as session:
        token = add_repository(session, "acme/calc").token
    created = []
    with TestClient(create_app(covworker=app)) as client:
        for _ in range(count):
            reply = client.post(
                "/upload/github/acme::::calc/upload-coverage",
                json={"commitid": SHA, "branch": "main", "code": "default"},
                headers={"Authorization": f"token {token}"},
            )
            assert reply.status_code == 201, reply.text
            body = reply.json()
            created.append((int(body["external_id"]), str(body["raw_upload_location"])))
    return created


def _age(app: CovworkerApp, upload_id: int, seconds: float) -> None:
    """As if the upload had been created ``seconds`` ago, for the sweep, which
    picks awaiting uploads by ``updated_at``. ``created_at`` stays: the
    object's key names the day the URL was handed out (derived from
    ``created_at``), and moving it back across midnight would make the sweep
    look under a day no key was ever given."""
    then = utcnow() - timedelta(seconds=seconds)
    with app.services.sessions.begin() as session:
        session.execute(sa.update(Upload).where(Upload.id == upload_id).values(updated_at=then))


def _sweep(app: CovworkerApp, outbox: Outbox) -> sweeper.SweepResult:
    return sweeper.sweep(
        app.services,
        send_processor=outbox.send_processor,
        send_finisher=outbox.send_finisher,
        send_notify=outbox.send_notify,
    )


def _lose_the_arrival_chain(app: CovworkerApp, upload_ids: list[int]) -> None:
    """Delete the broker's keys: the delayed ``payload_arrival`` messages go with them."""
    client = redis.Redis.from_url(app.settings.redis_url)
    try:
        keys = list(client.scan_iter(match=f"{broker_namespace(app.settings.namespace)}:*"))
        delayed = [
            json.loads(body)
            for key in keys
            if key.endswith(b".DQ.msgs")
            for body in client.hvals(key)
        ]
        assert sorted(m["args"][0] for m in delayed if m["actor_name"] == "payload_arrival") == (
            sorted(upload_ids)
        )
        client.delete(*keys)
    finally:
        client.close()


def _states(app: CovworkerApp) -> dict[int, str]:
    with app.services.sessions() as session:
        return {row[0]: row[1] for row in session.execute(sa.select(Upload.id, Upload.state))}


def test_the_sweep_admits_a_presigned_upload_whose_arrival_messages_were_lost_exactly_once(
    presigning_app: CovworkerApp,
) -> None:
    app = presigning_app
    (arrived, location), (never_sent, _), (too_old, old_location) = _create_uploads(app, 3)
    _lose_the_arrival_chain(app, [arrived, never_sent, too_old])
    assert httpx.put(location, content=LCOV).status_code == 200
    assert httpx.put(old_location, content=LCOV).status_code == 200
    sweeper.detect_redis_loss(app.services)  # the first epoch marker: an ordinary sweep next
    outbox = Outbox()

    # younger than the sweep's age: the arrival chain could still be on its way
    assert _sweep(app, outbox).admitted == [] and outbox.processor == []

    age = app.settings.sweep_after_s + 1
    _age(app, arrived, age)
    _age(app, never_sent, app.settings.upload_url_ttl_s + ARRIVAL_GRACE_S + age)
    _age(app, too_old, app.settings.upload_url_ttl_s + ARRIVAL_GRACE_S + SWEEP_LOOKBACK_S + 60)
    first = _sweep(app, outbox)
    assert first.admitted == [arrived] and outbox.processor == [arrived]
    again = _sweep(app, outbox)
    assert (again.admitted, again.reprocessed, outbox.processor) == ([], [], [arrived])
    # past its URL's expiry with no object: it stays awaiting, outside the counts
    assert _states(app) == {
        arrived: UploadState.UPLOADED,
        never_sent: UploadState.AWAITING,
        too_old: UploadState.AWAITING,
    }

    pipeline = Pipeline(app.services, outbox)
    assert pipeline.process(arrived) == UploadState.PROCESSED
    (repoid, commitid), *rest = outbox.finisher
    assert rest == []
    pipeline.finish(repoid, commitid)
    assert _states(app)[arrived] == UploadState.MERGED
    with app.services.sessions() as session:
        totals = session.scalar(sa.select(CommitReport.totals))
        storage_path = session.scalar(sa.select(Upload.storage_path).where(Upload.id == arrived))
    assert (totals["lines"], totals["hits"]) == (2, 1)
    assert storage_path is not None and storage_path.endswith(f"/{SHA}/{arrived}.txt")


def test_an_upload_created_just_before_midnight_is_looked_for_under_both_days() -> None:
    late = datetime(2026, 12, 1, 23, 59, 59, tzinfo=UTC) - timedelta(seconds=KEY_DAY_SLACK_S - 10)
    assert [d.isoformat() for d in key_days(late)] == ["2026-12-01", "2026-12-02"]
    assert [d.isoformat() for d in key_days(datetime(2026, 12, 1, 12, 0))] == ["2026-12-01"]


def _cli_env(settings: Settings, **overrides: str) -> dict[str, str]:
    store = {
        "COVWORKER_STORAGE": "s3",
        "COVWORKER_S3_ENDPOINT_URL": settings.s3_endpoint_url,
        "COVWORKER_S3_BUCKET": settings.s3_bucket,
        "COVWORKER_S3_REGION": settings.s3_region,
        "COVWORKER_S3_ACCESS_KEY_ID": settings.s3_access_key_id,
        "COVWORKER_S3_SECRET_ACCESS_KEY": settings.s3_secret_access_key,
    }
    return service_env(
        settings.redis_url, settings.database_url, settings.namespace, **{**store, **overrides}
    )


def test_covworker_upload_stores_its_payloads_as_objects_and_they_merge(
    presigning_app: CovworkerApp, seaweed: SeaweedS3, tmp_path: Path
) -> None:
    app = presigning_app
    first, second = tmp_path / "a.lcov", tmp_path / "b.lcov"
    first.write_bytes(LCOV)
    second.write_bytes(LCOV.replace(b"DA:2,0", b"DA:2,3"))
    env = _cli_env(app.settings)
    done = covworker(
        env, "upload", "--create", "--repo", "acme/calc", "--commit", SHA, str(first), str(second)
    )
    assert done.returncode == 0, done.stderr
    with app.services.sessions() as session:
        rows = session.execute(
            sa.select(
                Upload.id, Upload.state, Upload.storage_path, Upload.raw_size, Upload.raw
            ).order_by(Upload.id)
        ).all()
    assert [(r.state, r.raw, r.raw_size) for r in rows] == [
        (UploadState.UPLOADED, b"", len(LCOV)),
        (UploadState.UPLOADED, b"", len(LCOV)),
    ]
    client = seaweed.client()
    for row, path in zip(rows, (first, second), strict=True):
        assert re.search(rf"/{SHA}/{row.id}\.[0-9a-f]{{8}}\.txt$", row.storage_path)
        assert client.get_object(app.settings.s3_bucket, row.storage_path).read() == (
            path.read_bytes()
        )
    pipeline = Pipeline(app.services)
    assert [pipeline.process(row.id) for row in rows] == [UploadState.PROCESSED] * 2
    pipeline.finish(*pipeline.outbox.finisher[-1])
    with app.services.sessions() as session:
        totals = session.scalar(sa.select(CommitReport.totals))
    assert (totals["lines"], totals["hits"]) == (2, 2)


def test_covworker_upload_with_the_store_down_stores_nothing_and_says_so(
    presigning_app: CovworkerApp, tmp_path: Path
) -> None:
    app = presigning_app
    report = tmp_path / "a.lcov"
    report.write_bytes(LCOV)
    env = _cli_env(app.settings, COVWORKER_S3_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}")
    done = covworker(env, "upload", "--create", "--repo", "acme/calc", "--commit", SHA, str(report))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "not reachable" in done.stderr and "nothing was stored" in done.stderr
    with app.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Upload)) == 0
