"""The login forms: their CSRF value, their bodies, and whether cookies are ``Secure``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import parse_qs, quote

from fastapi import HTTPException, Request
from fastapi.responses import Response

from app.settings import Settings
from app.web import access

#: Most fields a login form's body may hold (the forms have three).
MAX_FORM_FIELDS = 20
#: What a login form posted without this browser's CSRF value is told.
STALE_FORM = "This form expired or came from another site: sign in again here."


def is_https(request: Request, settings: Settings) -> bool:
    """Whether the browser reaches the pages over HTTPS (directly, through a
    proxy uvicorn trusts, or as ``COVWORKER_PUBLIC_URL`` says)."""
    return request.url.scheme == "https" or settings.public_url.startswith("https://")


def set_login_cookie(
    response: Response,
    request: Request,
    settings: Settings,
    name: str,
    value: str,
    *,
    samesite: Literal["lax", "strict"],
    max_age: int | None = None,
) -> None:
    """Set one of the login cookies: never read by scripts, ``Secure`` when
    the pages are served over HTTPS, a browser session long without ``max_age``."""
    response.set_cookie(
        name,
        value,
        httponly=True,
        samesite=samesite,
        secure=is_https(request, settings),
        max_age=max_age,
    )


def form_page(
    request: Request,
    settings: Settings,
    page: Callable[..., Response],
    template: str,
    status: int = 200,
    **values: Any,
) -> Response:
    """A page with a login form: its CSRF value, set in the cookie it must match."""
    csrf = access.csrf_value(request.cookies)
    response = page(template, status=status, csrf=csrf, **values)
    set_login_cookie(response, request, settings, access.CSRF_COOKIE, csrf, samesite="strict")
    return response


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (first value of each); the body is bounded
    by ``COVWORKER_MAX_REQUEST_BODY_BYTES`` (``app.api.limits``), its fields
    by ``MAX_FORM_FIELDS``: more is a 400."""
    text = (await request.body()).decode(errors="replace")
    try:
        fields = parse_qs(text, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # parse_qs's answer to too many fields
        raise HTTPException(400, f"a form has at most {MAX_FORM_FIELDS} fields") from None
    return {name: values[0] for name, values in fields.items() if values}


def safe_next(target: str | None) -> str:
    """Only a path on this site: never ``//host`` or a scheme (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return quote(target, safe="/-_.~%?=&")
