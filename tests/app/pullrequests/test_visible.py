"""Control and bidirectional formatting characters are shown as escapes."""

from __future__ import annotations

import unicodedata

import pytest

from app.pullrequests.visible import visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("evil\u202egnp.py", "evil\\u202egnp.py"),  # RIGHT-TO-LEFT OVERRIDE
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),  # a terminal escape
        ("a\x00b\x7fc\x85d\x9be", "a\\x00b\\x7fc\\x85d\\x9be"),  # NUL, DEL, C1
        ("\u2066x\u2069\u200f\u061c", "\\u2066x\\u2069\\u200f\\u061c"),  # isolates, marks
        ("tab\there\nline\r\n", "tab\there\nline\r\n"),
        ("café ✓ 文字 \u200b", "café ✓ 文字 \u200b"),
    ],
)
def test_controls_are_escaped_and_text_is_kept(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_no_control_or_bidi_character_survives() -> None:
    every = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c < 0xE000)
    left = {
        c
        for c in visible(every)
        if unicodedata.category(c) == "Cc" or unicodedata.bidirectional(c) in {
            "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"
        }
    }  # fmt: skip
    assert left == {"\t", "\n", "\r"}
