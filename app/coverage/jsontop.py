"""The top level of a JSON object read without decoding it: where each
top-level key's value starts and ends, for telling formats apart by their
keys (``app.coverage.detect``) in a head cut short or a whole document.

A head is walked token by token in Python and read as far as it goes. A
whole document longer than ``FAST_FROM_BYTES`` is first read by msgspec's
C decoder into undecoded values, so the walk steps over a value of
megabytes at once; each step is checked byte for byte against the
document, and where msgspec cannot read it (broken JSON) the walk goes
token by token as for a head.
"""

from __future__ import annotations

import re

import msgspec

#: A document longer than this is read by msgspec before it is walked.
FAST_FROM_BYTES = 64 * 1024
STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
WS = re.compile(rb"\s*")
_NESTED_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_SCALAR = re.compile(rb"[^,}\]\s]*")


def _skip_nested(doc: bytes, pos: int) -> int:
    """Where the array or object starting at ``pos`` ends (-1 if it does not):
    strings are matched whole, so brackets inside them are not counted."""
    depth = 0
    for token in _NESTED_TOKEN.finditer(doc, pos):
        first = token.group()[0]
        if first == 0x22:  # '"'
            continue
        depth += 1 if first in b"[{" else -1
        if depth == 0:
            return token.end()
    return -1


def _nested_values(doc: bytes, pos: int) -> dict[bytes, msgspec.Raw]:
    """The top-level values of the JSON object at ``pos`` as msgspec reads
    them in C, undecoded, by key: what lets a whole document's walk step over
    a value of megabytes at once instead of token by token. Empty when the
    document is not one valid JSON object or nests deeper than msgspec goes
    (the walk then reads what it can, as for a head cut short), or is no
    longer than ``FAST_FROM_BYTES``."""
    if len(doc) - pos <= FAST_FROM_BYTES:
        return {}
    try:
        values = msgspec.json.decode(memoryview(doc)[pos:], type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, UnicodeError, RecursionError):  # nested too deep for it
        return {}
    return {key.encode(): raw for key, raw in values.items()}


def top_level_values(doc: bytes, pos: int) -> tuple[dict[bytes, tuple[int, int]], bool]:
    """Where the value of each top-level key of the JSON object at ``pos``
    starts and ends (keys raw, not unescaped; end -1 for an array or object
    cut short), stepping over the values without decoding them; and whether
    the object was read to its end (not when the document is broken or cut
    short)."""
    found: dict[bytes, tuple[int, int]] = {}
    if pos < 0 or doc[pos : pos + 1] != b"{":
        return found, False
    nested = _nested_values(doc, pos)
    pos += 1
    while True:
        pos = WS.match(doc, pos).end()  # type: ignore[union-attr]
        key = STRING.match(doc, pos)
        if key is None:
            return found, doc[pos : pos + 1] == b"}"
        pos = WS.match(doc, key.end()).end()  # type: ignore[union-attr]
        if doc[pos : pos + 1] != b":":
            return found, False
        start = pos = WS.match(doc, pos + 1).end()  # type: ignore[union-attr]
        head = doc[pos : pos + 1]
        if head == b'"':
            value = STRING.match(doc, pos)
            if value is None:
                return found, False
            pos = value.end()
        elif head in (b"[", b"{"):
            raw = nested.get(key.group()[1:-1])
            # msgspec's value, if it is the one written here (not a duplicate
            # key's, not a key written with escapes): its length is the step
            whole = bytes(raw) if raw is not None else b""
            if whole and doc.startswith(whole, pos):
                pos += len(whole)
            else:
                pos = _skip_nested(doc, pos)
            if pos < 0:
                found[key.group()[1:-1]] = (start, -1)  # cut short inside it
                return found, False
        else:
            pos = _SCALAR.match(doc, pos).end()  # type: ignore[union-attr]
        found[key.group()[1:-1]] = (start, pos)
        pos = WS.match(doc, pos).end()  # type: ignore[union-attr]
        if doc[pos : pos + 1] != b",":
            return found, doc[pos : pos + 1] == b"}"
        pos += 1


def top_level_strings(doc: bytes, pos: int) -> dict[bytes, bytes]:
    """The string values of the top-level keys of the JSON object at ``pos``
    (raw, unescaped bytes); what could be read if the document is broken or
    cut short."""
    values, _ = top_level_values(doc, pos)
    return {
        key: doc[start + 1 : end - 1]
        for key, (start, end) in values.items()
        if doc[start : start + 1] == b'"'
    }
