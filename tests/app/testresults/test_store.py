"""Decoding a test-results payload (app/testresults/store.py), without a database."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from app.errors import MalformedPayload
from app.testresults.store import JunitFile, decode_test_results_payload

LIMIT = 1 << 20


def entry(name: str, data: bytes, packed: bool = True) -> dict[str, str]:
    if not packed:
        return {"filename": name, "format": "text", "data": data.decode()}
    text = base64.b64encode(zlib.compress(data)).decode()
    return {"filename": name, "format": "base64+compressed", "data": text}


def test_the_files_of_a_payload_come_out_decompressed_and_named() -> None:
    doc = {"test_results_files": [entry("a.xml", b"<a/>"), entry("b.xml", b"<b/>", False)]}
    assert decode_test_results_payload(json.dumps(doc).encode(), LIMIT) == [
        JunitFile("a.xml", b"<a/>"),
        JunitFile("b.xml", b"<b/>"),
    ]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"{" + b'"a":' * 1 + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"test_results_files": [}', "not valid JSON"),
        (b'{"test_results_files": 3}', "test_results_files must be a list"),
        (b'{"test_results_files": [{"data": 3}]}', "test_results_files[0] must be an object"),
        (
            b'{"test_results_files": [{"format": "base64+compressed", "data": "@@"}]}',
            "test_results_files[0].data (file-0) is not base64",
        ),
    ],
)
def test_a_malformed_payload_is_refused_with_the_reason(raw: bytes, why: str) -> None:
    with pytest.raises(MalformedPayload) as refused:
        decode_test_results_payload(raw, LIMIT)
    assert why in str(refused.value)
