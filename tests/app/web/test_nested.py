"""Repositories with nested names (GitLab groups) have every page."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


def test_a_repository_with_a_nested_name_has_every_page(client: TestClient, upload: Upload) -> None:
    upload("group/sub/app", SHA1, {"a.info": lcov("src/a.py", {1: 1, 2: 0})})
    for url in (
        "/group/sub/app",
        f"/group/sub/app/commit/{SHA1}",
        f"/group/sub/app/commit/{SHA1}/file/src/a.py",
        f"/group/sub/app/commit/{SHA1}/file?path=src/a.py",
        "/group/sub/app/badge.svg",
        "/api/v1/repos/group/sub/app/commits",
        f"/api/v1/repos/group/sub/app/commits/{SHA1}",
        f"/api/v1/repos/group/sub/app/commits/{SHA1}/files/src/a.py",
        f"/api/v1/repos/group/sub/app/commits/{SHA1}/file?path=src/a.py",
    ):
        assert client.get(url).status_code == 200, url
    data = client.get(f"/api/v1/repos/group/sub/app/commits/{SHA1}").json()
    assert data["repository"] == "group/sub/app" and data["totals"]["coverage"] == 50.0
    assert client.get("/group/sub/other").status_code == 404
    assert client.get(f"/group/sub/app/commit/{SHA1}/nothing").status_code == 404
    assert client.get(f"/api/v1/repos/group/sub/app/commits/{SHA1}/nothing").status_code == 404
    assert client.get("/api/v1/repos/group/sub/app/nothing").status_code == 404
