"""A page rendered while it is sent."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


def test_a_file_page_stops_rendering_when_its_client_goes_away(
    client: TestClient, upload: Upload, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page is rendered while it is sent: a client that disconnects at
    once gets (and costs) a few chunks of it, not the whole page (a page
    rendered before it is sent would send every byte)."""
    import anyio

    from app.web import responses

    upload("acme/web", SHA1, {"big.info": lcov("big.py", {n: 1 for n in range(1, 2000)})})
    monkeypatch.setattr(responses, "PAGE_CHUNK_CHARS", 1000)
    path = f"/acme/web/commit/{SHA1}/file/big.py"
    whole = len(client.get(path).content)

    async def fetch(disconnect_at_once: bool) -> int:
        sent: list[bytes] = []
        asked = False

        async def receive() -> dict[str, object]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if not disconnect_at_once:
                await anyio.sleep_forever()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                sent.append(message["body"])  # type: ignore[arg-type]

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
            "query_string": b"", "headers": [(b"host", b"testserver")],
            "client": ("127.0.0.1", 1), "server": ("testserver", 80),
        }  # fmt: skip
        with anyio.fail_after(60):
            await client.app(scope, receive, send)  # type: ignore[arg-type]
        return sum(map(len, sent))

    assert anyio.run(fetch, False) == whole > 20_000
    assert anyio.run(fetch, True) < whole // 4
