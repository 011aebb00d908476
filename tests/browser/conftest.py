"""A real stack for the browser: PostgreSQL, Redis, dramatiq workers,
``covworker serve`` on a free port, and Debian's headless Chromium driven by
Playwright (never a downloaded browser)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
import urllib.request
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import covworker, dramatiq_workers, service_env
from tests.support.services import (
    delete_namespace,
    fresh_database,
    redis_test_url,
    require_redis,
    service_missing,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OPS_TOKEN = "browser-ops-token"
#: Screenshots of every page the tests visit (git-ignored).
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
SERVER_START_S = 60
SETTLE_S = 120


@dataclass
class Stack:
    env: dict[str, str]
    base_url: str
    tmp: Path
    read_tokens: dict[str, str] = field(default_factory=dict)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = covworker(self.env, *args)
        assert done.returncode == 0, f"covworker {' '.join(args)}: {done.stderr}"
        return done

    def upload(self, repo: str, sha: str, files: list[Path], flags: tuple[str, ...] = ()) -> None:
        flag_args = [a for f in flags for a in ("--flag", f)]
        self.cli(
            "upload", "--create", "--repo", repo, "--commit", sha, *flag_args, *map(str, files)
        )

    def wait_settled(self, repo: str, sha: str) -> None:
        """Poll PostgreSQL until nothing of the commit is pending and its
        settled version is notified (``covworker status`` says the same, at
        the price of a process start per poll)."""
        import sqlalchemy as sa

        from app.db.models import (
            PENDING_STATES,
            Commit,
            CommitReport,
            Notification,
            Repository,
            Upload,
        )

        commit = (
            sa.select(Commit.id)
            .join(Repository)
            .where(sa.func.lower(Repository.name) == repo.lower(), Commit.sha == sha)
            .scalar_subquery()
        )
        pending = sa.select(sa.func.count()).where(
            Upload.commit_id == commit, Upload.state.in_(PENDING_STATES)
        )
        version = sa.select(CommitReport.version).where(CommitReport.commit_id == commit)
        notified = sa.select(sa.func.count()).where(
            Notification.commit_id == commit,
            Notification.report_version == version.scalar_subquery(),
        )
        engine = sa.create_engine(
            self.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://", 1)
        )
        deadline = time.monotonic() + SETTLE_S
        try:
            while True:
                with engine.connect() as conn:
                    if conn.scalar(pending) == 0 and conn.scalar(notified):
                        return
                assert time.monotonic() < deadline, f"{repo}@{sha} did not settle"
                time.sleep(0.2)
        finally:
            engine.dispose()

    def upload_over_http(self, repo: str, token: str, files: list[Path], **body: Any) -> None:
        """What codecov-cli's ``upload-coverage`` does: one POST naming the
        commit (branch, parent, flags, job), then the v1 payload PUT."""
        owner, name = repo.split("/")
        payload = {
            "coverage_files": [
                {
                    "filename": path.name,
                    "format": "base64+compressed",
                    "data": base64.b64encode(zlib.compress(path.read_bytes())).decode(),
                    "labels": "",
                }
                for path in files
            ],
            "network_files": [],
        }
        with httpx.Client(base_url=self.base_url, timeout=60) as http:
            created = http.post(
                f"/upload/github/{owner}::::{name}/upload-coverage",
                json={"code": "default", **body},
                headers={"Authorization": f"token {token}"},
            )
            assert created.status_code == 201, created.text
            stored = http.put(
                created.json()["raw_upload_location"], content=json.dumps(payload).encode()
            )
            assert stored.status_code == 200, stored.text

    def report(self, repo: str, sha: str) -> dict[str, Any]:
        return dict(
            json.loads(self.cli("report", "--repo", repo, "--commit", sha, "--json").stdout)
        )

    def sql(self, statement: str, **params: Any) -> None:
        import sqlalchemy as sa

        engine = sa.create_engine(
            self.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://", 1)
        )
        with engine.begin() as conn:
            conn.execute(sa.text(statement), params)
        engine.dispose()


def _wait_for_port(log: Path, proc: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        found = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", log.read_text())
        if found:
            return int(found.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"covworker serve did not start:\n{log.read_text()}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_redis()
    if not CHROMIUM.exists():
        service_missing("Chromium", f"{CHROMIUM} is not installed (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("browser")
    namespace = f"cwt-{uuid.uuid4().hex[:10]}"  # the module's own (not the per-test fixture)
    try:
        yield from _stack(tmp, namespace)
    finally:  # after the worker and the server stopped: nothing writes under it any more
        delete_namespace(redis_test_url(), namespace)


def _stack(tmp: Path, namespace: str, **extra: str) -> Iterator[Stack]:
    """The stack, ``extra`` settings in its environment (a sign-in's provider)."""
    with fresh_database(migrated=True) as db_url:
        env = service_env(
            redis_test_url(), db_url, namespace, COVWORKER_OPS_TOKEN=OPS_TOKEN, **extra
        )
        stack = Stack(env, "", tmp)
        with dramatiq_workers(env, tmp / "worker.log", processes=1, threads=4):
            log = tmp / "serve.log"
            with log.open("wb") as out:
                server = subprocess.Popen(
                    [sys.executable, "-m", "app.cli.main", "serve", "--port", "0"],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            try:
                port = _wait_for_port(log, server)
                stack.base_url = f"http://127.0.0.1:{port}"
                with urllib.request.urlopen(f"{stack.base_url}/healthz", timeout=10) as reply:
                    assert reply.status == 200
                yield stack
            finally:
                server.terminate()
                server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(stack: Stack) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Visit:
    """A browser page that records console errors and uncaught exceptions."""

    page: Any
    errors: list[str]
    #: Statuses of documents the test asked for on purpose (a 404, a 401):
    #: Chromium logs those loads as console errors too.
    expected: set[int] = field(default_factory=set)

    def open(self, url: str, expect_status: int = 200) -> Any:
        reply = self.page.goto(url)
        assert reply is not None and reply.status == expect_status, (url, reply and reply.status)
        if expect_status >= 400:
            self.expected.add(expect_status)
        return reply

    def no_errors(self) -> None:
        def wanted(error: str) -> bool:
            return any(
                error.startswith(
                    f"Failed to load resource: the server responded with a status of {status} "
                )
                for status in self.expected
            )

        assert [e for e in self.errors if not wanted(e)] == []

    def axe_serious(self) -> list[dict[str, Any]]:
        """axe-core's serious and critical violations of the page as it is
        (axe is in every page from the context's init script: the pages'
        Content-Security-Policy refuses a script tag the test would add)."""
        result = self.page.evaluate("async () => await axe.run(document)")
        return [
            {"id": v["id"], "impact": v["impact"], "nodes": [n["html"] for n in v["nodes"]][:3]}
            for v in result["violations"]
            if v["impact"] in ("serious", "critical")
        ]

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def visit(browser: Any, stack: Stack) -> Iterator[Visit]:
    context = browser.new_context(base_url=stack.base_url, viewport={"width": 1280, "height": 900})
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.on(
        "dialog",
        lambda dialog: (errors.append(f"dialog opened: {dialog.message}"), dialog.dismiss()),
    )
    try:
        yield Visit(page, errors)
    finally:
        context.close()
