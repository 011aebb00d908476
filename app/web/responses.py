"""How a page and its JSON are answered: a Jinja template rendered whole or
while it is sent, JSON, and the 404 of either; none is kept by a shared cache
(what a page shows depends on the tokens presented)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)

from app.web.render import environment

PRIVATE_CACHE = "private, no-store"


_env = environment()


def page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
    html = _env.get_template(template).render(**values)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": PRIVATE_CACHE})


def streamed_page(template: str, **values: Any) -> Response:
    """A page rendered while it is sent: a client that goes away stops
    the rendering (Starlette stops iterating at its disconnect)."""
    chunks = _batched(_env.get_template(template).generate(**values))
    return StreamingResponse(
        chunks, media_type="text/html; charset=utf-8", headers={"Cache-Control": PRIVATE_CACHE}
    )


def as_json(data: Any) -> JSONResponse:
    # What a page shows depends on the tokens presented: never a shared cache's.
    return JSONResponse(data, headers={"Cache-Control": PRIVATE_CACHE})


def not_found(request: Request, what: str = "This page does not exist.") -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": "not found"}, status_code=404)
    return page("404.html", status=404, what=what, next=request.url.path)


#: Characters of a page sent at once while it renders.
PAGE_CHUNK_CHARS = 64 * 1024


def _batched(parts: Iterator[str]) -> Iterator[bytes]:
    """Jinja's many small strings as a few large chunks (each chunk is one
    trip to the thread pool)."""
    batch: list[str] = []
    size = 0
    for part in parts:
        batch.append(part)
        size += len(part)
        if size >= PAGE_CHUNK_CHARS:
            yield "".join(batch).encode()
            batch, size = [], 0
    if batch:
        yield "".join(batch).encode()
