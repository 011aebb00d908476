"""Uploads created over HTTP, before and after their payload (embedded pipeline)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from app.db.engine import ASYNC_POOL_SIZE, make_async_engine
from app.db.models import Commit, CommitReport, Repository, Upload, UploadState, utcnow
from app.embedded import embedded
from app.ingest.store import (
    CommitMeta,
    UploadMeta,
    add_awaiting_upload,
    add_awaiting_upload_async,
    create_awaiting_upload,
    store_payload,
    upload_counts,
    upsert_commit,
)
from app.recovery.sweeper import sweep
from app.runtime.services import Services
from tests.support.pipeline import real_services, unit_services


def test_an_upload_awaiting_its_payload_is_outside_the_sweep_and_the_counts(
    tmp_path: Path,
) -> None:
    with embedded(database_path=tmp_path / "s.db") as runtime:
        services = runtime.app.services
        with services.sessions.begin() as session:
            repo = Repository(name="acme/web")
            session.add(repo)
            session.flush()
            commit = upsert_commit(session, repo, "a" * 40, CommitMeta(branch="main", pullid=3))
            upload = create_awaiting_upload(session, commit, UploadMeta(flags=["unit"]), "v1")
            commit_id, upload_id = commit.id, upload.id
        sent: list[object] = []
        result = sweep(
            services,
            send_processor=sent.append,
            send_finisher=lambda *a: sent.append(a),
            send_notify=lambda *a: sent.append(a),
            now=utcnow() + timedelta(days=1),
        )
        assert result.reprocessed == [] and sent == []
        assert upload_counts(services, commit_id)["uploads_total"] == 0

        assert store_payload(services, upload_id, b"SF:a.py\nDA:1,1\nend_of_record\n") is not None
        assert store_payload(services, upload_id, b"again") is None  # single use
        with services.sessions() as session:
            stored = session.execute(
                sa.select(Upload.state, Upload.raw, Upload.branch, Upload.pullid)
            ).one()
        assert tuple(stored) == (
            UploadState.UPLOADED,
            b"SF:a.py\nDA:1,1\nend_of_record\n",
            "main",
            3,
        )
        assert upload_counts(services, commit_id) == {
            "uploads_total": 1,
            "uploads_success": 0,
            "uploads_processing": 1,
            "uploads_error": 0,
        }


@pytest.fixture(params=["sqlite", "postgresql"])
def any_services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    """The same store on the embedded SQLite and on a real PostgreSQL + Redis."""
    if request.param == "sqlite":
        services = unit_services(tmp_path)
    else:
        redis_url = request.getfixturevalue("redis_url")
        pg_url = request.getfixturevalue("pg_url")
        services = real_services(redis_url, pg_url, request.getfixturevalue("namespace"))
    try:
        yield services
    finally:
        services.close()


Adder = Callable[[Services, Repository, str, CommitMeta, UploadMeta, str], int]


async def _add_on_a_loop(services: Services, *args: Any) -> int:
    engine = make_async_engine(services.engine)  # None on SQLite: the thread pool
    try:
        return await add_awaiting_upload_async(services, engine, *args)
    finally:
        if engine is not None:
            await engine.dispose()


@pytest.fixture(params=["in a thread", "on an event loop"])
def add_upload(request: pytest.FixtureRequest) -> Adder:
    """``add_awaiting_upload`` as the threaded handlers call it, and
    ``add_awaiting_upload_async`` as create-upload calls it on its loop."""
    if request.param == "in a thread":
        return add_awaiting_upload
    return lambda services, *args: asyncio.run(_add_on_a_loop(services, *args))


def test_uploads_created_in_one_statement_fill_the_commit_once_and_copy_it(
    any_services: Services, add_upload: Adder
) -> None:
    services, add_awaiting_upload = any_services, add_upload
    with services.sessions.begin() as session:
        repo = Repository(name="acme/web")
        session.add(repo)
    sha = "b" * 40
    meta = UploadMeta(flags=["unit"], name="job 1", job_code="7", env={"OS": "linux"})
    first = add_awaiting_upload(services, repo, sha, CommitMeta(branch="main"), meta, "v1")
    # The commit exists and has a branch: a later upload's branch does not replace it.
    second = add_awaiting_upload(services, repo, sha, CommitMeta(branch="dev"), UploadMeta(), "v1")
    # It has no pull request yet: this upload fills it, and copies it.
    third = add_awaiting_upload(
        services, repo, sha, CommitMeta(pullid=12, parent_commit_id="c" * 40), UploadMeta(), "v1"
    )
    fourth = add_awaiting_upload(services, repo, sha, CommitMeta(pullid=99), UploadMeta(), "legacy")
    with services.sessions() as session:
        commit = session.scalars(sa.select(Commit)).one()
        rows = session.execute(
            sa.select(
                Upload.id, Upload.commit_id, Upload.state, Upload.branch, Upload.pullid,
                Upload.parent_commit_id, Upload.flags, Upload.name, Upload.job_code, Upload.env,
                Upload.payload_format, Upload.raw_size, Upload.created_at,
            ).order_by(Upload.id)
        ).all()  # fmt: skip
    assert (commit.branch, commit.pullid, commit.parent_commit_id) == ("main", 12, "c" * 40)
    assert [r.id for r in rows] == [first, second, third, fourth]
    assert {r.commit_id for r in rows} == {commit.id}
    assert {r.state for r in rows} == {UploadState.AWAITING}
    assert [(r.branch, r.pullid, r.parent_commit_id) for r in rows] == [
        ("main", None, None),
        ("main", None, None),
        ("main", 12, "c" * 40),
        ("main", 12, "c" * 40),
    ]
    assert (rows[0].flags, rows[0].name, rows[0].job_code, rows[0].env) == (
        ["unit"], "job 1", "7", {"OS": "linux"},
    )  # fmt: skip
    assert (rows[1].flags, rows[1].env, rows[3].payload_format) == ([], None, "legacy")
    assert all(r.raw_size == 0 and r.created_at is not None for r in rows)

    stored = store_payload(services, fourth, b"SF:a.py\nDA:1,1\nend_of_record\n")
    assert stored == (repo.id, commit.id)
    assert store_payload(services, fourth, b"again") is None  # the fence: single use
    assert store_payload(services, 10**9, b"no such upload") is None
    assert upload_counts(services, commit.id)["uploads_total"] == 1


def test_the_jobs_of_a_new_commit_uploading_at_once_create_it_once_with_one_report(
    any_services: Services,
) -> None:
    services = any_services
    with services.sessions.begin() as session:
        repo = Repository(name="acme/web")
        session.add(repo)
    sha, jobs = "d" * 40, 12

    async def burst() -> list[int]:
        engine = make_async_engine(services.engine)
        try:
            ids = await asyncio.gather(
                *(
                    add_awaiting_upload_async(
                        services, engine, repo, sha, CommitMeta(branch="main", pullid=4),
                        UploadMeta(name=f"job {i}"), "v1",
                    )
                    for i in range(jobs)
                )
            )  # fmt: skip
            # The pool's connections are back in autocommit: later uploads are committed.
            for _ in range(ASYNC_POOL_SIZE + 1):
                args = (repo, sha, CommitMeta(), UploadMeta(), "v1")
                ids.append(await add_awaiting_upload_async(services, engine, *args))
            return ids
        finally:
            if engine is not None:
                await engine.dispose()

    ids = asyncio.run(burst())
    with services.sessions() as session:
        commit = session.scalars(sa.select(Commit)).one()
        reports = session.execute(
            sa.select(
                CommitReport.commit_id, CommitReport.version, CommitReport.totals,
                CommitReport.report, CommitReport.updated_at.is_not(None),
            )
        ).all()  # fmt: skip
        rows = session.execute(sa.select(Upload.id, Upload.branch, Upload.pullid)).all()
    assert (commit.branch, commit.pullid) == ("main", 4)
    assert [tuple(r) for r in reports] == [(commit.id, 0, {}, None, True)]
    assert sorted(ids) == sorted(r.id for r in rows) and len(set(ids)) == jobs + ASYNC_POOL_SIZE + 1
    assert {(r.branch, r.pullid) for r in rows} == {("main", 4)}
