"""Sign in with GitHub or GitLab, sign out, and what a signed-in user may read.

The routes (``add_routes``, before the repositories' pages):

- ``GET /-/signin``: a button per configured provider, and the read-token
  form's link; signed in, who the user is and a sign-out button. Without
  OAuth settings it is the read-token form (``/-/login``), as before.
- ``GET /-/signin/{service}``: a new ``state`` and PKCE verifier, kept in
  Redis (``app/web/sessions.py``) and the state in a cookie of this
  browser, then a redirect to the provider's authorization page.
- ``GET /-/signin/{service}/callback``: the ``state`` must be the one this
  browser started (cookie and query) and unused (taken from Redis once);
  the code is exchanged for the user's token with the verifier, the user is
  read, and a session begins (cookie ``covworker_session``: ``HttpOnly``,
  ``SameSite=Lax``, ``Secure`` behind HTTPS).
- ``POST /-/signout``: the session ends (a form with the CSRF value).

:func:`may_read` is the access check of a private repository for the
signed-in user: the provider is asked with the user's token, the answer
kept ``COVWORKER_SIGNIN_ACCESS_CACHE_S``, and asked again after; a token
the provider refuses (401) ends the session. The answer also tells whether
the repository is private (``app.db.repos.learn_provider_private``).
"""

from __future__ import annotations

import hmac
import logging
import threading
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from app.db.models import Repository
from app.db.repos import learn_provider_private
from app.providers import AccessDenied, ProviderError
from app.runtime.services import Services
from app.settings import Settings
from app.web import access, oauth
from app.web.forms import STALE_FORM, form_page, is_https, read_form, safe_next
from app.web.render import environment
from app.web.sessions import PENDING_TTL_S, SESSION_COOKIE, STATE_COOKIE, SessionStore, Viewer

logger = logging.getLogger(__name__)

#: Private repositories the repository list asks the provider about per
#: request (the others show once opened, or once the answers are cached).
LIST_CHECKS = 10
PRIVATE_CACHE = "private, no-store"

_env = environment()
_lock = threading.Lock()


def _services(request: Request) -> Services:
    services: Services = request.app.state.ctx.services  # app.api.context.ApiContext
    return services


def _store(request: Request) -> SessionStore:
    services = _services(request)
    return SessionStore(services.redis, services.settings.namespace)


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.ctx.settings
    return settings


def _apps(request: Request) -> dict[str, oauth.OAuthApp]:
    return oauth.configured_apps(_settings(request))


def _user_api(request: Request, app: oauth.OAuthApp) -> oauth.UserApi:
    """The app's client of the provider's API for users' tokens, made on first use."""
    state = request.app.state
    with _lock:
        apis: dict[str, oauth.UserApi] = getattr(state, "signin_user_apis", None) or {}
        state.signin_user_apis = apis
        if app.service not in apis:
            timeout = _settings(request).provider_timeout_s
            apis[app.service] = oauth.UserApi(app, timeout_s=timeout)
        return apis[app.service]


def offered(request: Request) -> list[str]:
    """The providers a visitor may sign in with, by label (none without OAuth settings)."""
    return [app.label for app in _apps(request).values()]


def viewer_of(request: Request) -> Viewer | None:
    """The signed-in user of this request, if any (read once per request)."""
    if "signin_viewer" in request.scope:
        found: Viewer | None = request.scope["signin_viewer"]
        return found
    session_id = request.cookies.get(SESSION_COOKIE, "")
    viewer = None
    if session_id and _apps(request):
        viewer = _store(request).load(session_id)
        if viewer is not None and viewer.service not in _apps(request):
            viewer = None  # its provider's sign-in was turned off
    request.scope["signin_viewer"] = viewer
    return viewer


# -- the access check ------------------------------------------------------------------


def may_read(request: Request, repo: Repository) -> bool:
    """Whether the signed-in user may read this repository, private on the provider.

    Only a repository the provider says is private is opened by a sign-in:
    one private on covworker alone (``--private``) and public on the provider
    keeps to its read token.
    """
    viewer = viewer_of(request)
    if viewer is None or viewer.service != repo.service or repo.provider_private is False:
        return False
    store = _store(request)
    cached = store.cached_access(viewer, [repo.id])
    if repo.id in cached:
        return cached[repo.id]
    return _ask(request, store, viewer, repo)


def _ask(request: Request, store: SessionStore, viewer: Viewer, repo: Repository) -> bool:
    services = _services(request)
    app = _apps(request)[viewer.service]
    try:
        facts = _user_api(request, app).repository(viewer.token, repo.name)
    except AccessDenied as exc:
        if exc.status_code == 401:  # the token was revoked or expired: sign in again
            store.end(viewer)
            return False
        readable = False  # GitHub's and GitLab's 404 (and 403): no access
    except ProviderError as exc:
        logger.warning("Access of %s to %s could not be checked: %s", viewer.login, repo.name, exc)
        return False  # not cached: asked again on the next request
    else:
        readable = facts.readable and facts.private
        if facts.private != repo.provider_private:
            with services.sessions.begin() as session:
                learn_provider_private(session, repo.id, facts.private)
    store.remember_access(viewer, repo.id, readable, _settings(request).signin_access_cache_s)
    return readable


