"""The codecov-cli endpoints, in-process (TestClient on the embedded pipeline).

The same endpoints under the real clients, a real server process, real
Redis, PostgreSQL and dramatiq workers: tests/e2e/test_http_ingestion.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db.models import Commit, Upload, UploadState
from app.embedded import EmbeddedRuntime
from app.queries import commit_report
from tests.app.api.conftest import (
    BASE,
    COVERAGE_BODY,
    MAX_BYTES,
    REFUSED,
    SHA,
    UPLOAD_BODY,
    add_repo,
    auth,
    counts,
    put_path,
    report,
    upload_payload,
    v1_payload,
)


def test_upload_process_stores_the_commit_the_upload_metadata_and_merges_the_payload(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    commit = {"commitid": SHA, "branch": "main", "parent_commit_id": None, "pullid": "7"}
    assert client.post(f"{BASE}/commits", json=commit, headers=auth(token)).status_code == 201
    made = client.post(
        f"{BASE}/commits/{SHA}/reports", json={"code": "default"}, headers=auth(token)
    )
    assert made.status_code == 201
    created = client.post(
        f"{BASE}/commits/{SHA}/reports/default/uploads", json=UPLOAD_BODY, headers=auth(token)
    )
    assert created.status_code == 201, created.text
    location = created.json()["raw_upload_location"]
    assert location.startswith("http://testserver/upload/payload/")
    payload = v1_payload(
        ("coverage.xml", report("run-sum.xml")), ("lcov.info", report("run-divide.info"))
    )
    assert client.put(put_path(location), content=payload).status_code == 200
    runtime.wait_settled()

    merged = commit_report(runtime.app.services, "acme/web", SHA)
    assert merged is not None and merged["totals"]["lines"] > 0
    with runtime.app.services.sessions() as session:
        upload = session.scalars(sa.select(Upload)).one()
        stored = session.scalars(sa.select(Commit)).one()
    assert upload.state == UploadState.MERGED
    assert upload.filename == "coverage.xml, lcov.info"  # the uploader's names, not the slot's
    assert (upload.flags, upload.name, upload.job_code, upload.build_code) == (
        ["unit", "backend"],
        "py311",
        "unit",
        "42",
    )
    assert (upload.build_url, upload.ci_service, upload.env) == (
        "https://ci.example/run/7",
        "github-actions",
        {"PYTHON": "3.11"},
    )
    assert (upload.branch, upload.pullid, upload.report_format) == ("main", 7, "cobertura,lcov")
    assert (stored.branch, stored.pullid) == ("main", 7)

    done = client.post(f"{BASE}/commits/{SHA}/upload-complete", json={}, headers=auth(token))
    assert done.status_code == 200
    assert done.json() == {
        "uploads_total": 1,
        "uploads_success": 1,
        "uploads_processing": 0,
        "uploads_error": 0,
    }


def test_upload_coverage_creates_commit_and_upload_in_one_call(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    upload_payload(client, token, v1_payload(("coverage.xml", report("run-sum.xml"))))
    runtime.wait_settled()
    with runtime.app.services.sessions() as session:
        commit = session.scalars(sa.select(Commit)).one()
        upload = session.scalars(sa.select(Upload)).one()
    assert (commit.sha, commit.branch, commit.parent_commit_id, commit.pullid) == (
        SHA,
        "main",
        "b" * 40,
        7,
    )
    assert upload.state == UploadState.MERGED


def test_a_path_prefix_and_doubled_slashes_are_accepted_and_kept_in_the_put_url(
    client: TestClient, token: str
) -> None:
    created = client.post(
        f"/covworker//{BASE}/upload-coverage", json=COVERAGE_BODY, headers=auth(token)
    )
    assert created.status_code == 201, created.text
    location = created.json()["raw_upload_location"]
    assert location.startswith("http://testserver/covworker/upload/payload/")
    assert (
        client.put(put_path(location), content=b"SF:a.py\nDA:1,1\nend_of_record\n").status_code
        == 200
    )


def test_a_nested_group_slug_names_its_repository(
    client: TestClient, runtime: EmbeddedRuntime
) -> None:
    token = add_repo(runtime, "group/sub/proj", service="gitlab")
    created = client.post(
        "/upload/gitlab/group:::sub::::proj/upload-coverage",
        json=COVERAGE_BODY,
        headers=auth(token),
    )
    assert created.status_code == 201, created.text


def test_tokenless_wrong_and_foreign_tokens_are_refused_and_store_nothing(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    other = add_repo(runtime, "acme/other")
    tokenless = client.post(f"{BASE}/upload-coverage", json=COVERAGE_BODY)
    assert tokenless.status_code == 401
    assert "tokenless uploads are not accepted" in tokenless.json()["detail"]
    for bad in ("0" * 36, other):
        refused = client.post(f"{BASE}/upload-coverage", json=COVERAGE_BODY, headers=auth(bad))
        assert refused.status_code == 401
        assert refused.json()["detail"] == REFUSED.format("acme/web")
        refused = client.post(f"{BASE}/commits", json={"commitid": SHA}, headers=auth(bad))
        assert refused.status_code == 401
    assert counts(runtime) == (0, 0)


def test_malformed_json_is_400_and_a_bad_field_is_422_naming_it(
    client: TestClient, token: str
) -> None:
    broken = client.post(
        f"{BASE}/commits",
        content=b"{not json",
        headers={**auth(token), "Content-Type": "application/json"},
    )
    assert broken.status_code == 400
    assert broken.json()["detail"].startswith("the request body is not valid JSON")
    bad_sha = client.post(f"{BASE}/commits", json={"commitid": "xyz"}, headers=auth(token))
    assert bad_sha.status_code == 422 and bad_sha.json()["detail"].startswith("commitid:")
    bad_flag = client.post(
        f"{BASE}/upload-coverage",
        json={**COVERAGE_BODY, "flags": ["no spaces"]},
        headers=auth(token),
    )
    assert bad_flag.status_code == 422 and bad_flag.json()["detail"].startswith("flags:")
    bad_pr = client.post(
        f"{BASE}/commits", json={"commitid": SHA, "pullid": "x"}, headers=auth(token)
    )
    assert bad_pr.status_code == 422 and "pullid" in bad_pr.json()["detail"]
    bad_code = client.post(
        f"{BASE}/commits/{SHA}/reports", json={"code": "other"}, headers=auth(token)
    )
    assert bad_code.status_code == 400 and "only the default report" in bad_code.json()["detail"]


def test_an_upload_declaring_a_payload_over_the_limit_is_413_storing_nothing(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    too_big = client.post(
        f"{BASE}/upload-coverage",
        json={**COVERAGE_BODY, "report_payload_bytes": MAX_BYTES + 1},
        headers=auth(token),
    )
    assert too_big.status_code == 413
    assert counts(runtime) == (0, 0)


def test_a_retried_create_upload_stores_one_upload(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    first = client.post(f"{BASE}/upload-coverage", json=COVERAGE_BODY, headers=auth(token))
    retried = client.post(f"{BASE}/upload-coverage", json=COVERAGE_BODY, headers=auth(token))
    assert first.status_code == retried.status_code == 201
    body = v1_payload(("coverage.xml", report("run-sum.xml")))
    assert (
        client.put(put_path(retried.json()["raw_upload_location"]), content=body).status_code == 200
    )
    runtime.wait_settled()
    merged = commit_report(runtime.app.services, "acme/web", SHA)
    assert merged is not None and len(merged["upload_ids"]) == 1
    done = client.post(f"{BASE}/commits/{SHA}/upload-complete", json={}, headers=auth(token))
    assert done.json()["uploads_total"] == 1


def test_an_upload_whose_file_does_not_parse_ends_in_error_and_its_sibling_merges(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    payloads = [
        v1_payload(("good.xml", report("run-sum.xml"))),
        v1_payload(("good.xml", report("run-sum.xml")), ("broken.info", b"SF:a.py\nDA:1\n")),
    ]
    for payload in payloads:
        upload_payload(client, token, payload)
    runtime.wait_settled()
    with runtime.app.services.sessions() as session:
        rows = session.execute(sa.select(Upload.state, Upload.error).order_by(Upload.id)).all()
    assert rows[0] == (UploadState.MERGED, None)
    assert rows[1][0] == UploadState.ERROR and rows[1][1].startswith("coverage file broken.info:")
    done = client.post(f"{BASE}/commits/{SHA}/upload-complete", json={}, headers=auth(token))
    assert done.json() == {
        "uploads_total": 2,
        "uploads_success": 1,
        "uploads_processing": 0,
        "uploads_error": 1,
    }


def test_upload_complete_of_a_commit_without_uploads_is_404_with_zeros(
    client: TestClient, token: str
) -> None:
    reply = client.post(f"{BASE}/commits/{SHA}/upload-complete", json={}, headers=auth(token))
    assert reply.status_code == 404 and reply.json()["uploads_total"] == 0


def test_empty_upload_answers_what_the_cli_reads(client: TestClient, token: str) -> None:
    reply = client.post(
        f"{BASE}/commits/{SHA}/empty-upload", json={"should_force": True}, headers=auth(token)
    )
    assert reply.status_code == 200 and reply.json()["non_ignored_files"] == []


def test_a_short_sha_is_refused_over_http_and_stores_nothing(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    """A short SHA would create a commit shadowing the real one in the API."""
    short = client.post(
        f"{BASE}/upload-coverage",
        json={**COVERAGE_BODY, "commitid": "abcdef1"},
        headers=auth(token),
    )
    assert short.status_code == 422 and "is not a full SHA" in short.json()["detail"]
    in_path = client.post(
        f"{BASE}/commits/abcdef1/reports/default/uploads", json=UPLOAD_BODY, headers=auth(token)
    )
    assert in_path.status_code == 404 and "is not a full SHA" in in_path.json()["detail"]
    assert counts(runtime) == (0, 0)


def test_out_of_range_and_oversized_fields_are_422_naming_them_never_a_500(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    cases = {
        "pullid": {"pullid": 2**40},
        "env": {"env": {f"K{i}": "v" * 200 for i in range(90)}},
        "name": {"name": "n" * 101},
    }
    for field, change in cases.items():
        reply = client.post(
            f"{BASE}/upload-coverage", json={**COVERAGE_BODY, **change}, headers=auth(token)
        )
        assert reply.status_code == 422, (field, reply.text)
        assert reply.json()["detail"].startswith(f"{field}:"), reply.text
    assert counts(runtime) == (0, 0)


def test_a_body_over_the_request_limit_is_413_and_one_without_a_token_is_never_read(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    huge_env = {**COVERAGE_BODY, "env": {"BIG": "x" * 11_000_000}}
    reply = client.post(f"{BASE}/upload-coverage", json=huge_env, headers=auth(token))
    assert reply.status_code == 413 and "COVWORKER_MAX_REQUEST_BODY_BYTES" in reply.text

    def chunks() -> Iterator[bytes]:  # no Content-Length: cut off while it streams
        yield b'{"commitid": "' + SHA.encode() + b'", "branch": "'
        for _ in range(64):
            yield b"b" * 65536
        yield b'"}'

    streamed = client.post(f"{BASE}/commits", content=chunks(), headers=auth(token))
    assert streamed.status_code == 413
    unread = client.post(f"{BASE}/commits", content=b"{not json at all", headers=auth("nope"))
    assert unread.status_code == 401  # refused before the body is parsed (it is not JSON)
    assert counts(runtime) == (0, 0)
