"""The comment's footers and the codecov.yml errors."""

from __future__ import annotations

from app.pullrequests.config import ConfigError
from tests.support.pullcomment import (
    PAGE,
    rendered,
)


def test_yaml_errors_are_listed_at_the_end_escaped() -> None:
    body = rendered(yaml_errors=[ConfigError("comment.behavior", "must be one of …, not '<b>'")])
    assert body.rstrip().splitlines()[-1] == ("- comment.behavior: must be one of …, not '\\<b\\>'")


def test_condensed_footer_and_newfooter_are_the_two_line_footer_and_footer_the_older() -> None:
    for name in ("condensed_footer", "newfooter"):
        body = rendered(f'comment:\n  layout: "header, {name}"\n')
        assert f"[:umbrella: View full report in covworker]({PAGE})." in body.splitlines()
        assert "------" not in body and "Legend" not in body
    old = rendered('comment:\n  layout: "header, footer"\n  hide_comment_details: false\n')
    assert "------" in old and ":umbrella:" not in old and ":loudspeaker:" not in old
