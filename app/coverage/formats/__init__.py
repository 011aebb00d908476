"""One parser module per coverage format; each exposes ``parse(raw, limits, roots)``."""

from __future__ import annotations

from collections.abc import Iterator


def line_chunks(raw: bytes, size: int) -> Iterator[bytes]:
    """``raw`` in pieces of about ``size`` bytes, each cut after a newline (the
    newline dropped): a line parser splits one piece at a time, so a large
    report never stands as a list of all its lines at once."""
    pos, end_of_raw = 0, len(raw)
    while pos < end_of_raw:
        end = raw.find(b"\n", min(pos + size, end_of_raw))
        if end < 0:
            end = end_of_raw
        yield raw[pos:end]
        pos = end + 1
