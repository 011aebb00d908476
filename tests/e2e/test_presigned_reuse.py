"""Presigned PUT URLs used against covworker: again after processing, with
more than the limit, and objects of failed uploads.

Real ``covworker serve`` and ``dramatiq`` workers, Redis, PostgreSQL and a
SeaweedFS store; the PUTs go straight to the store, as an uploader's do.
A presigned URL can be used until it expires and the store does not bound
what it is sent, so the processor looks at the object's size first
(deleting one over the limit unread: the store sends the worker none of a
60 MiB object, by its own count, for well under a CPU-second; ``-s`` prints
the figures) and parses a copy out of the URL's reach; retention deletes
the objects of failed uploads as of merged ones.
The keys name the repository by an HMAC keyed by the store's secret, not an
MD5 of its id and name that anyone can compute.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from app.db.models import Upload, UploadState
from app.storage import repo_hash, taken_key
from tests.e2e.test_object_storage import _stack
from tests.support.processes import (
    covworker,
    covworker_serve,
    dramatiq_workers,
    process_cost,
    reset_peak_rss,
)
from tests.support.seaweedfs import BUCKET

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

MIB = 1024 * 1024
LIMIT = 10 * MIB
FIRST = b"SF:calc.py\nDA:1,1\nDA:2,1\nend_of_record\n"
SECOND = b"SF:calc.py\nDA:1,0\nDA:2,0\nDA:3,0\nend_of_record\n"


def _create(base_url: str, token: str, sha: str) -> str:
    reply = httpx.post(
        f"{base_url}/upload/github/acme::::calc/upload-coverage",
        json={"commitid": sha, "branch": "main", "code": "default", "name": "job"},
        headers={"Authorization": f"token {token}"},
        timeout=60,
    )
    assert reply.status_code == 201, reply.text
    return str(reply.json()["raw_upload_location"])


def _put(url: str, body: bytes) -> None:
    answer = httpx.put(url, content=body, timeout=120)
    assert answer.status_code == 200, answer.text


def _final(engine: sa.Engine, count: int, timeout_s: float = 120) -> list[sa.Row]:
    """The uploads, once ``count`` of them are merged or in error."""
    deadline = time.monotonic() + timeout_s
    while True:
        with engine.connect() as conn:
            rows = list(
                conn.execute(
                    sa.select(Upload.id, Upload.state, Upload.storage_path, Upload.error)
                    .where(Upload.state != UploadState.AWAITING)
                    .order_by(Upload.id)
                )
            )
        done = [r for r in rows if r.state in (UploadState.MERGED, UploadState.ERROR)]
        if len(done) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_a_presigned_url_reused_after_processing_an_oversized_put_and_failed_uploads_objects(
    tmp_path: Path, namespace: str
) -> None:
    settings = {"COVWORKER_S3_PRESIGN": "true", "COVWORKER_MAX_UPLOAD_BYTES": str(LIMIT)}
    with _stack(tmp_path, namespace, **settings) as (_, sha, db_url, store, env, token):
        engine = sa.create_engine(db_url)
        try:
            with (
                dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=2) as workers,
                covworker_serve(env, tmp_path / "api.log", workers=1) as served,
            ):
                reused = _create(served.url, token, sha)
                _put(reused, FIRST)
                _final(engine, 1)
                _put(reused, SECOND)  # the same URL again, after processing
                oversized = _create(served.url, token, sha)
                reset_peak_rss(workers.pid)
                idle, sent = process_cost(workers.pid), store.sent_bytes()
                _put(oversized, b"#" * (60 * MIB))  # the store takes it: nothing bounds a PUT
                _final(engine, 2)
                worker, read = process_cost(workers.pid), store.sent_bytes() - sent
                failed = _create(served.url, token, sha)
                _put(failed, b"not a report")
                rows = _final(engine, 3)
                control = store.sent_bytes() - sent - read  # the meter counts a parsed payload
            assert [r.state for r in rows] == [
                UploadState.MERGED, UploadState.ERROR, UploadState.ERROR,
            ], rows  # fmt: skip
            first, big, bad = rows
            # the repository's part of each key: guessed by nobody without the secret
            md5 = hashlib.md5(b"1:acme/calc", usedforsecurity=False).hexdigest().upper()
            keyed = repo_hash(1, "acme/calc", env["COVWORKER_S3_SECRET_ACCESS_KEY"])
            assert all(f"/{keyed}/" in r.storage_path and md5 not in r.storage_path for r in rows)
            objects = store.objects()
            # what was processed is out of the URL's reach, whatever the URL wrote since
            got = store.client().get_object(BUCKET, taken_key(first.storage_path)).read()
            assert got == FIRST
            assert objects[first.storage_path] == len(SECOND)  # the second PUT, never read
            # the 60 MiB object was deleted unread, and the upload says why
            assert big.error == (
                f"the payload is {60 * MIB} bytes, over the limit of {LIMIT} bytes "
                "(COVWORKER_MAX_UPLOAD_BYTES); its object was deleted unread"
            )
            assert not any(k.startswith(big.storage_path) for k in objects)
            # what the worker paid for it: its size looked up, not its bytes read
            cpu_s, peak = worker.cpu_s - idle.cpu_s, max(0, worker.peak_rss - idle.peak_rss)
            print(
                f"60 MiB PUT under a 10 MiB limit: the store sent the worker {read:,} bytes, "
                f"{cpu_s:.2f} CPU-s, peak RSS +{peak / MIB:.1f} MiB; stored after: 0 bytes; "
                f"the URL reused after processing: {len(FIRST)} bytes parsed and kept, "
                f"{len(SECOND)} written since, never read; the failed upload's read: {control}"
            )
            assert read < MIB and cpu_s < 1 and peak < 16 * MIB, (read, worker, idle)
            assert control >= len(b"not a report"), control
            assert objects[taken_key(bad.storage_path)] == len(b"not a report")
            # retention (past COVWORKER_RAW_RETENTION_DAYS) deletes every object of both
            with engine.begin() as conn:
                conn.execute(
                    sa.text(
                        "UPDATE uploads SET merged_at = merged_at - interval '31 days', "
                        "updated_at = updated_at - interval '31 days'"
                    )
                )
            swept = covworker(env, "sweep")
            assert swept.returncode == 0, swept.stderr
            assert store.objects() == {}
        finally:
            engine.dispose()
