"""Counting the Redis commands a client sends: the finisher's tests and the
stampede benchmark (``benchmarks/stampede``) both compare strategies by it.
And a Redis call that fails as it does while the server is down."""

from __future__ import annotations

import threading
from typing import Any, NoReturn

import redis
from redis.connection import Connection


class CommandCounter:
    """Redis commands sent by one process, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n


def counting_client(url: str, counter: CommandCounter) -> redis.Redis:
    """A client whose connections count every command they send (pipelines too)."""

    class CountingConnection(Connection):
        def send_command(self, *args: Any, **kwargs: Any) -> None:
            counter.add(1)
            super().send_command(*args, **kwargs)

        def pack_commands(self, commands: Any) -> Any:
            commands = list(commands)
            counter.add(len(commands))
            return super().pack_commands(commands)

    return redis.Redis.from_url(url, connection_class=CountingConnection)


def redis_refuses(*args: object, **kwargs: object) -> NoReturn:
    """A stand-in for any Redis call (or a send through Redis) while the
    server refuses connections."""
    raise redis.exceptions.ConnectionError("Connection refused")
