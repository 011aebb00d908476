"""A fake GitHub that also signs users in: its OAuth pages and the calls made
with a user's token.

:class:`FakeGitHubOAuth` is :class:`tests.support.fake_github.FakeGitHub`
plus GitHub's web flow, as GitHub documents it ("Authorizing OAuth apps"):

- ``GET /login/oauth/authorize``: checks the client id, ``response_type=code``,
  a ``state`` and an S256 ``code_challenge``, then sends the browser back to
  ``redirect_uri`` with a one-time ``code`` and the same ``state`` (as the
  user :attr:`signing_in`; ``error=access_denied`` when None);
- ``POST /login/oauth/access_token`` (a form): the client's id and secret, the
  code (once), the same ``redirect_uri`` and the verifier whose S256 is the
  challenge; a token (``gho_...``), or GitHub's 200 with an ``error``;
- with a user's token, ``GET /user`` (who) and ``GET /repos/{owner}/{repo}``
  (404 for a private repository the user was not granted, else the
  repository with ``permissions``), 401 "Bad credentials" once revoked.

These two API calls are in ``openapi/github.json``: behind
:func:`tests.support.fake_github.prism_proxy` Prism checks them as it checks
the service's calls. The web flow is not part of GitHub's REST description;
the test reaches it directly (``COVWORKER_GITHUB_URL``), as a browser does.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import secrets
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode

from tests.support.fake_github import FakeGitHub, Recorded, example

CLIENT_ID = "Iv1.covworkertest"
CLIENT_SECRET = "fake-client-secret"


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class _Code:
    login: str
    redirect_uri: str
    challenge: str


@dataclass
class OAuthState:
    #: login -> repositories (OWNER/NAME) the user may read.
    grants: dict[str, set[str]] = field(default_factory=dict)
    #: token -> login, for the tokens not revoked.
    tokens: dict[str, str] = field(default_factory=dict)
    codes: dict[str, _Code] = field(default_factory=dict)
    #: What the token endpoint refused, in order (the test reads why).
    refusals: list[str] = field(default_factory=list)


class FakeGitHubOAuth(FakeGitHub):
    def __init__(self) -> None:
        super().__init__()
        self.oauth = OAuthState()
        #: The user who approves at the authorization page (None: the user says no).
        self.signing_in: str | None = None
        self._users = itertools.count(1000)
        self._user_ids: dict[str, int] = {}

    def grant(self, login: str, *repos: str) -> None:
        with self.lock:
            self.oauth.grants.setdefault(login, set()).update(repos)
            self._user_ids.setdefault(login, next(self._users))

    def revoke(self, login: str) -> None:
        """The user revokes covworker's access: their tokens stop working."""
        with self.lock:
            self.oauth.grants.pop(login, None)
            self.oauth.tokens = {t: u for t, u in self.oauth.tokens.items() if u != login}

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        path, _, query = h.path.partition("?")
        token = h.headers.get("Authorization", "").removeprefix("Bearer ")
        if path.startswith("/login/oauth/") or token.startswith("gho_") or path == "/user":
            length = int(h.headers.get("Content-Length") or 0)
            raw = h.rfile.read(length) if length else b""
            with self.lock:
                self.state.requests.append(
                    Recorded(h.command, path, raw.decode(), time.time(), query)
                )
            if path == "/login/oauth/authorize" and h.command == "GET":
                self._authorize(h, {k: v[0] for k, v in parse_qs(query).items()})
            elif path == "/login/oauth/access_token" and h.command == "POST":
                self._send(
                    h, 200, self._token({k: v[0] for k, v in parse_qs(raw.decode()).items()})
                )
            else:
                status, payload = self._as_user(h.command, path, token)
                self._send(h, status, payload)
            return
        super()._handle(h)

    def _authorize(self, h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        ok = (
            q.get("client_id") == CLIENT_ID
            and q.get("response_type") == "code"
            and q.get("state")
            and q.get("code_challenge_method") == "S256"
            and len(q.get("code_challenge", "")) == 43
            and q.get("redirect_uri", "").startswith("http")
        )
        if not ok:
            self._send(h, 400, {"message": f"bad authorization request: {sorted(q)}"})
            return
        if self.signing_in is None:
            answer = {"error": "access_denied", "state": q["state"]}
        else:
            code = secrets.token_hex(10)
            with self.lock:
                self.oauth.codes[code] = _Code(
                    self.signing_in, q["redirect_uri"], q["code_challenge"]
                )
            answer = {"code": code, "state": q["state"]}
        h.send_response(302)
        h.send_header("Location", f"{q['redirect_uri']}?{urlencode(answer)}")
        h.send_header("Content-Length", "0")
        h.end_headers()

    def _token(self, form: dict[str, str]) -> dict[str, Any]:
        with self.lock:
            code = self.oauth.codes.pop(form.get("code", ""), None)  # a code is good once
        why = None
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            why = "incorrect_client_credentials"
        elif code is None:
            why = "bad_verification_code"
        elif form.get("redirect_uri") != code.redirect_uri:
            why = "redirect_uri_mismatch"
        elif s256(form.get("code_verifier", "")) != code.challenge:
            why = "bad_verification_code"  # GitHub's answer to a wrong PKCE verifier
        if why is not None or code is None:
            with self.lock:
                self.oauth.refusals.append(str(why))
            return {"error": why, "error_description": "refused by the fake"}
        token = "gho_" + secrets.token_hex(18)
        with self.lock:
            self.oauth.tokens[token] = code.login
        return {"access_token": token, "token_type": "bearer", "scope": "repo"}

    def _as_user(self, method: str, path: str, token: str) -> tuple[int, Any]:
        with self.lock:
            login = self.oauth.tokens.get(token)
            grants = set(self.oauth.grants.get(login or "", set()))
            user_id = self._user_ids.get(login or "", 1)
        if login is None:
            return 401, {
                "message": "Bad credentials",
                "documentation_url": "https://docs.github.com/rest",
            }
        if path == "/user" and method == "GET":
            user = example("private-user-response-with-public-profile-information")
            user.update(login=login, id=user_id)
            return 200, user
        parts = path.split("/")
        if len(parts) == 4 and parts[1] == "repos" and method == "GET":
            repo = f"{parts[2]}/{parts[3]}"
            private = repo in self.state.private
            if private and repo not in grants:
                return 404, {
                    "message": "Not Found",
                    "documentation_url": "https://docs.github.com/rest",
                }
            answer = example("full-repository-default-response")
            answer.update(
                name=parts[3],
                full_name=repo,
                language=None,
                private=private,
                visibility="private" if private else "public",
                permissions={
                    "admin": False,
                    "maintain": False,
                    "push": False,
                    "triage": False,
                    "pull": repo in grants or not private,
                },
            )
            answer.pop("parent", None)
            answer.pop("source", None)
            return 200, answer
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}


def token_request(form: str) -> dict[str, str]:
    """A recorded token request's form, read."""
    return {k: v[0] for k, v in parse_qs(form).items()}


def signin_env(fake: FakeGitHubOAuth, api_url: str, *, access_cache_s: int = 300) -> dict[str, str]:
    """covworker's settings for signing in with the fake: its web pages at
    ``fake.url``, its API at ``api_url`` (Prism in front of it), the service's
    own token for feedback, and how long an access answer is trusted."""
    return {
        "COVWORKER_GITHUB_OAUTH_CLIENT_ID": CLIENT_ID,
        "COVWORKER_GITHUB_OAUTH_CLIENT_SECRET": CLIENT_SECRET,
        "COVWORKER_GITHUB_URL": fake.url,
        "COVWORKER_GITHUB_API_URL": api_url,
        "COVWORKER_GITHUB_TOKEN": "ghp_service",
        "COVWORKER_SIGNIN_ACCESS_CACHE_S": str(access_cache_s),
    }
