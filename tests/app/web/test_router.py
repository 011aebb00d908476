"""The pages, their JSON and the badge as the router serves them, on the
embedded pipeline (fakeredis + SQLite)."""

from __future__ import annotations

import io
import json
import re

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from app.api import create_app
from app.db.models import Repository
from app.embedded import EmbeddedRuntime
from app.ingest.admit import InChunks, admit
from app.ingest.store import CommitMeta, UploadMeta, create_awaiting_upload, upsert_commit
from app.settings import Settings
from app.web.access import CSRF_COOKIE, READ_COOKIE, hash_token, make_private
from app.web.lines import FILE_PAGE_LINES
from tests.app.web.conftest import OPS_TOKEN, Upload, lcov

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


def test_a_path_from_an_upload_renders_as_text(client: TestClient, upload: Upload) -> None:
    evil = "<script>alert(1)</script>.js"
    upload("acme/web", SHA1, {"x.info": lcov(evil, {1: 1})})
    for url in (f"/acme/web/commit/{SHA1}", f"/acme/web/commit/{SHA1}/file/{evil}"):
        html = client.get(url).text
        assert "<script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;.js" in html


def test_the_file_page_marks_lines_and_folds_runs_of_misses(
    client: TestClient, upload: Upload
) -> None:
    hits = {1: 1, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 3, 8: 0}
    upload("acme/web", SHA1, {"f.info": lcov("f.py", hits, {7: (1, 2)})})
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}/files/f.py").json()
    assert [(r["line"], r["kind"]) for r in data["lines"]] == [
        (1, "hit"),
        (2, "miss"),
        (3, "miss"),
        (4, "miss"),
        (5, "miss"),
        (6, "miss"),
        (7, "partial"),
        (8, "miss"),
    ]
    html = client.get(f"/acme/web/commit/{SHA1}/file/f.py").text
    assert "5 missed lines" in html and '<a href="#L2">2\u20136</a>' in html
    assert "1/2" in html
    assert client.get(f"/acme/web/commit/{SHA1}/file/nope.py").status_code == 404


@pytest.fixture
def secret_token(upload: Upload, runtime: EmbeddedRuntime) -> str:
    """acme/secret with one upload, made private; the token that reads it."""
    upload("acme/secret", SHA1, {"a.info": lcov("a.py", {1: 1})})
    with runtime.app.services.sessions.begin() as session:
        return make_private(session, "acme/secret")


def test_a_private_repository_is_404_without_its_read_token(
    client: TestClient, secret_token: str
) -> None:
    urls = [
        "/acme/secret",
        f"/acme/secret/commit/{SHA1}",
        "/acme/secret/badge.svg",
        "/api/v1/repos/acme/secret/commits",
    ]
    for url in urls:
        assert client.get(url).status_code == 404, url
        assert client.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 404
        assert (
            client.get(url, headers={"Authorization": f"Bearer {secret_token}"}).status_code == 200
        )
    unknown = client.get("/acme/nothing-here")
    assert unknown.status_code == 404
    assert client.get("/acme/secret").text == unknown.text.replace(
        "/acme/nothing-here", "/acme/secret"
    )
    assert "acme/secret" not in client.get("/").text
    signed_in = client.post(
        "/-/login",
        data={"token": secret_token, "next": "/acme/secret", "csrf": csrf_of(client)},
        follow_redirects=False,
    )
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/acme/secret"
    # The cookie holds the token's hash, never the token itself.
    assert client.cookies.get(READ_COOKIE) == hash_token(secret_token)
    assert client.get("/acme/secret").status_code == 200
    assert "acme/secret" in client.get("/").text


def csrf_of(client: TestClient, form: str = "/-/login") -> str:
    """The CSRF value of the login form the browser loads first."""
    page = client.get(form)
    value = client.cookies.get(CSRF_COOKIE)
    assert value and f'name="csrf" value="{value}"' in page.text
    return value


