"""Control characters from outside shown as what they are.

A file path, a flag or test name, a failure message or a ``codecov.yml``
value can hold characters that are not text: ESC starts a terminal escape,
U+202E (RIGHT-TO-LEFT OVERRIDE) and its kin reorder what follows so a
reader sees another name than the one there (Trojan Source,
CVE-2021-42574), NUL and the other C0/C1 controls do what a viewer makes of
them. :func:`visible` writes each as its escape (``\\x1b``, ``\\u202e``):
the comment (``app.pullrequests.comment.text``) and every page (the Jinja
environment's ``finalize``, ``app.web.render``) show text only through it.
Tabs and line breaks stay: the places that show one line already join
lines.
"""

from __future__ import annotations

#: C0 and C1 controls and DEL, but tab and line breaks.
_CONTROLS = [c for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if c not in (0x09, 0x0A, 0x0D)]
#: Unicode's bidirectional formatting characters: embeddings, overrides,
#: isolates and marks (UAX #9), and the line and paragraph separators.
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]

_TABLE = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in (*_CONTROLS, *_BIDI)}


def visible(text: str) -> str:
    """``text`` with every control and bidirectional formatting character
    written as its escape; other text unchanged (one pass, linear)."""
    return text.translate(_TABLE)
