"""What the comment's parts share: links that may be absent, and escaping."""

from __future__ import annotations

from app.pullrequests.comment.text import CommentLinks, code, escape_markdown, link, short, url


def test_a_link_without_a_target_is_its_text_alone() -> None:
    assert link("Codecov", "https://cov.example/o/r/commit/abc") == (
        "[Codecov](https://cov.example/o/r/commit/abc)"
    )
    assert link("Codecov", "") == "Codecov"


def test_links_of_a_deployment_without_a_public_url_are_all_empty() -> None:
    links = CommentLinks()
    assert links.report_url == links.flags_url == links.indirect_url == links.missing_url == ""
    assert links.commit_url("abc") == "" and links.file_url("a.py") == ""


def test_a_target_cannot_end_the_markdown_link_early() -> None:
    assert url("https://cov.example/o/r/commit/a/file/x) [y](z") == (
        "https://cov.example/o/r/commit/a/file/x%29%20%5By%5D%28z"
    )


def test_escaping_leaves_no_markdown_html_or_mention() -> None:
    assert escape_markdown("[x](y) <b> @me a|b") == "\\[x\\]\\(y\\) \\<b\\> @\u200bme a\\|b"
    assert escape_markdown("two\nlines") == "two lines"
    assert code("a`b\nc") == "a'b c"
    assert short("a" * 60) == "..." + "a" * 50
