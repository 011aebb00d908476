"""Poison payloads through the real HTTP API end their upload once, and are notified.

A real ``covworker serve`` and real ``dramatiq app.actors`` workers on real
Redis and PostgreSQL. Each payload is POSTed as the legacy uploader does
(``/upload/v2``), on a commit of its own: deeply nested v1 JSON (the JSON
decoder's ``RecursionError``), a legacy fix line of 5,000 digits (Python's
int-digit limit) and a coverage file whose name holds a NUL byte (which
PostgreSQL refuses in text). Each must end ``error`` with a reason on its
first delivery, never be retried or dead-lettered, and have its commit
notified; a good payload sent beside them merges.
"""

from __future__ import annotations

import time
from pathlib import Path

import dramatiq
import httpx
import pytest
import redis
import sqlalchemy as sa

from app.db.models import Commit, Notification, Upload, UploadState
from tests.support.faults.harness import join_queue, record
from tests.support.payloads import LCOV, LONG_FIX_LINE, NESTED_V1, NUL_NAMED_V1
from tests.support.private_services import wait_until
from tests.support.processes import add_repo, covworker_serve, dramatiq_workers, migrated_database
from tests.support.services import redis_test_url

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

PAYLOADS = {
    "nested": (NESTED_V1, "nested"),
    "digits": (LONG_FIX_LINE, "more than 9 digits"),
    "nul": (NUL_NAMED_V1, "bad\\x00name.xml"),
    "good": (b"# path=a.info\n" + LCOV + b"<<<<<< EOF\n", None),
}


def outcomes(db_url: str) -> dict[str, tuple[str, str | None, int]]:
    """Per commit SHA: its upload's state and error, and its notifications."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(Commit.sha, Upload.state, Upload.error, Commit.id).join(
                    Upload, Upload.commit_id == Commit.id
                )
            ).all()
            notified = dict(
                conn.execute(
                    sa.select(Notification.commit_id, sa.func.count()).group_by(
                        Notification.commit_id
                    )
                ).all()
            )
    finally:
        engine.dispose()
    return {sha: (state, error, notified.get(cid, 0)) for sha, state, error, cid in rows}


def test_poison_payloads_over_http_end_in_error_once_and_are_notified(
    tmp_path: Path, namespace: str
) -> None:
    shas = {name: f"{i + 1:x}".rjust(40, "c") for i, name in enumerate(PAYLOADS)}
    with migrated_database(namespace) as (db_url, env):
        token = add_repo(env, "acme/poison")
        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=2),
            covworker_serve(env, tmp_path / "serve.log") as served,
        ):
            sent_at = time.monotonic()
            for name, (body, _) in PAYLOADS.items():
                answer = httpx.post(
                    f"{served.url}/upload/v2",
                    params={"commit": shas[name], "token": token, "slug": "acme/poison"},
                    content=body,
                    timeout=60,
                )
                assert answer.status_code == 200, answer.text
            wait_until(
                "every upload final and every commit notified",
                lambda: (
                    all(
                        state in (UploadState.MERGED, UploadState.ERROR) and notified
                        for state, _, notified in outcomes(db_url).values()
                    )
                    and len(outcomes(db_url)) == len(PAYLOADS)
                ),
                timeout_s=120,
            )
            settled_s = time.monotonic() - sent_at
            join_queue(redis_test_url(), namespace, timeout_s=60)
        client = redis.Redis.from_url(redis_test_url())
        try:
            dead = [
                dramatiq.Message.decode(raw)
                for raw in client.hvals(f"{namespace}-dramatiq:covworker.XQ.msgs")
            ]
        finally:
            client.close()
        found = outcomes(db_url)
        worker_log = (tmp_path / "worker.log").read_text(errors="replace")

    record("poison-payloads-over-http", uploads=len(PAYLOADS), settled_s=round(settled_s, 1))
    for name, (_, reason) in PAYLOADS.items():
        state, error, notified = found[shas[name]]
        if reason is None:
            assert (state, error, notified) == (UploadState.MERGED, None, 1)
        else:
            assert state == UploadState.ERROR and reason in (error or ""), (name, error)
            assert "\x00" not in (error or "") and notified == 1
    assert dead == [], "nothing dead-lettered"
    assert "Retrying" not in worker_log and "Traceback" not in worker_log
