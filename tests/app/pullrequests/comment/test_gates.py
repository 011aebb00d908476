"""Whether a comment is written: Codecov's gates."""

from __future__ import annotations

from app.pullrequests.comment import (
    should_comment,
)
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.diff import parse_unified_diff
from tests.support.pullcomment import (
    compared,
    report,
)


def test_should_comment_follows_codecovs_gates() -> None:
    head = report({"a.py": (1, 1)})
    same = compared(head, head, parse_unified_diff(""))
    nobase = compared(head, None)
    default = parse_codecov_yaml(None)
    assert should_comment(default, same, sessions=1, comment_exists=False)
    assert not should_comment(
        parse_codecov_yaml("comment: false"), same, sessions=1, comment_exists=True
    )
    after = parse_codecov_yaml("comment:\n  after_n_builds: 3\n")
    assert not should_comment(after, same, sessions=2, comment_exists=False)
    assert should_comment(after, same, sessions=3, comment_exists=False)
    notify = parse_codecov_yaml("codecov:\n  notify:\n    after_n_builds: 2\n")
    assert not should_comment(notify, same, sessions=1, comment_exists=False)
    changes = parse_codecov_yaml("comment:\n  require_changes: true\n")
    assert not should_comment(changes, same, sessions=1, comment_exists=False)
    assert should_comment(changes, same, sessions=1, comment_exists=True)
    base = parse_codecov_yaml("comment:\n  require_base: true\n")
    assert not should_comment(base, nobase, sessions=1, comment_exists=False)
    drop = parse_codecov_yaml('comment:\n  require_changes: "coverage_drop or uncovered_patch"\n')
    worse = compared(report({"a.py": (0, 2)}), head)
    assert should_comment(drop, worse, sessions=1, comment_exists=False)
    assert not should_comment(drop, same, sessions=1, comment_exists=False)
