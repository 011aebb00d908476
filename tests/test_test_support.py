"""The test support: the suite cleans up after itself on the shared Redis; the fake GitHub."""

from __future__ import annotations

import uuid

import httpx
import redis

from tests.support.fake_github import ANY_BASE, FakeGitHub
from tests.support.services import delete_namespace, redis_test_url, require_redis


def test_delete_namespace_removes_every_key_of_the_namespace_and_nothing_else() -> None:
    require_redis()
    client = redis.Redis.from_url(redis_test_url())
    mine, other = f"cwt-{uuid.uuid4().hex[:10]}", f"cwt-{uuid.uuid4().hex[:10]}"
    try:
        keys = [f"{mine}:gate:{{k{i}}}" for i in range(1200)] + [f"{mine}-dramatiq:q"]
        client.mset(dict.fromkeys(keys, "1"))
        client.set(f"{other}:kept", "1")
        assert delete_namespace(redis_test_url(), mine) == len(keys)
        assert list(client.scan_iter(match=f"{mine}*")) == []
        assert client.get(f"{other}:kept") == b"1"
    finally:
        client.delete(f"{other}:kept", *[f"{mine}:gate:{{k{i}}}" for i in range(3)])
        client.close()


def test_the_fake_githubs_comparison_of_any_commits_answers_after_the_exact_ones() -> None:
    """A load run's bases are the commits that settle as it goes: the fake
    answers any comparison of the repository, and the exact one first."""
    exact = [("exact.py", "modified", "@@ -0,0 +1 @@\n+a\n")]
    anything = [("any.py", "modified", "@@ -0,0 +1 @@\n+b\n")]
    with FakeGitHub() as fake:
        fake.add_diff("load/repo", "a" * 40, "b" * 40, exact)
        fake.add_diff("load/repo", ANY_BASE, ANY_BASE, anything)

        def compared(repo: str, base: str, head: str) -> tuple[int, list[str]]:
            answer = httpx.get(f"{fake.url}/repos/{repo}/compare/{base}...{head}")
            files = answer.json().get("files", []) if answer.status_code == 200 else []
            return answer.status_code, [f["filename"] for f in files]

        assert compared("load/repo", "a" * 40, "b" * 40) == (200, ["exact.py"])
        assert compared("load/repo", "c" * 40, "d" * 40) == (200, ["any.py"])
        assert compared("load/other", "c" * 40, "d" * 40)[0] == 404
