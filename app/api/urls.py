"""Base URLs with a path prefix, and doubled slashes.

codecov-cli builds URLs as ``f"{base}/upload/..."``, so ``-u
http://host/cov/`` yields ``/cov//upload/...``. This ASGI middleware
collapses runs of ``/`` and, when an uploader's route (``/upload/v4``,
``/upload/github/...``, ``/healthz``) follows a prefix, moves the prefix to
``root_path``: routes match as if mounted at ``/`` and
``request.base_url`` keeps the prefix (the PUT URLs we hand out use it).
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from app.db.repos import SERVICES

_SLASHES = re.compile(r"/{2,}")
#: Where the uploaders' routes start: what comes before is a path prefix.
_INGESTION = re.compile(
    r"/(?:upload/(?:v2|v4|payload/|test_results/|(?:%s)/)|healthz$)" % "|".join(SERVICES)  # noqa: UP031
)


class CollapseSlashesAndPrefix:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = _SLASHES.sub("/", scope["path"])
            root = scope.get("root_path", "")
            route = path[len(root) :] if root and path.startswith(root) else path
            found = _INGESTION.search(route)
            if found and found.start() > 0:
                root = root + route[: found.start()]
            scope = {**scope, "path": path, "root_path": root}
            scope.pop("raw_path", None)
        await self.app(scope, receive, send)
