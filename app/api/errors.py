"""One error type for the HTTP layer, and the handlers that render errors.

Every refusal names the problem: ``{"detail": "..."}`` with the precise
status. A body that is not JSON is a 400; JSON whose fields do not fit is a
422 naming each field.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException


class ApiError(HTTPException):
    """Starlette's ``HTTPException`` (``status_code``, ``detail`` and the
    answer's ``headers``, such as ``Retry-After`` or ``Connection: close``),
    plus ``plain``: answer text/plain, for the legacy uploader, which prints
    the body as text."""

    detail: str

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        plain: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status_code=status, detail=detail, headers=headers)
        self.plain = plain

    @property
    def status(self) -> int:
        """``status_code``, by the name callers and tests have read it by."""
        return self.status_code


def install_error_handlers(api: FastAPI) -> None:
    @api.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        if exc.plain:
            return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            reason = next(e for e in errors if e.get("type") == "json_invalid")
            context = reason.get("ctx", {}).get("error", "")
            return JSONResponse(
                {"detail": f"the request body is not valid JSON: {context}".rstrip(": ")},
                status_code=400,
            )
        problems = []
        for e in errors:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {e.get('msg', 'invalid')}")
        return JSONResponse({"detail": "; ".join(problems)}, status_code=422)