def test_a_login_posted_without_the_forms_csrf_value_is_refused_and_sets_no_cookie(
    client: TestClient, secret_token: str
) -> None:
    """Another site cannot sign a visitor in with its own token."""
    csrf_of(client)
    for forged in ({"token": secret_token}, {"token": secret_token, "csrf": "x" * 43}):
        reply = client.post("/-/login", data=forged, follow_redirects=False)
        assert reply.status_code == 403 and "came from another site" in reply.text
        assert READ_COOKIE not in reply.headers.get("set-cookie", "")
    assert client.get("/acme/secret").status_code == 404


def test_a_huge_login_token_is_refused_and_never_echoed_into_a_cookie(client: TestClient) -> None:
    csrf = csrf_of(client)
    reply = client.post("/-/login", data={"token": "t" * 100_000, "csrf": csrf})
    assert reply.status_code == 400 and "set-cookie" not in {
        k for k, v in reply.headers.items() if READ_COOKIE in v
    }
    big = client.post("/-/login", content=b"token=" + b"t" * 2_000_000 + b"&csrf=" + csrf.encode())
    assert big.status_code == 413 and READ_COOKIE not in big.headers.get("set-cookie", "")


def test_a_login_form_with_too_many_fields_is_a_400_not_a_500(client: TestClient) -> None:
    body = "&".join(f"f{n}=1" for n in range(50))
    form = {"content-type": "application/x-www-form-urlencoded"}
    for url in ("/-/login", "/-/ops/login"):
        reply = client.post(url, content=body, headers=form, follow_redirects=False)
        assert reply.status_code == 400, url
        assert READ_COOKIE not in reply.headers.get("set-cookie", "")


def test_cookies_are_secure_when_the_pages_are_reached_over_https(
    runtime: EmbeddedRuntime, upload: Upload
) -> None:
    settings = Settings(
        redis_url="redis://unused",
        database_url=runtime.app.settings.database_url,
        public_url="https://cov.example.com",
    )
    with TestClient(create_app(settings, covworker=runtime.app)) as https:
        reply = https.get("/-/login")
        assert "secure" in reply.headers["set-cookie"].lower()
        csrf = reply.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        signed = https.post(
            "/-/login",
            data={"token": "t", "csrf": csrf},
            headers={"Cookie": f"{CSRF_COOKIE}={csrf}"},  # a Secure cookie, sent over http here
            follow_redirects=False,
        )
        assert signed.status_code == 303
        assert "secure" in signed.headers["set-cookie"].lower()


def test_every_response_carries_the_security_headers_and_private_data_is_not_cached(
    client: TestClient, secret_token: str
) -> None:
    for url in ("/", "/api/v1/repos", "/-/login", "/acme/secret/badge.svg", "/healthz"):
        headers = client.get(url).headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"], url
        assert "script-src 'self'" in headers["content-security-policy"], url
        assert headers["x-content-type-options"] == "nosniff", url
        assert headers["x-frame-options"] == "DENY", url
    listing = client.get("/api/v1/repos", headers={"Authorization": f"Bearer {secret_token}"})
    assert [r["name"] for r in listing.json()["repositories"]] == ["acme/secret"]
    assert "private" in listing.headers["cache-control"]


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


def test_the_login_form_only_redirects_within_the_site(client: TestClient) -> None:
    reply = client.post(
        "/-/login",
        data={"token": "t", "next": "//evil.example/", "csrf": csrf_of(client)},
        follow_redirects=False,
    )
    assert reply.headers["location"] == "/"


def test_the_badge_is_an_svg_with_the_coverage(client: TestClient, upload: Upload) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 0})})
    reply = client.get("/acme/web/badge.svg")
    assert reply.headers["content-type"].startswith("image/svg+xml")
    assert ">66.66%<" in reply.text  # two places, down, as the pages


