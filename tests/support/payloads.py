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


#: A one-file LCOV report: one line hit, one missed.
LCOV = b"SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n"

#: Poison payloads: each once raised something other than a report error while
#: decoded, or had an error PostgreSQL refused to store; each must fail its
#: upload alone. v1 JSON nested past the JSON decoder's recursion limit:
NESTED_V1 = b'{"coverage_files": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
#: a legacy payload whose fix line holds 5,000 digits (Python's int-digit limit):
LONG_FIX_LINE = (
    b"# path=fixes\na.py:" + b"9" * 5000 + b"\n<<<<<< EOF\n# path=a.info\n" + LCOV + b"<<<<<< EOF\n"
)
#: a v1 payload of a coverage file whose name holds a NUL byte (PostgreSQL refuses it in text).
NUL_NAMED_V1 = v1(
    [{"filename": "bad\x00name.xml", "format": "base64+compressed", "data": packed(b"<junk/>")}]
)
