"""The OAuth messages covworker sends, and what a user's token is told.

The whole flow against a fake GitHub behind Prism is in ``test_signin.py``;
here the pieces, without a server: the providers the settings configure,
the authorization URL, the token exchange's refusals, and GitLab's access
levels (GitHub's are read in ``test_signin.py``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from app.providers import AccessDenied
from app.settings import Settings
from app.web import oauth
from tests.support.fake_oauth import s256


def settings(**values: Any) -> Settings:
    return Settings(redis_url="redis://unused", **values)


def test_a_provider_is_offered_only_with_both_its_client_id_and_secret() -> None:
    assert oauth.configured_apps(settings(github_oauth_client_id="id")) == {}
    apps = oauth.configured_apps(
        settings(
            github_oauth_client_id="id",
            github_oauth_client_secret="s",
            github_url="https://ghe.example/",
            github_api_url="https://ghe.example/api/v3",
            gitlab_oauth_client_id="gid",
            gitlab_oauth_client_secret="gs",
        )
    )

    assert apps["github"].authorize_url == "https://ghe.example/login/oauth/authorize"
    assert apps["github"].token_url == "https://ghe.example/login/oauth/access_token"
    assert apps["github"].api_url == "https://ghe.example/api/v3"
    assert apps["gitlab"].authorize_url == "https://gitlab.com/oauth/authorize"
    assert apps["gitlab"].token_url == "https://gitlab.com/oauth/token"
    assert apps["gitlab"].api_url == "https://gitlab.com/api/v4"


def test_the_authorization_url_carries_state_scope_and_the_verifiers_s256() -> None:
    app = oauth.configured_apps(
        settings(gitlab_oauth_client_id="gid", gitlab_oauth_client_secret="gs")
    )["gitlab"]
    state, verifier = oauth.new_state(), oauth.new_verifier()

    url = urlsplit(oauth.authorization_url(app, "https://cov.example/cb", state, verifier))
    query = {k: v[0] for k, v in parse_qs(url.query).items()}

    assert f"{url.scheme}://{url.netloc}{url.path}" == "https://gitlab.com/oauth/authorize"
    assert query == {
        "response_type": "code",
        "client_id": "gid",
        "redirect_uri": "https://cov.example/cb",
        "scope": "read_api",
        "state": state,
        "code_challenge": s256(verifier),
        "code_challenge_method": "S256",
    }
    assert len(state) >= 43 and 43 <= len(verifier) <= 128 and state != oauth.new_state()


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, {"error": "bad_verification_code"}),  # GitHub's refusal
        (400, {"error": "invalid_grant", "error_description": "expired"}),  # GitLab's
        (200, {"token_type": "bearer"}),
        (502, "<html>bad gateway</html>"),
    ],
)
def test_a_token_answer_without_a_token_is_a_failed_sign_in(
    monkeypatch: pytest.MonkeyPatch, status: int, body: Any
) -> None:
    def post(url: str, **kwargs: Any) -> httpx.Response:
        content = json.dumps(body) if isinstance(body, dict) else body
        return httpx.Response(status, content=content)

    monkeypatch.setattr(httpx, "post", post)
    app = oauth.configured_apps(
        settings(github_oauth_client_id="id", github_oauth_client_secret="s")
    )["github"]

    with pytest.raises(oauth.SignInFailed, match="GitHub"):
        oauth.exchange_code(app, "code", "https://cov.example/cb", "v" * 43, timeout_s=1)


def gitlab_user_api(project: dict[str, Any] | None) -> oauth.UserApi:
    app = oauth.configured_apps(
        settings(gitlab_oauth_client_id="gid", gitlab_oauth_client_secret="gs")
    )["gitlab"]
    api = oauth.UserApi(app, timeout_s=1)

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer user-token"
        assert request.url.raw_path == b"/api/v4/projects/group%2Fsub%2Fproj"
        if project is None:
            return httpx.Response(404, json={"message": "404 Project Not Found"})
        return httpx.Response(200, json={"id": 1, "default_branch": "main", **project})

    api.http.client = httpx.Client(transport=httpx.MockTransport(answer))
    return api


@pytest.mark.parametrize(
    ("project", "private", "readable"),
    [
        ({"visibility": "public", "permissions": None}, False, True),
        ({"visibility": "internal", "permissions": None}, True, True),
        (
            {"visibility": "private", "permissions": {"project_access": {"access_level": 10}}},
            True,
            False,
        ),
        (
            {"visibility": "private", "permissions": {"project_access": {"access_level": 20}}},
            True,
            True,
        ),
        (
            {"visibility": "private", "permissions": {"group_access": {"access_level": 30}}},
            True,
            True,
        ),
        ({"visibility": "private", "permissions": {"project_access": None}}, True, False),
    ],
)
def test_a_gitlab_user_reads_a_private_project_as_a_reporter_or_above(
    project: dict[str, Any], private: bool, readable: bool
) -> None:
    facts = gitlab_user_api(project).repository("user-token", "group/sub/proj")

    assert (facts.private, facts.readable, facts.default_branch) == (private, readable, "main")


def test_a_project_the_gitlab_user_cannot_see_is_access_denied() -> None:
    with pytest.raises(AccessDenied):
        gitlab_user_api(None).repository("user-token", "group/sub/proj")
