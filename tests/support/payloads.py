"""Upload payloads as codecov-cli PUTs them (its ``v1`` JSON), built in tests."""

from __future__ import annotations

import base64
import json
import zlib


def packed(data: bytes) -> str:
    """A coverage file's ``data`` as codecov-cli sends it (``base64+compressed``)."""
    return base64.b64encode(zlib.compress(data)).decode()


def v1(files: list[dict[str, str]], **extra: object) -> bytes:
    """A ``v1`` payload of ``files`` (``coverage_files`` entries), no network list
    unless ``extra`` gives one."""
    return json.dumps({"coverage_files": files, "network_files": [], **extra}).encode()
