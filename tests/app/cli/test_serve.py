"""``covworker serve --embedded``: the real codecov-cli against the whole stack in one process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from tests.support.processes import covworker, covworker_serve
from tests.support.uploaders import first_commit, uploader

pytestmark = pytest.mark.timeout(300)


def test_codecov_cli_uploads_to_an_embedded_server_and_the_commit_merges(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "programs" / "python" / "calc", checkout / "calc")
    shutil.copy(FIXTURES / "reports" / "coveragepy" / "run-divide.info", checkout / "lcov.info")
    sha = first_commit(checkout, ["calc"], "x")
    db = tmp_path / "embedded.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COVWORKER_", "CODECOV_"))}
    env["DATABASE_URL"] = f"sqlite:///{db}"
    env.pop("REDIS_URL", None)

    with covworker_serve(
        env, tmp_path / "serve.log", extra=("--embedded", "--db", str(db))
    ) as served:
        url = served.url
        added = covworker(env, "repo", "add", "acme/calc")
        assert added.returncode == 0, added.stderr
        token = added.stdout.strip().splitlines()[-1]
        upload = subprocess.run(
            [uploader("codecovcli"), "-u", url, "upload-coverage",
             "-t", token, "--git-service", "github", "-r", "acme/calc", "-C", sha, "-B", "main",
             "--plugin", "noop", "--disable-search", "-f", "lcov.info", "-Z"],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert upload.returncode == 0, upload.stdout + upload.stderr
        complete = f"{url}/upload/github/acme::::calc/commits/{sha}/upload-complete"
        deadline = time.monotonic() + 60
        while True:  # wait for the in-process worker to merge it
            request = urllib.request.Request(
                complete, data=b"{}", method="POST", headers={"Authorization": f"token {token}"}
            )
            with urllib.request.urlopen(request) as reply:
                counts = json.loads(reply.read())
            if counts["uploads_success"] == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert counts == {
        "uploads_total": 1,
        "uploads_success": 1,
        "uploads_processing": 0,
        "uploads_error": 0,
    }


def test_serve_with_two_workers_runs_as_the_readme_writes_it_without_a_secret(
    tmp_path: Path, namespace: str
) -> None:
    """Upload URLs signed by one server process are accepted by the other."""
    from tests.support.processes import service_env
    from tests.support.services import fresh_database, redis_test_url, require_redis

    require_redis()
    with fresh_database() as db_url:
        env = service_env(redis_test_url(), db_url, namespace)
        assert "COVWORKER_UPLOAD_URL_SECRET" not in env
        assert covworker(env, "db", "upgrade").returncode == 0
        token = covworker(env, "repo", "add", "acme/calc").stdout.strip().splitlines()[-1]
        log = tmp_path / "api.log"
        with covworker_serve(env, log, workers=2) as served:
            statuses = []
            for n in range(12):  # a new connection each: both processes answer some
                body = json.dumps({"commitid": "d" * 40, "name": f"job{n}"}).encode()
                create = urllib.request.Request(
                    f"{served.url}/upload/github/acme::::calc/upload-coverage",
                    data=body,
                    headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
                )
                with urllib.request.urlopen(create, timeout=60) as reply:
                    location = json.load(reply)["raw_upload_location"]
                put = urllib.request.Request(location, data=b"SF:a.py\nDA:1,1\n", method="PUT")
                with urllib.request.urlopen(put, timeout=60) as reply:
                    statuses.append(reply.status)
        assert statuses == [200] * 12
        assert "share a secret made for this run" in " ".join(log.read_text().split())
