"""The top level of a JSON object read without decoding it: msgspec's step
over a long value lands where the token walk does, whatever the document."""

from __future__ import annotations

import pytest

from app.coverage import jsontop


@pytest.mark.parametrize(
    "doc",
    [
        # a long first value, the deciding key after it
        b'{"files": {'
        + b",".join(b'"f%d": [1, "]}", {"a": [2]}]' % i for i in range(9000))
        + b'}, "meta": {"version": "7.6"}, "n": 3}',
        # a key given twice: the walk keeps the later value, as json.loads does
        b'{"coverage": [' + b"0," * 40000 + b'1], "coverage": {"a.py": [1]}, "x": "y"}',
        # a key written with an escape, and a string holding brackets
        b'{"c\\u006fverage": [' + b'"[{", ' * 20000 + b'"}]"], "z": {"k": "}"}}',
        # not valid JSON after a long value: read as far as it goes
        b'{"files": [' + b"1," * 40000 + b"2], oops}",
        # nested deeper than msgspec reads: the token walk alone (oops: not read whole)
        b'{"oops": 1, "files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
)
def test_a_whole_documents_top_level_walk_steps_over_long_values_as_the_token_walk_does(
    doc: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = jsontop.top_level_values(doc, 0)
    assert len(doc) > jsontop.FAST_FROM_BYTES
    assert bool(jsontop._nested_values(doc, 0)) is (b"oops" not in doc)  # msgspec read it whole
    monkeypatch.setattr(jsontop, "_nested_values", lambda doc, pos: {})
    assert fast == jsontop.top_level_values(doc, 0)
