from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.api.urls import CollapseSlashesAndPrefix


def routed(path: str) -> tuple[str, str]:
    """(path, root_path) the app behind the middleware sees."""
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope)

    scope = {"type": "http", "path": path, "root_path": ""}
    asyncio.run(CollapseSlashesAndPrefix(app)(scope, None, None))  # type: ignore[arg-type]
    return seen["path"], seen["root_path"]


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("/upload/github/a::::b/commits", ""),
        ("/cov//upload/github/a::::b/commits", "/cov"),
        ("/a/b//upload/v4", "/a/b"),
        ("/cov/upload/payload/3", "/cov"),
        ("/cov/healthz", "/cov"),
        ("/acme/upload/commit/abc", ""),  # a page of repository acme/upload: no prefix
        ("/acme/web/commit/abc", ""),
    ],
)
def test_slashes_collapse_and_only_an_uploader_route_gives_a_prefix(path: str, root: str) -> None:
    seen_path, seen_root = routed(path)
    assert "//" not in seen_path and seen_root == root