def readable_ids(request: Request, session: Session) -> set[int]:
    """The private repositories the signed-in user may read, for the repository
    list: every cached answer, and up to ``LIST_CHECKS`` asked now."""
    viewer = viewer_of(request)
    if viewer is None:
        return set()
    repos = list(
        session.scalars(
            sa.select(Repository).where(
                Repository.service == viewer.service, Repository.provider_private.is_(True)
            )
        )
    )
    store = _store(request)
    cached = store.cached_access(viewer, [r.id for r in repos])
    found = {repo_id for repo_id, readable in cached.items() if readable}
    unknown = [r for r in repos if r.id not in cached][:LIST_CHECKS]
    found.update(r.id for r in unknown if _ask(request, store, viewer, r))
    return found


# -- the routes ------------------------------------------------------------------------


def _page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
    html = _env.get_template(template).render(**values)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": PRIVATE_CACHE})


def signin_page(request: Request, status: int = 200, **values: Any) -> Response:
    values.setdefault("error", None)
    values.setdefault("next", safe_next(request.query_params.get("next")))
    return form_page(
        request,
        _settings(request),
        _page,
        "signin.html",
        status,
        apps=list(_apps(request).values()),
        viewer=viewer_of(request),
        **values,
    )


def _redirect_uri(request: Request, service: str) -> str:
    base = _settings(request).public_url or str(request.base_url)
    return f"{base.rstrip('/')}/-/signin/{service}/callback"


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        httponly=True,
        samesite="lax",  # sent on the provider's redirect back (a top-level GET)
        secure=is_https(request, _settings(request)),
    )


def add_routes(router: APIRouter) -> None:
    router.add_api_route("/-/signin", signin, methods=["GET"], response_class=HTMLResponse)
    router.add_api_route("/-/signin/{service}", begin, methods=["GET"])
    router.add_api_route("/-/signin/{service}/callback", callback, methods=["GET"])
    router.add_api_route("/-/signout", signout, methods=["POST"])


def signin(request: Request) -> Response:
    if not _apps(request):  # no OAuth settings: the read-token form, as before
        target = safe_next(request.query_params.get("next"))
        return RedirectResponse(f"/-/login?next={target}", status_code=303)
    return signin_page(request)


def begin(request: Request, service: str) -> Response:
    app = _apps(request).get(service)
    if app is None:
        return signin_page(request, 404, error="Signing in with this provider is not set up.")
    state, verifier = oauth.new_state(), oauth.new_verifier()
    target = safe_next(request.query_params.get("next"))
    _store(request).begin(state, {"service": service, "verifier": verifier, "next": target})
    url = oauth.authorization_url(app, _redirect_uri(request, service), state, verifier)
    response = RedirectResponse(url, status_code=303)
    _cookie(response, request, STATE_COOKIE, state, PENDING_TTL_S)
    return response


def callback(request: Request, service: str) -> Response:
    app = _apps(request).get(service)
    query = request.query_params
    if app is None:
        return signin_page(request, 404, error="Signing in with this provider is not set up.")
    if query.get("error"):  # the user said no at the provider
        reason = f"{app.label} did not sign you in: {query.get('error', '')[:100]}."
        return signin_page(request, 400, error=reason)
    state, held = query.get("state", ""), request.cookies.get(STATE_COOKIE, "")
    if not state or not held or not hmac.compare_digest(state.encode(), held.encode()):
        return signin_page(request, 403, error=STALE_FORM)
    pending = _store(request).take(state)
    if pending is None or pending.get("service") != service or not query.get("code"):
        return signin_page(request, 403, error=STALE_FORM)
    settings = _settings(request)
    try:
        token = oauth.exchange_code(
            app,
            query["code"],
            _redirect_uri(request, service),
            str(pending["verifier"]),
            timeout_s=settings.provider_timeout_s,
        )
        login = _user_api(request, app).login(token)
    except (oauth.SignInFailed, ProviderError) as exc:
        logger.warning("Sign-in with %s failed: %s", app.label, exc)
        return signin_page(request, 502, error=f"{app.label} did not sign you in: {exc}")
    session_id = _store(request).create(service, login, token, settings.signin_session_s)
    response = RedirectResponse(safe_next(str(pending.get("next") or "/")), status_code=303)
    response.delete_cookie(STATE_COOKIE)
    _cookie(response, request, SESSION_COOKIE, session_id, settings.signin_session_s)
    return response


async def signout(request: Request) -> Response:
    form = await read_form(request)
    if not access.csrf_matches(request.cookies, form.get("csrf", "")):
        return signin_page(request, 403, error=STALE_FORM)
    viewer = viewer_of(request)
    if viewer is not None:
        _store(request).end(viewer)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response
