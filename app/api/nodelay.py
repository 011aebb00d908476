"""uvicorn's HTTP protocol, with ``TCP_NODELAY`` set on every connection.

With ``--workers`` above 1, uvicorn binds the listening socket itself and
leaves its ``proto`` at 0; asyncio sets ``TCP_NODELAY`` only on accepted
sockets whose ``proto`` is TCP, so Nagle's algorithm stays on. uvicorn
writes a response's head and body in two writes, and the body then waits
for the client's delayed ACK: about 40 ms added to every keep-alive request
on Linux (uvicorn issue 3149). ``covworker serve`` names this protocol
(``app.cli.serve.NODELAY_HTTP``), whatever the number of workers.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import suppress

from uvicorn.protocols.http.auto import AutoHTTPProtocol


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    """Turn Nagle's algorithm off on ``transport``'s TCP socket (if it has one)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's own choice of HTTP protocol (httptools if installed, else h11)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        set_nodelay(transport)
        super().connection_made(transport)
