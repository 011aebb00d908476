"""The vendored assets and the sign-in by read token (``/-/static``,
``/-/login``): routed before ``/{owner}/{name}``, since ``-`` is a valid owner."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import (
    HTMLResponse,
    RedirectResponse,
    Response,
)

from app.settings import Settings
from app.web import access
from app.web.deps import PageSettings
from app.web.forms import STALE_FORM, form_page, read_form, safe_next, set_login_cookie
from app.web.render import STATIC
from app.web.responses import page

#: The vendored assets, by URL name (nothing is fetched from elsewhere).
STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}


entry_router = APIRouter(include_in_schema=False)


@entry_router.get("/-/static/{name}")
def static(name: str) -> Response:
    path = STATIC / name
    kind = STATIC_TYPES.get(path.suffix)
    if kind is None or "/" in name or not path.is_file():
        return Response("not found", status_code=404)
    return Response(path.read_bytes(), media_type=kind, headers={"Cache-Control": "max-age=3600"})


@entry_router.get("/favicon.ico")
def favicon() -> Response:  # what browsers ask for on a page without <link rel=icon>
    return static("favicon.svg")


def login_page(request: Request, settings: Settings, status: int = 200, **values: Any) -> Response:
    return form_page(request, settings, page, "login.html", status, **values)


@entry_router.get("/-/login", response_class=HTMLResponse)
def login_form(request: Request, settings: PageSettings) -> Response:
    target = safe_next(request.query_params.get("next"))
    return login_page(request, settings, next=target, error=None)


@entry_router.post("/-/login")
async def login(request: Request, settings: PageSettings) -> Response:
    form = await read_form(request)
    token = form.get("token", "").strip()
    target = safe_next(form.get("next", "/"))
    if not access.csrf_matches(request.cookies, form.get("csrf", "")):
        return login_page(request, settings, 403, next=target, error=STALE_FORM)
    if not token or len(token) > access.MAX_TOKEN_CHARS:
        return login_page(request, settings, 400, next=target, error="Enter a read token.")
    held = access.cookie_hashes(request.cookies.get(access.READ_COOKIE, ""))
    hashed = access.hash_token(token)
    kept = [h for h in held if h != hashed][-(access.MAX_COOKIE_TOKENS - 1) :]
    response = RedirectResponse(target, status_code=303)
    tokens = " ".join([*kept, hashed])
    set_login_cookie(
        response,
        request,
        settings,
        access.READ_COOKIE,
        tokens,
        samesite="lax",
        max_age=30 * 24 * 3600,
    )
    return response