def test_the_operations_page_needs_its_token(client: TestClient, upload: Upload) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1})})
    assert client.get("/-/ops").status_code == 401
    assert client.get("/api/v1/ops", headers={"Authorization": "Bearer nope"}).status_code == 401
    data = client.get("/api/v1/ops", headers={"Authorization": f"Bearer {OPS_TOKEN}"}).json()
    assert data["notifications"][0]["commit"] == SHA1
    assert set(data["broker"]) >= {"ready", "in_flight", "delayed", "dead", "dead_letters"}
    client.post("/-/ops/login", data={"token": OPS_TOKEN, "csrf": csrf_of(client, "/-/ops")})
    page = client.get("/-/ops")
    assert page.status_code == 200 and 'id="ops-live"' in page.text
    assert (
        page.text.count('src="/-/static/ops.js"') == 1
        and "<script" not in page.text.split("</nav>")[0]
    )


def test_absolute_and_folded_paths_link_to_their_file_page(
    client: TestClient, upload: Upload
) -> None:
    paths = ["/ci/build/src/a.c", "src/upload/b.py", "c.py"]
    upload("acme/web", SHA1, {"x.info": "".join(lcov(p, {1: 1}) for p in paths)})
    html = client.get(f"/acme/web/commit/{SHA1}").text
    links = re.findall(r'<a href="(/acme/web/commit/[^"]+/file[^"]*)">', html)
    assert len(links) == 3
    for link in links:
        page = client.get(link.replace("&amp;", "&"))
        assert page.status_code == 200, link
    assert f"/acme/web/commit/{SHA1}/file/c.py" in links


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


def test_a_failed_upload_shows_its_readable_error(client: TestClient, upload: Upload) -> None:
    upload(
        "acme/web",
        SHA1,
        {"good.info": lcov("a.py", {1: 1}), "bad.txt": "this is not a coverage report\n"},
    )
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()
    failed = [u for u in data["uploads"] if u["state"] == "error"]
    assert len(failed) == 1 and failed[0]["error"]
    assert data["state"] == "errors" and data["totals"]["lines"] == 1
    html = client.get(f"/acme/web/commit/{SHA1}").text
    assert '<div class="error small">' in html
    assert str(escape(failed[0]["error"])) in html


def test_a_large_file_page_is_a_window_of_lines_with_links_to_the_rest(
    client: TestClient, upload: Upload
) -> None:
    """What one GET costs is bounded by the window, not by the file."""
    total = 3 * FILE_PAGE_LINES + 10
    upload("acme/web", SHA1, {"big.info": lcov("big.py", {n: n % 3 for n in range(1, total + 1)})})
    page = client.get(f"/acme/web/commit/{SHA1}/file/big.py")
    assert page.status_code == 200 and page.headers["cache-control"] == "private, no-store"
    assert len(page.content) < 1_000_000
    assert f"of {total} instrumented lines" in page.text and 'rel="next"' in page.text
    assert 'rel="prev"' not in page.text

    api = f"/api/v1/repos/acme/web/commits/{SHA1}/files/big.py"
    first = client.get(api).json()
    assert len(first["lines"]) == FILE_PAGE_LINES and first["lines"][0]["line"] == 1
    assert first["window"]["next_from"] == FILE_PAGE_LINES + 1
    last = client.get(api, params={"from": 3 * FILE_PAGE_LINES + 1}).json()
    assert [r["line"] for r in last["lines"]] == list(range(3 * FILE_PAGE_LINES + 1, total + 1))
    assert last["window"] == {
        "from": 3 * FILE_PAGE_LINES + 1,
        "to": total,
        "instrumented_lines": total,
        "previous_from": 2 * FILE_PAGE_LINES + 1,
        "next_from": None,
    }
    second = FILE_PAGE_LINES + 1
    middle = client.get(f"/acme/web/commit/{SHA1}/file/big.py", params={"from": second})
    assert 'rel="prev"' in middle.text and "from=1" in middle.text
    assert f"from={2 * FILE_PAGE_LINES + 1}" in middle.text


