"""Raw payloads in a real S3 server (SeaweedFS), through the real uploader.

``covworker serve --workers 2`` with ``COVWORKER_STORAGE=s3``, real
``dramatiq app.actors`` workers, Redis and PostgreSQL, and codecov-cli's
``upload-process``: every payload lands as one object under ``v4/raw/...``
(through covworker's PUT, or a presigned PUT straight to the store) and the
merged report equals ``covworker run-local`` of the same files. The store
down while an upload is sent: the uploader gets an error and nothing is
kept. The store down while workers process: they wait, and lose nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from app.db.models import Commit, CommitReport, Repository, Upload, UploadChunk, UploadState
from app.pullrequests.numbers import DisplayRounding, shown
from app.storage import taken_key
from tests.e2e.test_http_ingestion import (
    CLI_JOBS,
    LEGACY_FILES,
    codecovcli,
    make_checkout,
    settle,
    uploader_env,
)
from tests.e2e.test_stalled_puts import concurrent_puts
from tests.support.private_services import free_port
from tests.support.processes import (
    add_repo,
    covworker,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
)
from tests.support.seaweedfs import SeaweedS3, seaweedfs_s3
from tests.support.uploaders import uploader

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]


@pytest.fixture(params=[False, True], ids=["covworker_put", "presigned_put"])
def presign(request: pytest.FixtureRequest) -> bool:
    """Whether the uploader PUTs to covworker or, presigned, straight to the store."""
    return bool(request.param)


@contextmanager
def _stack(
    tmp_path: Path, namespace: str, **settings: str
) -> Iterator[tuple[Path, str, str, SeaweedS3, dict[str, str], str]]:
    """A checkout to upload from, a fresh database and a SeaweedFS store (its
    metrics served: ``SeaweedS3.sent_bytes``); covworker's environment on
    both (``settings`` over the store's), migrated, with the repository
    acme/calc: ``(checkout, its HEAD, database URL, store, environment,
    upload token)``."""
    checkout, sha = make_checkout(tmp_path)
    with (
        seaweedfs_s3(tmp_path / "s3", metrics_port=free_port()) as store,
        migrated_database(
            namespace, COVWORKER_UPLOAD_URL_SECRET="e2e-secret", **store.env(**settings)
        ) as (db_url, env),
    ):
        yield checkout, sha, db_url, store, env, add_repo(env, "acme/calc")


def _upload_job(
    env: dict[str, str], checkout: Path, base_url: str, token: str, sha: str, job: int
) -> tuple[int, str]:
    name, flags, files, _ = CLI_JOBS[job]
    args = ["-r", "acme/calc", "-C", sha, "-B", "main", "-t", token, "-n", name]
    args += [a for f in flags for a in ("-F", f)]
    args += [a for f in files for a in ("-f", f"reports/{f}")]
    done = codecovcli(env, checkout, base_url, "upload-process", *args)
    return done.returncode, done.stdout + done.stderr


def _uploads(db_url: str) -> list[sa.Row]:
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows = list(
            conn.execute(
                sa.select(
                    Upload.id, Upload.state, Upload.storage_path, Upload.raw_size, Upload.error
                ).order_by(Upload.id)
            )
        )
        assert conn.scalar(sa.select(sa.func.count()).select_from(UploadChunk)) == 0
        assert conn.scalar(sa.select(sa.func.count()).where(sa.func.length(Upload.raw) > 0)) == 0
    engine.dispose()
    return rows


def _totals(db_url: str, sha: str) -> dict[str, object]:
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        totals = conn.scalar(
            sa.select(CommitReport.totals)
            .join(Commit)
            .join(Repository)
            .where(Repository.name == "acme/calc", Commit.sha == sha)
        )
    engine.dispose()
    return totals  # type: ignore[no-any-return]


def _legacy_upload(
    env: dict[str, str], checkout: Path, base_url: str, token: str, sha: str
) -> subprocess.CompletedProcess[str]:
    """The legacy ``codecov`` uploader: gzip body, ``Content-Encoding: gzip``."""
    return subprocess.run(
        [uploader("codecov"), "--url", base_url, "-t", token,
         "--commit", sha, "--branch", "main", "--slug", "acme/calc", "--flags", "c",
         "--name", "legacy", "-X", "gcov", "--required", "--file",
         *(f"reports/c-{f}" for f in LEGACY_FILES)],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _run_local(
    env: dict[str, str], checkout: Path, sha: str, legacy: bool = False
) -> dict[str, object]:
    files = [str(checkout / "reports" / f) for _, _, fs, _ in CLI_JOBS for f in fs]
    if legacy:
        files += [str(checkout / "reports" / f"c-{f}") for f in LEGACY_FILES]
    local = covworker(env, "run-local", "--repo", "acme/calc", "--commit", sha, "--json", *files)
    assert local.returncode == 0, local.stderr
    totals: dict[str, object] = json.loads(local.stdout)["totals"]
    # The stored totals are the numbers; the display is made when shown.
    assert totals.pop("coverage_display") == shown(DisplayRounding(), totals["coverage"])  # type: ignore[arg-type]
    return totals


def test_codecovcli_uploads_land_as_objects_and_merge_like_run_local(
    tmp_path: Path, namespace: str, presign: bool
) -> None:
    settings = {"COVWORKER_S3_PRESIGN": str(presign).lower()}
    with _stack(tmp_path, namespace, **settings) as (checkout, sha, db_url, store, env, token):
        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
            covworker_serve(env, tmp_path / "api.log", workers=2) as served,
        ):
            for job in range(len(CLI_JOBS)):
                code, output = _upload_job(uploader_env(env), checkout, served.url, token, sha, job)
                assert code == 0, output
            legacy = _legacy_upload(uploader_env(env), checkout, served.url, token, sha)
            assert legacy.returncode == 0, legacy.stdout + legacy.stderr
            settle(env, 300)
            # (after the settle: a presigned URL's arrival is watched until it expires)
            location = _put_location(served.url, token)
            if not presign:  # two PUTs of one URL at once: one is stored, one refused
                assert sorted(concurrent_puts(location, 5 * 1024 * 1024)) == [200, 403]
                settle(env, 300)
        # presigned: the uploader is sent straight to the store, else to covworker
        assert location.startswith(store.endpoint_url if presign else served.url), location
        stored = [r for r in _uploads(db_url) if r.state != UploadState.AWAITING]
        # one object per stored upload, the copy the processor took (app.storage.take_object):
        # the refused one of the pair deleted its own
        assert {taken_key(r.storage_path): r.raw_size for r in stored} == store.objects()
        if not presign:  # the pair's upload (another commit; its body is not a report)
            assert stored[-1].state == UploadState.ERROR
            stored = stored[:-1]
        rows = stored
        assert [r.state for r in rows] == [UploadState.MERGED] * (len(CLI_JOBS) + 1), rows
        for row in rows:
            assert row.storage_path.startswith("v4/raw/")
            name = row.storage_path.rsplit("/", 1)[1]
            assert row.storage_path.split("/")[-2] == sha
            # an own-PUT object is {upload}.{attempt}.txt; a presigned one {upload}.txt
            if presign:
                assert name == f"{row.id}.txt"
            else:
                assert re.fullmatch(rf"{row.id}\.[0-9a-f]{{8}}\.txt", name), name
        assert _totals(db_url, sha) == _run_local(env, checkout, sha, legacy=True)
    assert " ERROR " not in (tmp_path / "worker.log").read_text()


def test_the_store_down_during_an_upload_fails_the_uploader_and_keeps_nothing(
    tmp_path: Path, namespace: str, presign: bool
) -> None:
    settings = {"COVWORKER_S3_PRESIGN": str(presign).lower()}
    with _stack(tmp_path, namespace, **settings) as (checkout, sha, db_url, store, env, token):
        with covworker_serve(env, tmp_path / "api.log", workers=1) as served:
            store.stop()
            code, output = _upload_job(uploader_env(env), checkout, served.url, token, sha, 0)
            assert code != 0, output
            store.start()
        rows = _uploads(db_url)
        assert [(r.state, r.storage_path) for r in rows] == [(UploadState.AWAITING, None)]
        assert store.objects() == {}


def test_the_store_down_during_processing_delays_the_merge_and_loses_nothing(
    tmp_path: Path, namespace: str
) -> None:
    with _stack(
        tmp_path, namespace, COVWORKER_MIN_BACKOFF_MS="200", COVWORKER_MAX_BACKOFF_MS="2000"
    ) as (checkout, sha, db_url, store, env, token):
        with covworker_serve(env, tmp_path / "api.log", workers=1) as served:
            for job in range(len(CLI_JOBS)):
                code, output = _upload_job(uploader_env(env), checkout, served.url, token, sha, job)
                assert code == 0, output
        assert len(store.objects()) == len(CLI_JOBS)
        store.stop()  # the payloads are stored; now the workers cannot read them
        with dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=2):
            log = tmp_path / "worker.log"
            _wait_for_text(log, "not reachable")
            assert {r.state for r in _uploads(db_url)} <= {
                UploadState.UPLOADED,
                UploadState.PROCESSING,
            }
            store.start()
            settle(env, 300)
        rows = _uploads(db_url)
        assert [r.state for r in rows] == [UploadState.MERGED] * len(CLI_JOBS), rows
        assert _totals(db_url, sha) == _run_local(env, checkout, sha)


def _put_location(base_url: str, token: str) -> str:
    """The PUT URL a create-upload hands out (of another commit; never used)."""
    reply = httpx.post(
        f"{base_url}/upload/github/acme::::calc/upload-coverage",
        json={"commitid": "d" * 40, "branch": "main", "code": "default"},
        headers={"Authorization": f"token {token}"},
        timeout=60,
    )
    assert reply.status_code == 201, reply.text
    return str(reply.json()["raw_upload_location"])


def _wait_for_text(log: Path, text: str, timeout_s: float = 120) -> None:
    from tests.support.private_services import wait_until

    wait_until(f"{text!r} in {log.name}", lambda: text in log.read_text(), timeout_s)


def test_seaweedfs_fixture_restarts_with_its_data(tmp_path: Path) -> None:
    server = SeaweedS3(tmp_path)
    server.start()
    try:
        client = server.client()
        client.make_bucket("restart-check")
        import io

        client.put_object("restart-check", "k.txt", io.BytesIO(b"kept"), 4)
        server.stop()
        server.start()
        assert server.client().get_object("restart-check", "k.txt").read() == b"kept"
    finally:
        server.stop()
