"""``POST /upload/test_results/v1`` and the test-results pages, on the
embedded app (fakeredis, SQLite, in-process worker)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import Commit, Upload, UploadState
from app.embedded import EmbeddedRuntime
from app.testresults.store import TEST_RESULTS_PAYLOAD
from tests.app.api.conftest import (
    BASE,
    COVERAGE_BODY,
    MAX_BYTES,
    add_repo,
    api_runtime,
    auth,
    client,
    counts,
    runtime,
    token,
)
from tests.support.testresults import junit, payload

__all__ = ["client", "runtime", "token"]  # the fixtures, from the api tests

SHA = "a" * 40
URL = "/upload/test_results/v1"


def body(**changes: object) -> dict[str, object]:
    """What codecov-cli 11.3.1 sends for ``upload-process --report-type test_results``."""
    return {
        "ci_service": "github-actions", "ci_url": "https://ci.example/run/7", "cli_args": {},
        "env": {}, "flags": ["unit"], "job_code": None, "name": "py311", "version": "11.3.1",
        "file_not_found": False, "slug": "acme::::web", "branch": "main", "commit": SHA,
        "service": "github", "report_payload_bytes": 100, **changes,
    }  # fmt: skip


def put_path(location: str) -> str:
    return location.removeprefix("http://testserver")


def test_an_upload_gets_a_signed_put_url_and_its_tests_show_on_the_commit(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    created = client.post(URL, json=body(), headers=auth(token))
    assert created.status_code == 201, created.text
    location = created.json()["raw_upload_location"]
    assert location.startswith("http://testserver/upload/payload/")
    doc = junit(("test_adds", "passed"), ("test_divides", "failed"), ("test_gpu", "skipped"))
    assert client.put(put_path(location), content=payload(doc)).status_code == 200
    assert client.put(put_path(location), content=payload(doc)).status_code == 403  # once
    runtime.wait_settled()
    with runtime.app.services.sessions() as session:
        upload = session.scalars(sa.select(Upload)).one()
        commit = session.scalars(sa.select(Commit)).one()
    assert (upload.state, upload.payload_format, upload.report_format) == (
        UploadState.MERGED, TEST_RESULTS_PAYLOAD, "junit",
    )  # fmt: skip
    assert (upload.flags, upload.name, upload.build_url) == (
        ["unit"], "py311", "https://ci.example/run/7",
    )  # fmt: skip
    assert (commit.sha, commit.branch) == (SHA, "main")

    tests = client.get(f"/api/v1/repos/acme/web/commits/{SHA}/tests")
    assert tests.status_code == 200
    got = tests.json()
    assert got["totals"] == {
        "passed": 1, "failed": 1, "errored": 0, "skipped": 1, "flaky": 0, "total": 3,
    }  # fmt: skip
    assert [(f["name"], f["suite"], f["flaky"]) for f in got["failures"]] == [
        ("test_divides", "tests.test_calc", False)
    ]
    assert got["failures"][0]["message"] == "test_divides failed: 1 != 2"
    page = client.get(f"/acme/web/commit/{SHA}")
    assert page.status_code == 200 and 'data-tests="failed">1<' in page.text
    assert got["comment"].startswith("### :x: 1 Tests Failed:")
    assert "tests.test_calc test_divides (py311)" in got["comment"]
    commit_json = client.get(f"/api/v1/repos/acme/web/commits/{SHA}").json()
    assert commit_json["tests"] == {k: got[k] for k in ("uploads", "totals", "failures")}
    assert client.get("/-/tests/acme/web").status_code == 200
    assert client.get("/api/v1/tests/acme/web").json()["slowest"][0]["runs"] == 1


def test_file_not_found_is_answered_as_codecov_does_and_stores_no_upload(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    answered = client.post(URL, json=body(file_not_found=True), headers=auth(token))
    assert answered.status_code == 201 and answered.content == b""
    assert counts(runtime) == (1, 0)  # the commit, no upload waiting for a PUT


def test_without_a_service_the_repository_s_own_is_used(client: TestClient, token: str) -> None:
    created = client.post(URL, json=body(service=None), headers=auth(token))
    assert created.status_code == 201, created.text


def test_bad_tokens_repositories_sizes_and_fields_are_refused_naming_the_problem(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    other = add_repo(runtime, "acme/other")
    big_env: dict[str, str] = {f"VAR_{i}": "x" for i in range(101)}
    refused = [
        (client.post(URL, json=body(), headers=auth(other)), 401, "not valid for repository"),
        (client.post(URL, json=body()), 401, "tokenless"),
        (
            client.post(URL, json=body(slug="acme::::nope"), headers=auth(token)),
            401,
            "acme/nope",
        ),  # alike: no probing
        (client.post(URL, json=body(slug="nope"), headers=auth(token)), 404, "owner::::repo"),
        (
            client.post(URL, json=body(report_payload_bytes=MAX_BYTES + 1), headers=auth(token)),
            413,
            "over the limit",
        ),
        (client.post(URL, json=body(commit="xyz"), headers=auth(token)), 422, "commit"),
        # The coverage routes' limits: a full SHA, a bounded env, a short name.
        (client.post(URL, json=body(commit="a" * 12), headers=auth(token)), 422, "full SHA"),
        (client.post(URL, json=body(env=big_env), headers=auth(token)), 422, "env has 101"),
        (client.post(URL, json=body(name="n" * 101), headers=auth(token)), 422, "name"),
    ]
    for response, status, why in refused:
        assert response.status_code == status, response.text
        assert why in response.text
    assert counts(runtime) == (0, 0)


def test_a_path_prefix_reaches_the_route_and_stays_in_the_put_url(
    client: TestClient, token: str
) -> None:
    created = client.post(f"/covworker//{URL}", json=body(), headers=auth(token))
    assert created.status_code == 201, created.text
    assert created.json()["raw_upload_location"].startswith(
        "http://testserver/covworker/upload/payload/"
    )


def test_without_a_service_an_unknown_repository_is_answered_like_a_wrong_token(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    add_repo(runtime, "acme/known")
    unknown = client.post(URL, json=body(service=None, slug="acme::::nope"), headers=auth(token))
    known = client.post(URL, json=body(service=None, slug="acme::::known"), headers=auth(token))
    assert (unknown.status_code, known.status_code) == (401, 401)
    assert unknown.json() == {"detail": known.json()["detail"].replace("acme/known", "acme/nope")}
    tokenless = [
        client.post(URL, json=body(service=None, slug=f"acme::::{name}")).json()
        for name in ("nope", "known")
    ]
    assert tokenless[0] == tokenless[1]


def test_test_results_uploads_share_the_per_commit_cap_on_slots_awaiting_their_put(
    tmp_path: Path,
) -> None:
    with (
        api_runtime(tmp_path, max_awaiting_uploads=3) as rt,
        TestClient(create_app(covworker=rt.app)) as http,
    ):
        secret = add_repo(rt, "acme/web")
        coverage = http.post(
            f"{BASE}/upload-coverage", json=COVERAGE_BODY | {"commitid": SHA}, headers=auth(secret)
        )
        assert coverage.status_code == 201, coverage.text
        answers = [http.post(URL, json=body(), headers=auth(secret)) for _ in range(3)]
        assert [a.status_code for a in answers] == [201, 201, 429]
        assert "COVWORKER_MAX_AWAITING_UPLOADS" in answers[-1].text
        assert counts(rt) == (1, 3)
