"""The test support: the suite cleans up after itself on the shared Redis; the fake GitHub."""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path

import httpx
import redis

from tests.support.fake_github import (
    ANY_BASE,
    GITHUB_SPEC,
    FakeGitHub,
    FakePull,
    needs_prism,
    prism_proxy,
)
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


@needs_prism
def test_a_pooled_prism_serves_each_lease_its_own_fake_and_its_own_log(tmp_path: Path) -> None:
    """One Prism is lent to test after test: each lease reaches only its own
    fake, and its log (what ``violations`` reads) holds only its own calls."""
    auth = {"Authorization": "token t"}
    with FakeGitHub() as first, prism_proxy(GITHUB_SPEC, first.url, tmp_path / "1.log") as lent:
        # pull_number is an integer in the description: Prism refuses it itself
        assert httpx.get(f"{lent.url}/repos/o/r/pulls/abc", headers=auth).status_code == 422
        assert httpx.get(f"{lent.url}/repos/o/r/pulls/6", headers=auth).status_code == 404
        pid = lent.process.pid
    with FakeGitHub() as second, prism_proxy(GITHUB_SPEC, second.url, tmp_path / "2.log") as again:
        second.add_pull("o/r", FakePull(7, "a" * 40, "main", "b" * 40, "feature"))
        answer = httpx.get(f"{again.url}/repos/o/r/pulls/7", headers=auth)
        assert answer.status_code == 200 and answer.json()["number"] == 7
        assert again.process.pid == pid and again.violations() == []

    assert [r.path for r in first.state.requests] == ["/repos/o/r/pulls/6"]
    assert [r.path for r in second.state.requests] == ["/repos/o/r/pulls/7"]
    one, two = (tmp_path / "1.log").read_text(), (tmp_path / "2.log").read_text()
    assert "/pulls/abc" in one and "UNPROCESSABLE_ENTITY" in one and "/pulls/7" not in one
    assert "/pulls/7" in two and "/pulls/abc" not in two and "/pulls/6" not in two


def test_a_client_that_hangs_up_before_its_answer_is_not_the_fakes_error() -> None:
    """A lookup whose answer is no longer needed is cut off when its test
    ends; the fake counts the hang-up instead of failing the test."""
    with FakeGitHub() as fake:
        fake.add_file("o/r", "a" * 40, "big.yml", b"x" * 1_000_000)
        fake.state.latency_s = 0.2
        host, port = fake.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as client:
            client.sendall(
                f"GET /repos/o/r/contents/big.yml?ref={'a' * 40} HTTP/1.1\r\n"
                f"Host: {host}\r\n\r\n".encode()
            )
        deadline = time.monotonic() + 5
        while fake.hangups == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert fake.hangups == 1 and fake.errors == []
