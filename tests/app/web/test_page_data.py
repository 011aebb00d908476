"""What a page and its JSON show: the merged totals, the base compared with,
flags, the file table."""

from __future__ import annotations

import io
import json

import pytest
from fastapi.testclient import TestClient

from app.db.models import Repository
from app.embedded import EmbeddedRuntime
from app.ingest.admit import InChunks, admit
from app.ingest.store import CommitMeta, UploadMeta, create_awaiting_upload, upsert_commit
from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


SHA2 = "2" * 40


def test_the_commit_page_shows_the_totals_of_the_merged_report(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("src/a.py", {1: 1, 2: 0, 3: 4}, {3: (1, 2)})})
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()
    assert data["totals"] == {
        "files": 1,
        "lines": 3,
        "hits": 1,
        "misses": 1,
        "partials": 1,
        "branches": 1,
        "coverage": 33.33333,
        "coverage_display": "33.33",
    }
    html = client.get(f"/acme/web/commit/{SHA1}").text
    assert 'data-total="coverage">33.33%<' in html
    assert 'data-total="partials">1<' in html


def test_a_second_commit_is_compared_with_the_parent_its_upload_named(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 0, 3: 0, 4: 0})}, branch="main")
    upload(
        "acme/web",
        SHA2,
        {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 0, 4: 0}) + lcov("b.py", {1: 1})},
        branch="feature",
        parent=SHA1,
    )
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA2}").json()
    assert data["base"]["commit"] == SHA1
    assert data["base"]["change"] == pytest.approx(60.0 - 25.0)
    by_path = {f["path"]: f for f in data["base"]["top_files"]}
    assert by_path["a.py"]["change"] == pytest.approx(25.0)
    assert by_path["b.py"]["status"] == "added"
    html = client.get(f"/acme/web/commit/{SHA2}").text
    assert 'id="base-change">+35.00%<' in html  # with its unit


def test_without_a_parent_the_base_is_the_previous_settled_commit_of_the_branch(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 0})}, branch="main")
    upload("acme/web", SHA2, {"a.info": lcov("a.py", {1: 0, 2: 0})}, branch="main")
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA2}").json()
    assert data["base"]["commit"] == SHA1
    assert data["base"]["change"] == pytest.approx(-50.0)
    commits = client.get("/api/v1/repos/acme/web/commits").json()["commits"]
    assert [(c["commit"], c["change"]) for c in commits] == [(SHA2, -50.0), (SHA1, None)]


def test_flags_get_their_own_totals(client: TestClient, upload: Upload) -> None:
    upload("acme/web", SHA1, {"u.info": lcov("a.py", {1: 1, 2: 0})}, flags=("unit",))
    upload("acme/web", SHA1, {"i.info": lcov("a.py", {1: 0, 2: 1, 3: 1})}, flags=("integration",))
    flags = {
        f["flag"]: f for f in client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()["flags"]
    }
    assert flags["unit"]["coverage"] == 50.0
    assert flags["integration"]["lines"] == 3 and flags["integration"]["hits"] == 2


def test_the_file_table_sorts_filters_and_pages_on_the_server(
    client: TestClient, upload: Upload
) -> None:
    text = "".join(
        lcov(f"pkg/m{i:03}.py", {ln: int(ln <= i % 10) for ln in range(1, 11)}) for i in range(250)
    )
    upload("acme/web", SHA1, {"many.info": text})
    url = f"/api/v1/repos/acme/web/commits/{SHA1}"
    first = client.get(url).json()["table"]
    assert first["pages"] == 3 and len(first["files"]) == 100
    assert first["files"][0]["path"] == "pkg/m000.py"
    by_misses = client.get(url, params={"sort": "misses", "order": "desc"}).json()["table"]
    assert by_misses["files"][0]["misses"] == 10
    assert [f["misses"] for f in by_misses["files"]] == sorted(
        (f["misses"] for f in by_misses["files"]), reverse=True
    )
    filtered = client.get(url, params={"q": "M12"}).json()["table"]
    assert filtered["matching"] == 10  # m120..m129, case-insensitively
    last = client.get(url, params={"page": 3}).json()["table"]
    assert len(last["files"]) == 50


def test_flags_count_an_http_payload_stored_in_chunks(
    client: TestClient, runtime: EmbeddedRuntime
) -> None:
    services = runtime.app.services
    payload = json.dumps(
        {"coverage_files": [{"filename": "a.info", "data": lcov("a.py", {1: 1, 2: 0, 3: 1})}]}
    ).encode()
    with services.sessions.begin() as session:
        repo = Repository(name="acme/web")
        session.add(repo)
        session.flush()
        commit = upsert_commit(session, repo, SHA1, CommitMeta(branch="main"))
        upload_id = create_awaiting_upload(session, commit, UploadMeta(flags=["big"]), "v1").id
    from app import actors  # declared on the embedded app

    in_two_chunks = InChunks(io.BytesIO(payload), len(payload) // 2 + 1)
    assert admit(services, upload_id, in_two_chunks, actors.upload_processor.send) is not None
    runtime.wait_settled()
    flags = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()["flags"]
    assert [(f["flag"], f["lines"], f["hits"]) for f in flags] == [("big", 3, 2)]
