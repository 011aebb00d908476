"""uvicorn's HTTP protocol, with ``TCP_NODELAY`` set on every connection.

With ``--workers`` above 1, uvicorn binds the listening socket itself and
leaves its ``proto`` at 0; asyncio sets ``TCP_NODELAY`` only on accepted
sockets whose ``proto`` is TCP, so Nagle's algorithm stays on. uvicorn
writes a response's head and body in two writes, and the body then waits
for the client's delayed ACK: about 40 ms added to every keep-alive request
on Linux (uvicorn issue 3149). ``covworker serve`` names this protocol
(``app.cli.serve.NODELAY_HTTP``), whatever the number of workers.

It also closes a connection that does not complete a request's headers
within ``HEADER_TIMEOUT_S`` of connecting or of its previous response:
uvicorn arms its keep-alive timer only after a response and disarms it on
any byte, so a client that connects and sends nothing, or half a request
line, would otherwise hold its connection for ever.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import suppress
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    """Turn Nagle's algorithm off on ``transport``'s TCP socket (if it has one)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


#: Seconds a connection gets to send a request's headers.
HEADER_TIMEOUT_S = 15.0


class NoDelayHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's own choice of HTTP protocol (httptools if installed, else h11)."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        set_nodelay(transport)
        super().connection_made(transport)
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = asyncio.get_running_loop().call_later(
            HEADER_TIMEOUT_S, self._headers_too_slow
        )

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def on_headers_complete(self, *args: Any) -> None:  # httptools' parser callback
        self._disarm_header_timer()
        super().on_headers_complete(*args)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        waiting = self.cycle is None or self.cycle.response_complete  # no pipelined request
        if waiting and not self.transport.is_closing():
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)
