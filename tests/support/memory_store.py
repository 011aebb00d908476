"""An object store in memory, for the code that writes payloads to one
without a SeaweedFS (``tests/support/seaweedfs.py``) behind it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import IO

from app.storage import StorageUnavailable


class MemoryStore:
    """An object store in a dict.

    ``fail_after``: that many objects are put, then every put fails as a
    store that went down; ``down``: every call fails as a store that does
    not answer; ``before_size``: called before each size look (another
    process acting meanwhile).
    """

    def __init__(self, fail_after: int | None = None) -> None:
        self.objects: dict[str, bytes] = {}
        self.fail_after = fail_after
        self.down = False
        self.before_size: Callable[[], object] = lambda: None

    def _answer(self) -> None:
        if self.down:
            raise StorageUnavailable("the object store is not reachable: refused")

    def ensure_bucket(self) -> None:
        self._answer()

    def put(self, key: str, stream: IO[bytes], size: int) -> None:
        self._answer()
        if self.fail_after is not None and len(self.objects) >= self.fail_after:
            raise StorageUnavailable("the store is down")
        self.objects[key] = stream.read(size)

    def get(self, key: str) -> Iterator[bytes]:
        self._answer()
        yield self.objects[key]

    def size(self, key: str) -> int | None:
        self._answer()
        self.before_size()
        found = self.objects.get(key)
        return None if found is None else len(found)

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.objects.pop(key, None)

    def copy(self, source: str, target: str) -> None:
        self._answer()
        self.objects[target] = self.objects[source]

    def presign_put(self, key: str, expires_s: int) -> str:
        return f"memory://{key}"
