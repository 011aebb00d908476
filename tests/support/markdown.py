"""A comment's Markdown as a reader sees it: rendered as GitHub does, then read as text.

markdown-it-py renders CommonMark with GitHub's tables and strikethrough
(raw HTML on, as GitHub passes ``<details>``/``<summary>``; a newline is a
line break, as in GitHub's comments); the HTML is
then read as the lines a reader sees: one per paragraph, heading, list
item, summary and table row (cells joined by a space), the lines of a
fenced block as they are, and Codecov's emoji shortcodes as GitHub shows
them. Links and the fold leave only their text, as in the reference
comments (``/work/shared/reference``-style copies of GitHub's page).
"""

from __future__ import annotations

from html.parser import HTMLParser

from markdown_it import MarkdownIt

#: The emoji shortcodes the comment uses, as GitHub shows them.
EMOJI = {
    ":white_check_mark:": "\u2705",
    ":x:": "\u274c",
    ":warning:": "\u26a0\ufe0f",
    ":exclamation:": "\u2757",
    ":umbrella:": "\u2614",
    ":loudspeaker:": "\U0001f4e2",
    ":snowflake:": "\u2744\ufe0f",
    ":arrow_up:": "\u2b06\ufe0f",
    ":arrow_down:": "\u2b07\ufe0f",
}
_BLOCKS = {"p", "h1", "h2", "h3", "h4", "li", "tr", "summary", "details", "table", "div", "hr"}


def render_html(markdown: str) -> str:
    """The comment as GitHub renders it (tables, strikethrough, raw HTML blocks, and a
    line break where the text has one, as in GitHub's comments)."""
    md = MarkdownIt("commonmark", {"html": True, "breaks": True})
    md.enable(["table", "strikethrough"])
    return md.render(markdown)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.current: list[str] = []
        self.pre = False

    def flush(self) -> None:
        text = " ".join("".join(self.current).split())
        if text:
            self.lines.append(text)
        self.current = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre" or tag in _BLOCKS or tag == "br":
            self.flush()
            self.pre = self.pre or tag == "pre"
        elif tag in ("td", "th"):
            self.current.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.lines += [line.rstrip() for line in "".join(self.current).rstrip("\n").split("\n")]
            self.current = []
            self.pre = False
        elif tag in _BLOCKS:
            self.flush()

    def handle_data(self, data: str) -> None:
        self.current.append(data)


def visible_lines(markdown: str) -> list[str]:
    """The lines a reader of the rendered comment sees (see the module)."""
    for code, emoji in EMOJI.items():
        markdown = markdown.replace(code, emoji)
    reader = _Reader()
    reader.feed(render_html(markdown))
    reader.close()
    reader.flush()
    return reader.lines
