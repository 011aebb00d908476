"""line_chunks (app/coverage/formats/__init__.py): the pieces the line parsers split."""

from __future__ import annotations

from app.coverage.formats import line_chunks


def test_pieces_cut_at_newlines_give_back_every_line_whatever_the_size() -> None:
    raw = b"SF:a.py\nDA:1,1\nDA:22,0\n\nend_of_record"
    for size in (1, 3, 7, 15, 1 << 20):
        lines = [line for chunk in line_chunks(raw, size) for line in chunk.split(b"\n")]
        assert lines == raw.split(b"\n"), size


def test_a_trailing_newline_adds_no_empty_piece_and_nothing_gives_nothing() -> None:
    assert list(line_chunks(b"a\nb\n", 1)) == [b"a", b"b"]
    assert list(line_chunks(b"", 4)) == []