def test_the_operations_page_without_a_token_configured_says_how_to_turn_it_on(
    runtime: EmbeddedRuntime,
) -> None:
    settings = Settings(redis_url="redis://unused", database_url=runtime.app.settings.database_url)
    with TestClient(create_app(settings, covworker=runtime.app)) as off:
        page = off.get("/-/ops")
        assert page.status_code == 404
        assert page.headers["content-type"].startswith("text/html")
        assert "COVWORKER_OPS_TOKEN" in page.text and '<link rel="stylesheet"' in page.text
        api = off.get("/api/v1/ops")
        assert api.status_code == 404 and "COVWORKER_OPS_TOKEN" in api.json()["detail"]


def test_a_file_page_stops_rendering_when_its_client_goes_away(
    client: TestClient, upload: Upload, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page is rendered while it is sent: a client that disconnects at
    once gets (and costs) a few chunks of it, not the whole page (a page
    rendered before it is sent would send every byte)."""
    import anyio

    from app.web import router

    upload("acme/web", SHA1, {"big.info": lcov("big.py", {n: 1 for n in range(1, 2000)})})
    monkeypatch.setattr(router, "PAGE_CHUNK_CHARS", 1000)
    path = f"/acme/web/commit/{SHA1}/file/big.py"
    whole = len(client.get(path).content)

    async def fetch(disconnect_at_once: bool) -> int:
        sent: list[bytes] = []
        asked = False

        async def receive() -> dict[str, object]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if not disconnect_at_once:
                await anyio.sleep_forever()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                sent.append(message["body"])  # type: ignore[arg-type]

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
            "query_string": b"", "headers": [(b"host", b"testserver")],
            "client": ("127.0.0.1", 1), "server": ("testserver", 80),
        }  # fmt: skip
        with anyio.fail_after(60):
            await client.app(scope, receive, send)  # type: ignore[arg-type]
        return sum(map(len, sent))

    assert anyio.run(fetch, False) == whole > 20_000
    assert anyio.run(fetch, True) < whole // 4


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


def test_the_badge_shows_the_branch_it_is_asked_for_else_the_default_branch(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 0})}, branch="main")
    upload("acme/web", SHA2, {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 0})}, branch="feature")
    assert ">50.00%<" in client.get("/acme/web/badge.svg").text
    assert ">66.66%<" in client.get("/acme/web/badge.svg", params={"branch": "feature"}).text
    assert ">unknown<" in client.get("/acme/web/badge.svg", params={"branch": "nope"}).text
    hostile = '"><script>alert(1)</script>' + "x" * 5000
    reply = client.get("/acme/web/badge.svg", params={"branch": hostile})
    assert reply.status_code == 200 and ">unknown<" in reply.text and "<script" not in reply.text
    nested = client.get("/acme/web/badge.svg?branch=feature").text
    assert ">66.66%<" in nested


def test_the_commit_page_and_the_status_name_the_records_an_upload_skipped(
    client: TestClient, upload: Upload, runtime: EmbeddedRuntime
) -> None:
    from app.cli.render import uploads_table
    from app.queries import commit_status
    from tests.app.cli.test_render import text

    bad = "TN:\nSF:src/a.py\nDA:0,skipped\nDA:1,1\nFNDA:,not_hit\nDA:DA:130,0\nend_of_record\n"
    upload("acme/web", SHA1, {"a.info": bad})
    summary = (
        "3 records skipped: `DA:0,skipped` at line 3, `FNDA:,not_hit` at line 5, "
        "`DA:DA:130,0` at line 6"
    )
    html = client.get(f"/acme/web/commit/{SHA1}").text
    assert str(escape(summary)) in html
    status = commit_status(runtime.app.services, "acme/web", SHA1)
    (row,) = status["upload_list"]
    assert row["state"] == "merged" and row["skipped"] == summary
    assert "3 records skipped" in " ".join(text(uploads_table([row])).split())
    assert client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()["totals"]["lines"] == 1
