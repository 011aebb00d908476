"""TCP_NODELAY on connections accepted from a socket bound as uvicorn's
``--workers`` supervisor binds it (``proto`` 0)."""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from uvicorn.server import ServerState

from app.api.nodelay import NoDelayHTTPProtocol
from app.cli.serve import NODELAY_HTTP


async def _app(scope: object, receive: object, send: object) -> None:  # never called
    raise AssertionError("no request is sent")


async def _nodelay_of_accepted(http: str) -> int:
    """Serve ``http`` (a uvicorn protocol) on a listener bound like uvicorn's
    supervisor binds one, connect, and read TCP_NODELAY of the accepted socket."""
    config = uvicorn.Config(_app, http=http, lifespan="off")
    config.load()
    state = ServerState()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as uvicorn's
    listener.bind(("127.0.0.1", 0))
    assert listener.proto == 0
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: config.http_protocol_class(config=config, server_state=state, app_state={}),
        sock=listener,
    )
    try:
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        async with asyncio.timeout(10):
            while not state.connections:
                await asyncio.sleep(0.01)  # until the server side has accepted it
        (protocol,) = state.connections
        accepted = protocol.transport.get_extra_info("socket")  # type: ignore[attr-defined]
        writer.close()
        return int(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    finally:
        server.close()
        await server.wait_closed()


def test_serve_names_the_nodelay_protocol_by_import_string() -> None:
    config = uvicorn.Config(_app, http=NODELAY_HTTP)
    config.load()
    assert config.http_protocol_class is NoDelayHTTPProtocol


def test_connections_accepted_from_a_supervisor_bound_socket_have_nagle_off() -> None:
    assert asyncio.run(_nodelay_of_accepted(NODELAY_HTTP)) == 1


def test_without_it_uvicorns_own_protocol_leaves_nagle_on_there() -> None:
    """The defect the protocol works around (uvicorn issue 3149): if a
    uvicorn release fixes it, this fails and the workaround can go."""
    assert asyncio.run(_nodelay_of_accepted("h11")) == 0
