"""comment: Codecov's layouts, and each key overriding only itself."""

from __future__ import annotations

from app.pullrequests.config import parse_codecov_yaml


def test_codecovs_own_default_layouts_are_accepted() -> None:
    for layout in ("reach,diff,flags,tree,reach", "condensed_header, flags, tree, component"):
        config = parse_codecov_yaml(f'comment:\n  layout: "{layout}"\n')
        assert config.errors == ()
        assert config.comment.layout == tuple(s.strip() for s in layout.split(","))


def test_the_default_comment_is_codecovs_current_one_and_each_key_overrides_only_itself() -> None:
    default = parse_codecov_yaml(None).comment
    assert default.layout == ("condensed_header", "diff", "flags", "files", "condensed_footer")
    assert default.hide_comment_details is True and default.hide_project_coverage is False
    # a file that sets the layout keeps the fold, as a site default merges under it
    layout_only = parse_codecov_yaml('comment:\n  layout: "header, diff, footer"\n').comment
    assert layout_only.layout == ("header", "diff", "footer") and layout_only.hide_comment_details
    unfolded = parse_codecov_yaml("comment:\n  hide_comment_details: false\n").comment
    assert unfolded.hide_comment_details is False and unfolded.layout == default.layout
    bad = parse_codecov_yaml("comment:\n  hide_comment_details: sometimes\n")
    assert [str(e) for e in bad.errors] == [
        "comment.hide_comment_details: must be true or false, not a string"
    ]
    assert bad.comment.hide_comment_details is True
