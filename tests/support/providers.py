"""What the provider clients' tests check alike, whichever provider's fake answers."""

from __future__ import annotations

from app.providers import Provider
from tests.support.fake_github import FakeGitHub


def comment_written_edited_and_deleted(
    provider: Provider, fake: FakeGitHub, repo: str, number: int
) -> int:
    """Comment on pull request ``number``, edit the comment and delete it,
    checking each step on ``fake`` (the fake GitLab is a fake GitHub too):
    the deleted comment's id."""
    comment = provider.create_comment(repo, number, "first")
    assert comment > 2**31  # the providers' ids need 64 bits
    assert provider.update_comment(repo, number, comment, "second") is True
    assert fake.comments_on(repo, number) == {comment: "second"}
    provider.delete_comment(repo, number, comment)
    assert fake.comments_on(repo, number) == {}
    return comment
