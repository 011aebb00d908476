"""The footers and the ``codecov.yml`` errors.

``footer`` is Codecov's older footer (the full report, the legend, "Last
update"); ``condensed_footer`` (``newfooter``) its current one, two lines:
the full report and a feedback line. covworker's wording links to its own
pages: "View full report in covworker" is the head commit's page; the
feedback line links nowhere, because a covworker deployment has no
feedback page and no link of the comment leaves the deployment, so it
names who to tell: the people who run it.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.pullrequests.comment.text import CommentLinks, escape_markdown, link
from app.pullrequests.comparison import Comparison
from app.pullrequests.config import CodecovConfig, ConfigError

DELTA_DOCS = "https://docs.codecov.io/docs/codecov-delta"
COMMENT_DOCS = "https://docs.codecov.io/docs/pull-request-comments"
#: Who hears about the report: the deployment's operators (no feedback page, no link).
TELL = "with the people who run this covworker."
FEEDBACK = f":loudspeaker: Have feedback on the report? Share it {TELL}"
THOUGHTS = f":loudspeaker: Thoughts on this report? Share them {TELL}"


def footer(comparison: Comparison, links: CommentLinks) -> list[str]:
    base = (comparison.base_sha or "")[:7]
    last = link(f"{base}...{comparison.head_sha[:7]}", links.report_url)
    return [
        "------",
        "",
        link("Continue to review the full report in covworker", links.report_url) + ".",
        f"> **Legend** - [Click here to learn more]({DELTA_DOCS})",
        "> `\u0394 = absolute <relative> (impact)`, `\xf8 = not affected`, `? = missing data`",
        f"> Last update {last}. Read the [comment docs]({COMMENT_DOCS}).",
    ]


def condensed_footer(config: CodecovConfig, links: CommentLinks) -> list[str]:
    """Codecov's two lines (one when ``hide_project_coverage``), a blank line
    apart where Codecov ends the first with a hard break."""
    if config.comment.hide_project_coverage:
        return [THOUGHTS]
    full = link(":umbrella: View full report in covworker", links.report_url)
    return [f"{full}.", "", FEEDBACK]


def listed_errors(errors: Sequence[ConfigError]) -> list[str]:
    if not errors:
        return []
    lines = [
        ":x: The `codecov.yml` of this commit is invalid; these keys were ignored and their "
        "defaults used:"
    ]
    lines += [f"- {escape_markdown(e.key)}: {escape_markdown(e.message)}" for e in errors]
    return lines
