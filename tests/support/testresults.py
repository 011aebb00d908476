"""Test-results uploads through the pipeline's steps (no HTTP)."""

from __future__ import annotations

import base64
import json
import zlib
from xml.sax.saxutils import escape, quoteattr

import sqlalchemy as sa

from app.db.models import Commit, Repository
from app.db.repos import add_repository
from app.ingest.admit import InRow, admit
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload
from app.runtime.services import Services
from app.testresults.store import TEST_RESULTS_PAYLOAD
from app.testresults.summary import CommitTests, commit_tests
from tests.support.pipeline import Pipeline


def junit(*cases: tuple[str, str], suite: str = "tests.test_calc") -> bytes:
    """A JUnit document of ``(name, outcome)`` cases (outcome: passed, failed, error, skipped)."""
    body = []
    for name, outcome in cases:
        inner = {
            "passed": "",
            "failed": f"<failure message='boom'>{name} failed: 1 != 2</failure>",
            "error": "<error message='setup'>fixture broke</error>",
            "skipped": "<skipped message='later'/>",
        }[outcome]
        attrs = f"classname={quoteattr(suite)} name={quoteattr(name)}"
        body.append(f'<testcase {attrs} time="0.5">{inner.replace(name, escape(name))}</testcase>')
    return f"<testsuites><testsuite name='s'>{''.join(body)}</testsuite></testsuites>".encode()


def payload(*documents: bytes) -> bytes:
    files = [
        {
            "filename": f"junit-{i}.xml",
            "format": "base64+compressed",
            "data": base64.b64encode(zlib.compress(doc)).decode(),
            "labels": "",
        }
        for i, doc in enumerate(documents)
    ]
    return json.dumps({"test_results_files": files}).encode()


def repository(pipeline: Pipeline, name: str = "acme/web") -> Repository:
    with pipeline.services.sessions.begin() as session:
        found = session.scalar(sa.select(Repository).where(Repository.name == name))
        if found is None:
            add_repository(session, name)
            found = session.scalar(sa.select(Repository).where(Repository.name == name))
        session.expunge(found)
        return found


def repo_and_commit(services: Services) -> tuple[int, int]:
    """(repository id, commit id) of a new repository acme/web and its commit ``a`` * 40."""
    with services.sessions.begin() as session:
        repo = Repository(name="acme/web")
        session.add(repo)
        session.flush()
        commit = Commit(repository_id=repo.id, sha="a" * 40)
        session.add(commit)
        session.flush()
        return repo.id, commit.id


def upload_tests(
    pipeline: Pipeline,
    body: bytes,
    *,
    sha: str = "a" * 40,
    branch: str = "feature",
    job: str = "py311",
    flags: tuple[str, ...] = ("unit",),
) -> tuple[int, int, int]:
    """One test-results upload, as the API and its PUT store it; (repoid, commitid, upload id)."""
    repo = repository(pipeline)
    upload_id = add_awaiting_upload(
        pipeline.services,
        repo,
        sha,
        CommitMeta(branch=branch),
        UploadMeta(flags=list(flags), name=job),
        TEST_RESULTS_PAYLOAD,
    )
    stored = admit(pipeline.services, upload_id, InRow(body), pipeline.outbox.send_processor)
    assert stored is not None
    return stored[0], stored[1], upload_id


def settle(pipeline: Pipeline, *uploads: tuple[int, int, int]) -> None:
    for _, _, upload_id in uploads:
        pipeline.process(upload_id)
    repoid, commitid, _ = uploads[-1]
    pipeline.finish(repoid, commitid)
    pipeline.notify(repoid, commitid)


def commit_id(pipeline: Pipeline, sha: str) -> int:
    with pipeline.services.sessions() as session:
        return int(session.scalar(sa.select(Commit.id).where(Commit.sha == sha)) or 0)


def summary_of_commit(pipeline: Pipeline, repoid: int, commitid: int) -> CommitTests | None:
    with pipeline.services.sessions() as session:
        return commit_tests(session, repoid, commitid)


def summary_of(pipeline: Pipeline, repoid: int, sha: str) -> CommitTests | None:
    """The test results of the commit ``sha`` (None: it has none)."""
    return summary_of_commit(pipeline, repoid, commit_id(pipeline, sha))
