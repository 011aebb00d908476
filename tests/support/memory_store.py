"""An object store in memory, for the code that writes payloads to one
without a SeaweedFS (``tests/support/seaweedfs.py``) behind it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

from app.storage import StorageUnavailable


class MemoryStore:
    """An object store in a dict; ``fail_after`` puts succeed, then it is down."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.objects: dict[str, bytes] = {}
        self.fail_after = fail_after

    def ensure_bucket(self) -> None:
        pass

    def put(self, key: str, stream: IO[bytes], size: int) -> None:
        if self.fail_after is not None and len(self.objects) >= self.fail_after:
            raise StorageUnavailable("the store is down")
        self.objects[key] = stream.read(size)

    def get(self, key: str) -> Iterator[bytes]:
        yield self.objects[key]

    def size(self, key: str) -> int | None:
        found = self.objects.get(key)
        return None if found is None else len(found)

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.objects.pop(key, None)

    def presign_put(self, key: str, expires_s: int) -> str:
        raise NotImplementedError
