"""The login forms (app/web/forms.py): their CSRF cookie, their bodies, and
``Secure`` cookies over HTTPS."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from app.settings import Settings
from app.web.access import CSRF_COOKIE
from app.web.forms import MAX_FORM_FIELDS, form_page, is_https, read_form


def request(scheme: str = "http", cookie: str = "", body: bytes = b"") -> Request:
    headers = [(b"host", b"cov.example")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {
        "type": "http", "method": "POST", "scheme": scheme, "path": "/-/login",
        "raw_path": b"/-/login", "query_string": b"", "headers": headers,
        "server": ("cov.example", 443 if scheme == "https" else 80), "root_path": "",
    }  # fmt: skip
    return Request(scope, receive)


def settings(public_url: str = "") -> Settings:
    return Settings(redis_url="redis://unused", public_url=public_url)


def rendered(template: str, status: int = 200, **values: Any) -> Response:
    """A renderer that shows what it was given."""
    return HTMLResponse(f"{template} {sorted(values.items())}", status_code=status)


def test_the_pages_are_https_when_the_request_or_the_public_url_says_so() -> None:
    assert is_https(request("https"), settings())
    assert is_https(request("http"), settings("https://cov.example.com"))
    assert not is_https(request("http"), settings("http://cov.example.com"))


def test_a_form_page_gets_a_csrf_value_and_the_strict_cookie_it_must_match() -> None:
    page = form_page(request(), settings(), rendered, "login.html", 403, error="no")
    assert page.status_code == 403
    cookie = page.headers["set-cookie"]
    value = cookie.split(";")[0].removeprefix(f"{CSRF_COOKIE}=")
    assert f"('csrf', '{value}')" in page.body.decode() and "('error', 'no')" in page.body.decode()
    assert len(value) >= 32
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered and "secure" not in lowered
    over_https = form_page(request("https"), settings(), rendered, "login.html")
    assert "secure" in over_https.headers["set-cookie"].lower()


def test_a_browser_keeps_the_csrf_value_its_cookie_holds() -> None:
    held = "k" * 43
    page = form_page(request(cookie=f"{CSRF_COOKIE}={held}"), settings(), rendered, "login.html")
    assert f"('csrf', '{held}')" in page.body.decode()
    assert page.headers["set-cookie"].startswith(f"{CSRF_COOKIE}={held};")


def test_a_form_body_gives_the_first_value_of_each_field_decoded() -> None:
    body = b"token=a%20b&token=second&next=%2Frepo&csrf=&bad=%ff"
    fields = anyio.run(read_form, request(body=body))
    assert fields == {"token": "a b", "next": "/repo", "bad": "\ufffd"}  # blank csrf: absent
    assert anyio.run(read_form, request(body=b"")) == {}


def test_a_form_body_with_more_fields_than_a_login_form_could_hold_is_a_400() -> None:
    most = "&".join(f"f{n}=1" for n in range(MAX_FORM_FIELDS)).encode()
    assert len(anyio.run(read_form, request(body=most))) == MAX_FORM_FIELDS
    with pytest.raises(HTTPException) as refused:
        anyio.run(read_form, request(body=most + b"&one=more"))
    assert refused.value.status_code == 400 and str(MAX_FORM_FIELDS) in refused.value.detail
