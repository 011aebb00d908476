"""Signing in with GitHub or GitLab: the OAuth 2.0 authorization-code flow.

The flow is RFC 6749's, its messages made by Authlib (``prepare_grant_uri``,
``prepare_token_request``) with PKCE (RFC 7636, ``S256``): GitLab requires
it of public clients and GitHub checks it when it is sent, so both get it.
``state`` and the PKCE verifier are made here and checked by
``app/web/signin.py``. The calls then made with the user's token go to the
provider's API (``COVWORKER_GITHUB_API_URL``, ``COVWORKER_GITLAB_API_URL``)
through :class:`app.providers.http.ProviderHttp`, so they fail with the
same typed errors, and the user's rate limit is kept apart from the
service's credentials:

- who the user is: GitHub ``GET /user``, GitLab ``GET /user`` (``login``,
  ``username``);
- whether the user may read a repository: GitHub ``GET /repos/{owner}/{repo}``
  (404 without access; ``permissions.pull``), GitLab ``GET /projects/{id}``
  (404 without access; Reporter or above in a private project), read by
  :func:`app.providers.github.repository_facts` and
  :func:`app.providers.gitlab.project_facts`, which also say whether the
  repository is private.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from app.providers.base import ProviderResponseInvalid, RepositoryFacts
from app.providers.http import ProviderHttp, json_object
from app.settings import Settings

#: Characters of ``state`` and of the PKCE verifier (RFC 7636: 43 to 128).
STATE_CHARS = 43
VERIFIER_CHARS = 64


class SignInFailed(Exception):
    """The provider refused the code, or answered something unreadable."""


@dataclass(frozen=True, slots=True)
class OAuthApp:
    """One provider's OAuth application, as the settings name it."""

    #: ``github`` or ``gitlab`` (a repository's ``service``).
    service: str
    #: What the sign-in button says.
    label: str
    client_id: str
    client_secret: str
    authorize_url: str
    token_url: str
    #: The provider's API root (the user's calls).
    api_url: str
    scope: str


def configured_apps(settings: Settings) -> dict[str, OAuthApp]:
    """The providers with both a client id and a secret, by service."""
    apps: dict[str, OAuthApp] = {}
    if settings.github_oauth_client_id and settings.github_oauth_client_secret:
        web = settings.github_url.rstrip("/")
        apps["github"] = OAuthApp(
            "github",
            "GitHub",
            settings.github_oauth_client_id,
            settings.github_oauth_client_secret,
            f"{web}/login/oauth/authorize",
            f"{web}/login/oauth/access_token",
            settings.github_api_url.rstrip("/"),
            settings.github_oauth_scope,
        )
    if settings.gitlab_oauth_client_id and settings.gitlab_oauth_client_secret:
        web = settings.gitlab_url.rstrip("/")
        apps["gitlab"] = OAuthApp(
            "gitlab",
            "GitLab",
            settings.gitlab_oauth_client_id,
            settings.gitlab_oauth_client_secret,
            f"{web}/oauth/authorize",
            f"{web}/oauth/token",
            settings.gitlab_api_url.rstrip("/"),
            settings.gitlab_oauth_scope,
        )
    return apps


def new_state() -> str:
    return str(generate_token(STATE_CHARS))


def new_verifier() -> str:
    return str(generate_token(VERIFIER_CHARS))


def authorization_url(app: OAuthApp, redirect_uri: str, state: str, verifier: str) -> str:
    """Where the browser is sent to approve covworker."""
    uri: str = prepare_grant_uri(
        app.authorize_url,
        app.client_id,
        "code",
        redirect_uri=redirect_uri,
        scope=app.scope or None,
        state=state,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
    )
    return uri


def exchange_code(
    app: OAuthApp, code: str, redirect_uri: str, verifier: str, *, timeout_s: float
) -> str:
    """The user's access token for the code (the client authenticates with
    its secret in the body, which GitHub and GitLab both accept)."""
    body = prepare_token_request(
        "authorization_code",
        code=code,
        redirect_uri=redirect_uri,
        client_id=app.client_id,
        client_secret=app.client_secret,
        code_verifier=verifier,
    )
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    try:
        response = httpx.post(app.token_url, content=body, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise SignInFailed(f"{app.label} could not be reached: {exc}") from exc
    try:
        payload = response.json()
    except json.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        raise SignInFailed(f"{app.label} answered {response.status_code} without a token")
    # GitHub answers a refused code with 200 and an ``error``; GitLab with 400.
    if payload.get("error") or not isinstance(payload.get("access_token"), str):
        error = str(payload.get("error") or "no token")[:100]
        described = str(payload.get("error_description") or "")[:200]
        reason = f"{error} ({described})" if described else error
        raise SignInFailed(f"{app.label} refused the sign-in: {reason}")
    return str(payload["access_token"])


class UserApi:
    """The provider's API as the signed-in user (their token, their rate limit)."""

    def __init__(self, app: OAuthApp, *, timeout_s: float) -> None:
        self.app = app
        self.http = ProviderHttp(app.api_url, timeout_s=timeout_s)

    def close(self) -> None:
        self.http.close()

    def _get(self, path: str, token: str, repo: str) -> dict[str, Any]:
        credential = "user:" + hashlib.sha256(token.encode()).hexdigest()[:16]
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if self.app.service == "github":
            headers["Accept"] = "application/vnd.github+json"
        response = self.http.request(
            "GET", path, kind="signin", headers=headers, credential=credential, repo=repo
        )
        assert response is not None
        return json_object(response)

    def login(self, token: str) -> str:
        """The user's name on the provider (GitHub ``login``, GitLab ``username``)."""
        field = "login" if self.app.service == "github" else "username"
        found = self._get("/user", token, "").get(field)
        if not isinstance(found, str) or not found:
            raise ProviderResponseInvalid(f"the user has no {field}")
        return found

    def repository(self, token: str, repo: str) -> RepositoryFacts:
        """The repository as the user sees it; ``AccessDenied`` (404) when they cannot."""
        if self.app.service == "github":
            from app.providers.github import repo_path, repository_facts

            return repository_facts(self._get(f"/repos/{repo_path(repo)}", token, repo))
        from app.providers.gitlab import project_facts, project_id

        return project_facts(self._get(f"/projects/{project_id(repo)}", token, repo))
