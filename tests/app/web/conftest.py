from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.cli.commands import submit
from app.db.models import Commit, CommitReport
from app.embedded import EmbeddedRuntime, embedded
from app.settings import Settings
from app.web.access import CSRF_COOKIE, make_private

OPS_TOKEN = "ops-secret-token"
#: A message the gate defers (a finisher while another of its commit runs) is
#: due 20-40 ms later here rather than 200-400 ms: no page depends on when.
GATE_DEFERRAL = {"gate_delay_ms": 20, "gate_jitter_ms": 20}

Upload = Callable[..., None]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    """The embedded pipeline (fakeredis, SQLite, in-process worker)."""
    # No debounce window: the pages do not depend on how passes are batched;
    # nor on when a deferred message runs (GATE_DEFERRAL, not 200-400 ms).
    with embedded(
        database_path=tmp_path / "pages.db", finisher_debounce_ms=0, **GATE_DEFERRAL
    ) as rt:
        yield rt


@pytest.fixture
def client(runtime: EmbeddedRuntime) -> Iterator[TestClient]:
    settings = Settings(
        redis_url="redis://unused",
        database_url=runtime.app.settings.database_url,
        ops_token=OPS_TOKEN,
    )
    with TestClient(create_app(settings, covworker=runtime.app)) as c:
        yield c


@pytest.fixture
def upload(runtime: EmbeddedRuntime, tmp_path: Path) -> Upload:
    """Upload report texts as one commit and wait until it is settled."""

    def run(
        repo: str,
        sha: str,
        reports: dict[str, str],
        *,
        flags: tuple[str, ...] = (),
        branch: str | None = None,
        parent: str | None = None,
    ) -> None:
        files = []
        for name, text in reports.items():
            path = tmp_path / f"{sha[:8]}-{name}"
            path.write_text(text)
            files.append(path)
        submit(runtime.app, repo, sha, files, list(flags))
        runtime.wait_settled()
        # What the HTTP front door stores from the uploader's arguments.
        with runtime.app.services.sessions.begin() as session:
            session.execute(
                sa.update(Commit)
                .where(Commit.sha == sha)
                .values(branch=branch, parent_commit_id=parent)
            )

    return run


def commit_before_its_uploads(
    runtime: EmbeddedRuntime, sha: str, *, parent: str | None, branch: str = "main"
) -> None:
    """The commit of repository 1 and its empty report, as the HTTP front door
    stores them before the first upload: its merge knows the parent to compare with."""
    with runtime.app.services.sessions.begin() as session:
        commit = Commit(repository_id=1, sha=sha, branch=branch, parent_commit_id=parent)
        session.add(commit)
        session.flush()
        session.add(CommitReport(commit_id=commit.id))


def lcov(
    path: str, hits: dict[int, int], branches: dict[int, tuple[int, int]] | None = None
) -> str:
    """An LCOV record: ``hits`` per line, ``branches`` (covered, total) per line."""
    out = [f"SF:{path}"]
    for line, (covered, total) in (branches or {}).items():
        out += [f"BRDA:{line},0,{i},{1 if i < covered else 0}" for i in range(total)]
    out += [f"DA:{line},{count}" for line, count in hits.items()]
    return "\n".join([*out, "end_of_record", ""])


@pytest.fixture
def secret_token(upload: Upload, runtime: EmbeddedRuntime) -> str:
    """acme/secret with one upload, made private; the token that reads it."""
    upload("acme/secret", "1" * 40, {"a.info": lcov("a.py", {1: 1})})
    with runtime.app.services.sessions.begin() as session:
        return make_private(session, "acme/secret")


def csrf_of(client: TestClient, form: str = "/-/login") -> str:
    """The CSRF value of the login form the browser loads first."""
    page = client.get(form)
    value = client.cookies.get(CSRF_COOKIE)
    assert value and f'name="csrf" value="{value}"' in page.text
    return value
