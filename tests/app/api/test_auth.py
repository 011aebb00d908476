"""Which repository a request is for, and whether its token opens it: the
slug and header parsing, the repository cache, and the refusals, which never
tell a stranger whether a repository exists."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api.auth import (
    TOKENLESS,
    RepositoryCache,
    authorise,
    authorise_cached,
    authorise_legacy,
    decode_slug,
    token_from_header,
)
from app.api.errors import ApiError
from app.db.models import Repository
from app.db.repos import add_repository, rotate_token
from app.embedded import EmbeddedRuntime
from app.runtime.services import Services
from app.web.access import make_private
from tests.app.api.conftest import BASE, COVERAGE_BODY, REFUSED, SHA, auth, counts


def add(services: Services, name: str, service: str = "github") -> str:
    with services.sessions.begin() as session:
        return add_repository(session, name, service).token


def refusal(call: Callable[..., object], *args: object) -> ApiError:
    """The ApiError ``call(*args)`` raises."""
    with pytest.raises(ApiError) as refused:
        call(*args)
    return refused.value


def test_a_slug_decodes_to_the_lower_case_name_nested_groups_included() -> None:
    assert decode_slug("Acme::::Web") == "acme/web"
    assert decode_slug("group:::sub::::proj") == "group/sub/proj"


@pytest.mark.parametrize(
    "slug", ["acme-web", "acme::::", "::::web", "a:::::::b", "acme::::w/eb", "ac:me::::web"]
)
def test_a_slug_not_of_the_form_owner_repo_is_404_naming_it(slug: str) -> None:
    refused = refusal(decode_slug, slug)
    assert refused.status == 404
    assert refused.detail == f"slug {slug!r} is not of the form owner::::repo"


def test_the_token_is_read_from_a_token_or_bearer_header_and_absent_is_empty() -> None:
    assert token_from_header("token abc") == "abc"
    assert token_from_header("  Bearer   abc  ") == "abc"
    assert token_from_header(None) == token_from_header("") == ""


@pytest.mark.parametrize("header", ["abc", "Basic abc", "token ", "token"])
def test_any_other_authorization_header_is_401(header: str) -> None:
    refused = refusal(token_from_header, header)
    assert refused.status == 401 and "'token <upload token>'" in refused.detail


def test_authorise_returns_the_repository_its_token_opens(services: Services) -> None:
    token = add(services, "acme/web")
    assert authorise(services, "github", "acme/web", token).name == "acme/web"


def test_an_unknown_repository_a_wrong_token_and_another_service_get_the_same_401(
    services: Services,
) -> None:
    token = add(services, "acme/web")
    other = add(services, "acme/other")
    cases = [
        ("github", "acme/nope", token, "acme/nope"),
        ("github", "acme/web", other, "acme/web"),
        ("gitlab", "acme/web", token, "acme/web"),
    ]
    for service, name, presented, named in cases:
        refused = refusal(authorise, services, service, name, presented)
        assert (refused.status, refused.detail) == (401, REFUSED.format(named))


def test_no_token_is_401_tokenless_and_an_unknown_service_404(services: Services) -> None:
    add(services, "acme/web")
    tokenless = refusal(authorise, services, "github", "acme/web", "")
    assert (tokenless.status, tokenless.detail) == (401, TOKENLESS)
    unknown = refusal(authorise, services, "svn", "acme/web", "t")
    assert unknown.status == 404 and unknown.detail.startswith("unknown git service 'svn': one of")


def test_the_cache_answers_from_memory_until_its_ttl_then_reads_again(
    services: Services,
) -> None:
    old = add(services, "acme/web")
    cache = RepositoryCache(ttl_s=3600)
    assert cache.fresh("acme/web") is None
    assert authorise_cached("github", "acme/web", old, cache) is None  # not cached: no answer
    authorise(services, "github", "acme/web", old, cache)
    with services.sessions.begin() as session:
        new = rotate_token(session, "acme/web").token
    assert authorise_cached("github", "acme/web", old, cache) is not None  # within the ttl
    assert refusal(authorise_cached, "github", "acme/web", new, cache).status == 401
    cache.ttl_s = 0  # expired: the rotated token is read
    assert authorise(services, "github", "acme/web", new, cache).name == "acme/web"
    assert refusal(authorise, services, "github", "acme/web", old, cache).status == 401


def test_the_cache_keeps_no_row_for_a_name_nobody_has(services: Services) -> None:
    cache = RepositoryCache()
    assert cache.get(services, "acme/nope") is None
    assert cache._rows == {}


def test_the_legacy_uploader_is_refused_in_text(services: Services) -> None:
    token = add(services, "acme/web")
    cases = [
        (None, "", TOKENLESS),
        ("acme/nope", token, REFUSED.format("acme/nope")),
        ("acme/web", "0" * 36, REFUSED.format("acme/web")),
        (None, "0" * 36, "the upload token is not valid for any repository"),
    ]
    for slug, presented, detail in cases:
        refused = refusal(authorise_legacy, services, slug, presented)
        assert (refused.status, refused.detail, refused.plain) == (401, detail, True), slug


def test_the_legacy_uploader_names_the_repository_in_any_case_or_only_by_its_token(
    services: Services,
) -> None:
    token = add(services, "acme/web")
    assert authorise_legacy(services, "Acme/WEB", token).name == "acme/web"
    assert authorise_legacy(services, None, token).name == "acme/web"
    with services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Repository)) == 1


def test_unknown_service_and_slug_are_404_naming_them(client: TestClient, token: str) -> None:
    cases = {
        "/upload/svn/acme::::web/commits": "unknown git service 'svn'",
        "/upload/github/acme-web/commits": "slug 'acme-web' is not of the form owner::::repo",
    }
    for path, detail in cases.items():
        reply = client.post(path, json={"commitid": SHA}, headers=auth(token))
        assert (reply.status_code, reply.json()["detail"][: len(detail)]) == (404, detail), path


def test_an_unknown_repository_is_answered_like_a_token_that_does_not_open_a_known_one(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    """A stranger cannot tell which repositories exist (private ones included)."""
    with runtime.app.services.sessions.begin() as session:
        make_private(session, "acme/web")
    wrong = client.post(f"{BASE}/commits", json={"commitid": SHA}, headers=auth("0" * 36))
    for path, name in {
        "/upload/github/acme::::nope/commits": "acme/nope",
        "/upload/gitlab/acme::::web/commits": "acme/web",
    }.items():
        unknown = client.post(path, json={"commitid": SHA}, headers=auth(token))
        assert (unknown.status_code, unknown.json()["detail"]) == (401, REFUSED.format(name))
    assert (wrong.status_code, wrong.json()["detail"]) == (401, REFUSED.format("acme/web"))
    assert counts(runtime) == (0, 0)


def test_repository_names_over_http_are_compared_without_case(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    reply = client.post(
        "/upload/github/Acme::::WEB/upload-coverage", json=COVERAGE_BODY, headers=auth(token)
    )
    assert reply.status_code == 201, reply.text
    assert counts(runtime) == (1, 1)


def test_unknown_repository_names_do_not_grow_the_repository_cache(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    cache = client.app.state.ctx.repositories  # type: ignore[attr-defined]
    before = (len(cache._reading), len(cache._rows))
    for i in range(300):
        slug = f"acme::::{'n' * 200}{i}"
        reply = client.post(f"/upload/github/{slug}/commits", json={}, headers=auth(token))
        assert reply.status_code == 401
    assert (len(cache._reading), len(cache._rows)) == before
