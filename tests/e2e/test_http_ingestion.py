"""The real, unmodified uploaders against a real ``covworker serve``.

codecov-cli (``codecovcli``) and the legacy ``codecov`` Python uploader, as
CI jobs run them, talk HTTP to ``covworker serve --workers 2``; real
``dramatiq app.actors`` workers process on real Redis and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from app.db.models import Commit, CommitReport, Repository, Upload, UploadState
from app.pullrequests.numbers import DisplayRounding, shown
from tests.support.brokers import BROKERS, broker_env, settle
from tests.support.processes import (
    add_repo,
    covworker,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
)
from tests.support.uploaders import (
    CLI_JOBS,
    LEGACY_FILES,
    PY,
    codecovcli,
    make_checkout,
    uploader,
    uploader_env,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

MAX_BYTES = 400_000


@pytest.mark.parametrize("broker", BROKERS)
def test_real_uploaders_merge_like_run_local_and_bad_uploads_store_nothing(
    broker: str, tmp_path: Path, namespace: str
) -> None:
    checkout, sha = make_checkout(tmp_path)
    reports = checkout / "reports"
    with (
        broker_env(broker, namespace) as chosen,
        migrated_database(
            namespace,
            COVWORKER_UPLOAD_URL_SECRET="e2e-secret",
            COVWORKER_MAX_UPLOAD_BYTES=str(MAX_BYTES),
            **chosen,
        ) as (db_url, env),
    ):
        token = add_repo(env, "acme/calc")
        other = add_repo(env, "acme/other")
        clients = uploader_env(env)
        common = ["-r", "acme/calc", "-C", sha, "-B", "main"]

        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=4),
            covworker_serve(env, tmp_path / "api.log", workers=2) as served,
        ):
            base_url = served.url
            for name, flags, files, command in CLI_JOBS:
                args = [*common, "-t", token, "-n", name]
                args += [a for f in flags for a in ("-F", f)]
                args += [a for f in files for a in ("-f", f"reports/{f}")]
                done = codecovcli(clients, checkout, base_url, command, *args)
                assert done.returncode == 0, done.stdout + done.stderr

            legacy = subprocess.run(
                [uploader("codecov"), "--url", base_url, "-t", token,
                 "--commit", sha, "--branch", "main", "--slug", "acme/calc", "--flags", "c",
                 "--name", "legacy", "-X", "gcov", "--required", "--file",
                 *(f"reports/c-{f}" for f in LEGACY_FILES)],
                cwd=checkout, env=clients, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert legacy.returncode == 0, legacy.stdout + legacy.stderr

            # refused: a wrong token, another repository's token, an over-size payload
            for bad in ("0" * 36, other):
                refused = codecovcli(
                    clients, checkout, base_url, "upload-coverage",
                    *common, "-t", bad, "-f", "reports/run-sum.xml",
                )  # fmt: skip
                assert refused.returncode != 0
                assert "not valid for repository acme/calc" in refused.stdout + refused.stderr
            big = reports / "big-coverage.info"
            rng = random.Random(7)
            big.write_text(
                "".join(
                    f"SF:f{rng.getrandbits(64):x}.py\nDA:1,1\nend_of_record\n"
                    for _ in range(40_000)
                )
            )
            oversize = codecovcli(
                clients, checkout, base_url, "upload-coverage",
                *common, "-t", token, "-f", "reports/big-coverage.info",
            )  # fmt: skip
            assert oversize.returncode != 0
            assert "over the limit" in oversize.stdout + oversize.stderr

            # a retried create-upload stores one upload; a PUT streamed without
            # Content-Length is cut off at the limit and leaves the URL usable
            retried_sha = "c" * 40
            body = {
                "commitid": retried_sha,
                "branch": "main",
                "flags": ["retry"],
                "code": "default",
            }
            headers = {"Authorization": f"token {token}"}
            url = f"{base_url}/upload/github/acme::::calc/upload-coverage"
            with httpx.Client(timeout=60) as http:
                first = http.post(url, json=body, headers=headers)
                retried = http.post(url, json=body, headers=headers)  # a client retry
                assert first.status_code == retried.status_code == 201
                location = retried.json()["raw_upload_location"]
                chunks = (b"x" * 65536 for _ in range(MAX_BYTES // 65536 + 2))
                cut = http.put(location, content=chunks)
                assert cut.status_code == 413, cut.text
                stored = http.put(location, content=(PY / "run-sum.xml").read_bytes())
                assert stored.status_code == 200, stored.text
                assert http.get(f"{base_url}/healthz").json()["status"] == "ok"
            settle(env, timeout_s=300)  # every message, delayed ones included

        local = covworker(
            env, "run-local", "--repo", "acme/calc", "--commit", sha, "--json",
            *(str(reports / f) for _, _, files, _ in CLI_JOBS for f in files),
            *(str(reports / f"c-{f}") for f in LEGACY_FILES),
        )  # fmt: skip
        assert local.returncode == 0, local.stderr
        expected = json.loads(local.stdout)["totals"]
        # The stored totals are the numbers; the display is made when shown.
        assert expected.pop("coverage_display") == shown(DisplayRounding(), expected["coverage"])

        engine = sa.create_engine(db_url)
        with engine.connect() as conn:

            def uploads_of(repo: str, commit_sha: str) -> list[sa.Row]:
                return list(
                    conn.execute(
                        sa.select(Upload.state, Upload.flags, Upload.name, Upload.error)
                        .join(Commit)
                        .join(Repository)
                        .where(Repository.name == repo, Commit.sha == commit_sha)
                        .order_by(Upload.id)
                    )
                )

            rows = uploads_of("acme/calc", sha)
            assert [(r.state, r.flags, r.name) for r in rows] == [
                (UploadState.MERGED, ["unit"], "sum"),
                (UploadState.MERGED, ["unit"], "divide"),
                (UploadState.MERGED, ["integration"], "classify"),
                (UploadState.MERGED, ["c"], "legacy"),
            ], rows
            totals = conn.scalar(
                sa.select(CommitReport.totals)
                .join(Commit)
                .join(Repository)
                .where(Repository.name == "acme/calc", Commit.sha == sha)
            )
            assert totals == expected
            retried_rows = uploads_of("acme/calc", retried_sha)
            assert sorted(r.state for r in retried_rows) == [
                UploadState.AWAITING,  # the first POST's upload: its URL was never used
                UploadState.MERGED,
            ]
            assert uploads_of("acme/other", sha) == []
            assert conn.scalar(sa.select(sa.func.count()).select_from(Upload)) == 6
        engine.dispose()
    assert " ERROR " not in (tmp_path / "worker.log").read_text()
    assert os.path.getsize(tmp_path / "api.log") > 0
