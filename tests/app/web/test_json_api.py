"""The pages' JSON: the figure the page and the badge show, rounded as codecov.yml says."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.db.models import Repository
from app.embedded import EmbeddedRuntime
from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


#: 2,183 lines, 9 of them partial: 99.58772 %, shown 99.58 (Codecov's default:
#: two places, down) where two decimals to nearest would show 99.59.
NINE_PARTIALS = lcov(
    "src/big.py", {n: 1 for n in range(1, 2184)}, {n: (1, 2) for n in range(1, 10)}
)


def set_yaml(runtime: EmbeddedRuntime, name: str, text: str | None) -> None:
    with runtime.app.services.sessions.begin() as session:
        repo = session.query(Repository).filter_by(name=name).one()
        repo.codecov_yaml = text


def test_the_pages_json_and_badge_show_one_figure_rounded_as_codecov_yml_says(
    client: TestClient, upload: Upload, runtime: EmbeddedRuntime
) -> None:
    upload("acme/web", SHA1, {"a.info": NINE_PARTIALS}, branch="main")
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()
    assert data["totals"]["coverage"] == 99.58772  # unrounded, beside the displayed one
    assert data["totals"]["coverage_display"] == "99.58"
    assert data["rounding"] == {"precision": 2, "round": "down"}
    listed = client.get("/api/v1/repos/acme/web/commits").json()["commits"][0]
    assert (listed["coverage"], listed["coverage_display"]) == (99.58772, "99.58")
    (repo,) = client.get("/api/v1/repos").json()["repositories"]
    assert (repo["coverage"], repo["coverage_display"]) == (99.58772, "99.58")
    assert 'data-total="coverage">99.58%<' in client.get(f"/acme/web/commit/{SHA1}").text
    assert ">99.58%<" in client.get("/acme/web").text
    assert ">99.58%<" in client.get("/").text
    assert ">99.58%<" in client.get("/acme/web/badge.svg").text

    set_yaml(runtime, "acme/web", "coverage:\n  precision: 1\n  round: nearest\n")
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()
    assert data["totals"]["coverage_display"] == "99.6"
    assert data["rounding"] == {"precision": 1, "round": "nearest"}
    assert 'data-total="coverage">99.6%<' in client.get(f"/acme/web/commit/{SHA1}").text
    assert ">99.6%<" in client.get("/acme/web").text
    assert ">99.6%<" in client.get("/acme/web/badge.svg").text
