"""/upload/v4 and /upload/v2 as the legacy uploader speaks them (in-process)."""

from __future__ import annotations

import gzip
from urllib.parse import urlsplit

import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db.models import Upload, UploadState
from app.embedded import EmbeddedRuntime
from tests.app.api.conftest import SHA, add_repo, counts, report

LEGACY = (
    b"\ncalc/__init__.py\ncalc/main.py\ncalc/ops.py\n<<<<<< network\n# path=coverage.xml\n"
    + report("run-sum.xml")
    + b"\n<<<<<< EOF"
)


def query(**extra: str) -> dict[str, str]:
    return {
        "commit": SHA,
        "branch": "main",
        "slug": "acme/web",
        "build": "12",
        "name": "py",
        "flags": "unit,backend",
        "package": "py2.1.13",
        **extra,
    }


def test_v4_replies_two_lines_without_a_trailing_newline_and_the_put_answers_exactly_200(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    reply = client.post("/upload/v4", params=query(token=token), headers={"Accept": "text/plain"})
    assert reply.status_code == 200, reply.text
    result, put = reply.text.split("\n")
    assert not reply.text.endswith("\n")
    assert result == f"http://testserver/acme/web/commit/{SHA}"
    parts = urlsplit(put)
    stored = client.put(
        f"{parts.path}?{parts.query}",
        content=gzip.compress(LEGACY),
        headers={"Content-Type": "application/x-gzip", "Content-Encoding": "gzip"},
    )
    assert stored.status_code == 200
    runtime.wait_settled()
    with runtime.app.services.sessions() as session:
        upload = session.scalars(sa.select(Upload)).one()
    assert (upload.state, upload.flags, upload.build_code, upload.name) == (
        UploadState.MERGED,
        ["unit", "backend"],
        "12",
        "py",
    )


def test_v4_takes_the_token_from_the_header_and_finds_the_repository_without_a_slug(
    client: TestClient, token: str
) -> None:
    params = query()
    del params["slug"]
    reply = client.post("/upload/v4", params=params, headers={"X-Upload-Token": token})
    assert reply.status_code == 200 and len(reply.text.split("\n")) == 2


def test_v4_refuses_missing_wrong_and_foreign_tokens_as_text_storing_nothing(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    other = add_repo(runtime, "acme/other")
    missing = client.post("/upload/v4", params=query())
    assert missing.status_code == 401 and missing.text.startswith("tokenless uploads")
    for bad in ("0" * 36, other):
        refused = client.post("/upload/v4", params=query(token=bad))
        assert refused.status_code == 401
        assert refused.text.startswith("the upload token is not valid for repository acme/web ")
    unknown = client.post("/upload/v4", params=query(token=token, slug="acme/nope"))
    assert unknown.status_code == 401
    assert unknown.text.startswith("the upload token is not valid for repository acme/nope ")
    assert counts(runtime) == (0, 0)


def test_v4_without_a_commit_is_400_which_the_legacy_uploader_does_not_retry(
    client: TestClient, token: str
) -> None:
    params = query(token=token)
    del params["commit"]
    reply = client.post("/upload/v4", params=params)
    assert reply.status_code == 400 and "is not a full SHA" in reply.text


def test_v2_stores_the_gzipped_payload_in_one_call(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    reply = client.post(
        "/upload/v2",
        params=query(token=token),
        content=gzip.compress(LEGACY),
        headers={"Content-Type": "application/x-gzip", "Content-Encoding": "gzip"},
    )
    assert reply.status_code == 200 and reply.json()["uploaded"] is True
    runtime.wait_settled()
    with runtime.app.services.sessions() as session:
        assert session.scalar(sa.select(Upload.state)) == UploadState.MERGED


def test_v4_refuses_a_bad_pull_request_flag_or_overlong_field_as_text_storing_nothing(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    cases = {
        "pr": (query(token=token, pr="12x"), "pr '12x' is not a pull request number"),
        "flags": (query(token=token, flags="no spaces"), "flag 'no spaces' must be"),
        "build": (query(token=token, build="b" * 256), "build is 256 characters long; at most 255"),
    }
    for field, (params, detail) in cases.items():
        reply = client.post("/upload/v4", params=params)
        assert reply.status_code == 400, (field, reply.text)
        assert reply.text.startswith(detail) and reply.headers["content-type"].startswith(
            "text/plain"
        ), field
    assert counts(runtime) == (0, 0)


def test_v4_reads_the_uploaders_ways_of_saying_no_pull_request_and_a_number(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    assert client.post("/upload/v4", params=query(token=token, pr="undefined")).status_code == 200
    with runtime.app.services.sessions() as session:
        assert session.scalar(sa.select(Upload.pullid)) is None
    assert client.post("/upload/v4", params=query(token=token, pr="12")).status_code == 200
    with runtime.app.services.sessions() as session:
        assert set(session.scalars(sa.select(Upload.pullid))) == {None, 12}
