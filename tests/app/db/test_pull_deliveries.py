"""The words of the pull_deliveries table: a row's target, and the mark of a
pull request's event on it."""

from __future__ import annotations

from app.db.pull_deliveries import (
    COMMENT,
    PREPARE,
    comment_key,
    kind_of,
    pull_round,
    round_of,
    status_target,
)


def test_a_status_row_is_named_by_its_context_and_a_comment_by_its_pull_request() -> None:
    assert status_target("codecov/patch") == "status:codecov/patch"
    assert comment_key(12, 7) == "comment:12:7"


def test_an_events_mark_is_one_per_pull_and_base_and_comes_off_the_target() -> None:
    mark = pull_round(7, "main", "a" * 40)
    assert mark.startswith("|pull-7-") and len(mark) == len("|pull-7-") + 16
    assert pull_round(7, "main", "a" * 40) == mark
    assert pull_round(7, "main", "b" * 40) != mark
    assert pull_round(7, "develop", None) != mark
    for target in (PREPARE, COMMENT, status_target("codecov/project")):
        assert round_of(target + mark) == mark
        assert kind_of(target + mark) == target
        assert (round_of(target), kind_of(target)) == ("", target)


def test_a_target_that_only_looks_marked_keeps_its_name() -> None:
    # a status context is the file's: it may end in "|pull-1-..." without being a mark
    almost = status_target("ci|pull-1-xyz")
    assert (round_of(almost), kind_of(almost)) == ("", almost)
