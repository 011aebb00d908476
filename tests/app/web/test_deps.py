"""What the handlers take: the URL's repository found without case, query arguments bounded."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


def test_repository_names_in_urls_are_compared_without_case(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1})})
    for url in ("/Acme/Web", f"/ACME/web/commit/{SHA1}", "/api/v1/repos/Acme/WEB/commits"):
        assert client.get(url).status_code == 200, url


def test_a_nul_byte_or_a_huge_offset_in_a_url_is_a_4xx_not_a_500(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1})})
    assert client.get("/acme/we%00b").status_code == 400
    assert client.get(f"/acme/web/commit/{SHA1}/file/a%00.py").status_code == 400
    assert client.get("/api/v1/repos/acme/web/commits?offset=%00").status_code == 400
    huge = "99999999999999999999999"
    assert client.get(f"/acme/web?offset={huge}").status_code == 200
    assert client.get(f"/api/v1/repos/acme/web/commits?offset={huge}").status_code == 200
    assert client.get(f"/api/v1/repos/acme/web/commits?offset={huge}").json()["commits"] == []
