"""Render a pull-request comment's Markdown as GitHub shows it, and screenshot it.

Without a Markdown file, the comment is the example below: a pull request of
a small calculator project, compared by covworker's own code
(:func:`app.pullrequests.compare.compare`) and rendered in the default
layout (:func:`app.pullrequests.comment.render_comment`) with links under
``https://covworker.example``. With a file, that comment (the end-to-end
test writes the one it posted to ``comment.md`` in its temporary directory).

The Markdown is rendered as GitHub renders a comment (``tests/support/markdown.py``:
CommonMark with tables, ``<details>`` passed through, a newline a line
break, Codecov's emoji shortcodes as emoji), styled like a GitHub comment
with the fold opened, and screenshotted with headless Chromium
(``apt-get install chromium``). From the checkout's root::

    python scripts/render_comment.py docs/screenshots/pr-comment.png
    python scripts/render_comment.py OUT.png /tmp/e2e/*/comment.md
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage.columnar import Part
from app.coverage.model import Branches, FileCoverage, Report
from app.pullrequests.comment import CommentLinks, PullInfo, render_comment
from app.pullrequests.compare import compare
from app.pullrequests.comparison import FlagInput
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.diff import parse_unified_diff
from tests.support.markdown import EMOJI, render_html

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
details summary { cursor: pointer; margin-bottom: 8px; }
p { margin: 0 0 12px; }
"""
HEAD = "b14d01b8c2e54f7a9a31d6c0e8f2a7b4c9d3e1f0"
BASE = "42aa7cc0d9e14b3f8a2c5e7d1b0f6a4c3e2d1b9a"
PAGE = f"https://covworker.example/acme/calc/commit/{HEAD}"


def _file(hits: int, misses: int = 0, partial: int = 0, full: int = 0) -> FileCoverage:
    """``hits`` hit lines (the first ``full`` of them with both branches taken),
    then ``partial`` hit lines with a branch missed, then ``misses`` missed lines."""
    fc = FileCoverage({n: 1 for n in range(1, hits + partial + 1)})
    fc.branches = {n: Branches(2, 2) for n in range(1, full + 1)}
    for n in range(hits + 1, hits + partial + 1):
        fc.branches[n] = Branches(1, 2)
    fc.lines.update({hits + partial + n: 0 for n in range(1, misses + 1)})
    return fc


def example() -> str:
    """The default layout's comment on a pull request adding to two files."""
    base = {
        "src/calc/ops.py": _file(118, 9, 3, 20),
        "src/calc/parse.py": _file(201, 12, 5, 31),
        "src/calc/cli.py": _file(64, 11, 1, 6),
        "src/calc/__init__.py": _file(4),
    }
    head = dict(base)
    head["src/calc/ops.py"] = _file(128, 11, 4, 23)
    head["src/calc/cli.py"] = _file(66, 12, 1, 6)
    diff = parse_unified_diff(
        "--- a/src/calc/ops.py\n+++ b/src/calc/ops.py\n@@ -115,0 +116,18 @@\n"
        + "+x\n" * 18
        + "--- a/src/calc/cli.py\n+++ b/src/calc/cli.py\n@@ -62,0 +63,6 @@\n"
        + "+x\n" * 6
    )
    unit_head, unit_base = Part.from_report(Report(head)), Part.from_report(Report(base))
    cli = {path: head[path] for path in ("src/calc/cli.py", "src/calc/__init__.py")}
    cli_base = {path: base[path] for path in cli}
    smoke = Part.from_report(Report({"src/calc/__init__.py": _file(4)}))
    comparison = compare(
        unit_head,
        unit_base,
        diff,
        head_sha=HEAD,
        base_sha=BASE,
        head_flags={
            "unit": FlagInput(unit_head),
            "cli": FlagInput(Part.from_report(Report(cli))),
            "smoke": FlagInput(smoke, carried_from=BASE),
        },
        base_flags={
            "unit": FlagInput(unit_base),
            "cli": FlagInput(Part.from_report(Report(cli_base))),
            "smoke": FlagInput(smoke),
        },
    )
    links = CommentLinks(
        report_url=PAGE,
        commit_url=lambda sha: f"https://covworker.example/acme/calc/commit/{sha}",
        file_url=lambda path: f"{PAGE}/file/{path}",
        flags_url=f"{PAGE}#flags",
        indirect_url=f"{PAGE}#base-h",
        missing_url=f"{PAGE}#diff-files",
    )
    return render_comment(
        comparison,
        parse_codecov_yaml(None),
        pull=PullInfo(42, "main", "feature"),
        links=links,
        extra_sections=[":white_check_mark: All tests successful. No failed tests found."],
    )


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
    body = diff_colours(render_html(markdown)).replace("<details>", "<details open>")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head>"
        "<body><div class='comment'><div class='head'><b>covworker</b> commented</div>"
        f"<div class='body'>{body}</div></div></body></html>"
    )


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    markdown = Path(sys.argv[2]).read_text() if len(sys.argv) > 2 else example()
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "comment.html"
        page.write_text(render(markdown))
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={out}",
                "--window-size=900,1030",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(out)


if __name__ == "__main__":
    main()
