"""Render a pull-request comment's Markdown as GitHub shows it, and screenshot it.

The comment is the one covworker posted in the end-to-end test
(tests/e2e/test_pull_requests.py writes it to ``comment.md`` in its
temporary directory). The Markdown is rendered with markdown-it-py
(CommonMark with GitHub's tables and strikethrough; raw HTML off, as
GitHub sanitises it), styled like a GitHub comment, and screenshotted
with headless Chromium:

    pytest tests/e2e/test_pull_requests.py --basetemp=/tmp/e2e
    python docs/screenshots/render_comment.py /tmp/e2e/*/comment-v1.md \
        docs/screenshots/pr-comment.png
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """
body { margin: 0; padding: 16px; background: #fff; font: 14px/1.5 -apple-system,
  "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; max-width: 860px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  border-radius: 6px 6px 0 0; color: #59636e; }
.head b { color: #1f2328; }
.body { padding: 8px 16px 16px; }
h2, h3 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin: 16px 0 12px; }
h2 { font-size: 1.5em; } h3 { font-size: 1.25em; }
a { color: #0969da; text-decoration: none; }
code { background: #eff1f3; border-radius: 6px; padding: .2em .4em; font-size: 85%;
  font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: #f6f8fa; border-radius: 6px; padding: 16px; overflow: auto; }
pre code { background: none; padding: 0; font-size: 85%; }
table { border-collapse: collapse; margin: 0 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
blockquote { margin: 0; padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; }
details summary { cursor: pointer; }
"""


#: The emoji shortcodes Codecov's comment uses, as GitHub shows them.
EMOJI = {
    ":white_check_mark:": "\u2705",
    ":x:": "\u274c",
    ":warning:": "\u26a0\ufe0f",
    ":exclamation:": "\u2757",
    ":umbrella:": "\u2614",
    ":loudspeaker:": "\U0001f4e2",
    ":rocket:": "\U0001f680",
    ":arrow_up:": "\u2b06\ufe0f",
    ":arrow_down:": "\u2b07\ufe0f",
}


def diff_colours(html: str) -> str:
    """GitHub's colours for the ``diff`` block's added and removed lines."""

    def line(m: re.Match[str]) -> str:
        text = m[0]
        colour = {"+": "#1a7f37", "-": "#d1242f"}.get(text[:1])
        return f"<span style='color:{colour}'>{text}</span>" if colour else text

    def block(m: re.Match[str]) -> str:
        return m[1] + re.sub(r"[^\n]+", line, m[2]) + m[3]

    return re.sub(r'(<code class="language-diff">)(.*?)(</code>)', block, html, flags=re.S)


def render(markdown: str) -> str:
    for code, emoji in EMOJI.items():
        markdown = markdown.replace(code, emoji)
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    body = diff_colours(md.render(markdown))
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head>"
        "<body><div class='comment'><div class='head'><b>covworker</b> commented</div>"
        f"<div class='body'>{body}</div></div></body></html>"
    )


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "comment.html"
        page.write_text(render(source.read_text()))
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={out}",
                "--window-size=900,950",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(out)


if __name__ == "__main__":
    main()
