"""Malformed messages are dead-lettered at once with a readable reason; good work goes on.

Sent straight to the broker of real worker processes, between good
uploads: missing arguments, wrong types, an unknown upload, an unknown
commit, an unknown actor. Each must land in the dead-letter queue without a
single retry, with one log line that names it and says why, and the good
uploads around them must merge and notify as usual.
"""

from __future__ import annotations

from pathlib import Path

import dramatiq
import pytest
import redis
from dramatiq.brokers.redis import RedisBroker

from tests.support.faults.harness import (
    fresh_stack,
    join_queue,
    plan_commits,
    record,
    upload_with_cli,
)
from tests.support.faults.tally import tally
from tests.support.processes import dramatiq_workers
from tests.support.services import redis_test_url

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

#: (actor, args, what the log line must say) of each malformed message.
MALFORMED_MESSAGES: list[tuple[str, tuple[object, ...], str]] = [
    ("upload_processor", (), "missing a required argument"),
    ("upload_processor", ("not-an-id",), "must be int"),
    ("upload_finisher", (1,), "missing a required argument"),
    ("upload_finisher", ("1", None), "must be int"),
    ("notify", (1, 2, 3), "too many positional arguments"),
    ("upload_processor", (987_654,), "upload 987654 does not exist"),
    ("notify", (1, 987_654), "commit 987654 of repository 1 does not exist"),
    ("no_such_actor", (1,), "undefined actor"),
]


def test_malformed_messages_are_dead_lettered_once_with_a_reason_and_block_nothing(
    tmp_path: Path, namespace: str
) -> None:
    plans = plan_commits(2, 10, malformed_every=5, tag="msg")
    with fresh_stack(namespace) as (db_url, env):
        broker = RedisBroker(
            client=redis.Redis.from_url(redis_test_url()), namespace=f"{namespace}-dramatiq"
        )
        log = tmp_path / "worker.log"
        sent = []
        try:
            with dramatiq_workers(env, log, processes=2, threads=4):
                upload_with_cli(env, tmp_path, plans[0])
                for actor, args, _ in MALFORMED_MESSAGES:
                    message = dramatiq.Message(
                        queue_name="covworker",
                        actor_name=actor,
                        args=args,
                        kwargs={},
                        options={},
                    )
                    broker.enqueue(message)
                    sent.append(message.message_id)
                upload_with_cli(env, tmp_path, plans[1])
                join_queue(redis_test_url(), namespace, timeout_s=120)
            raw = broker.client.hvals(f"{namespace}-dramatiq:covworker.XQ.msgs")
            dead = {m.message_id: m for m in map(dramatiq.Message.decode, raw)}
        finally:
            broker.close()
        result = tally(db_url, plans)
    output = log.read_text()

    record(
        "malformed-messages",
        **result.summary(),
        faults=len(sent),
        dead_lettered=len(dead),
        retried=sum(1 for m in dead.values() if m.options.get("retries", 0)),
    )
    assert sorted(dead) == sorted(sent), output[-4000:]
    assert all(m.options.get("retries", 0) == 0 for m in dead.values())
    for message_id, (actor, _, reason) in zip(sent, MALFORMED_MESSAGES, strict=True):
        # Dramatiq's line for an undefined actor names the actor, not the message.
        lines = [line for line in output.splitlines() if message_id in line or f"'{actor}'" in line]
        assert any(reason in line for line in lines), (reason, lines)
    result.assert_exactly_once()
