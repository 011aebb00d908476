"""The operations view reads the broker's and the gate's keys as they are."""

from __future__ import annotations

import json
from pathlib import Path

import fakeredis
import pytest

from app.ingest.accept import accept_uploads
from app.recovery.sweeper import sweep
from app.runtime.state import last_sweep
from app.web.ops import RedisLayout, broker_state, gate_state
from tests.support.pipeline import unit_services

pytestmark = pytest.mark.timeout(30)

LAYOUT = RedisLayout("cw", "covworker")


def message(message_id: str, actor: str, args: list[object], **options: object) -> str:
    return json.dumps(
        {"message_id": message_id, "actor_name": actor, "args": args, "options": options}
    )


def test_dead_letters_are_listed_with_the_last_line_of_their_traceback() -> None:
    client = fakeredis.FakeRedis()
    client.rpush(LAYOUT.queue_key(), "m1")
    client.hset(LAYOUT.queue_key(".msgs"), "m1", message("m1", "upload_processor", [1]))
    trace = "Traceback (most recent call last):\n  ...\nUnknownEntity: upload 9 does not exist"
    client.zadd(LAYOUT.queue_key(".XQ"), {"m2": 1_700_000_000_000})
    client.hset(
        LAYOUT.queue_key(".XQ.msgs"),
        "m2",
        message("m2", "upload_processor", [9], traceback=trace),
    )
    client.hset(LAYOUT.queue_key(".DQ.msgs"), "m3", message("m3", "upload_finisher", [1, 2]))
    client.sadd(f"{LAYOUT.broker}:__acks__.worker-a.covworker", "m0")

    state = broker_state(client, LAYOUT)

    assert (state["ready"], state["delayed"], state["dead"], state["in_flight"]) == (1, 1, 1, 1)
    assert state["dead_letters"] == [
        {
            "message_id": "m2",
            "queue": "covworker",
            "actor": "upload_processor",
            "args": [9],
            "at_ms": 1_700_000_000_000,
            "reason": "UnknownEntity: upload 9 does not exist",
        }
    ]


def test_gate_keys_show_live_holders_the_pending_copy_and_deferred_messages() -> None:
    client = fakeredis.FakeRedis()
    seconds, micros = client.time()
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    client.zadd(
        "cw:gate:{4:7}",
        {
            "h:live": now_ms + 20_000,
            "h:dead": now_ms - 1,
            "p:15:upload_finisher:m9": now_ms + 50_000,
        },
    )
    deferred = message("m9", "upload_finisher", [4, 7], concurrency_deferrals=2)
    client.hset(LAYOUT.queue_key(".DQ.msgs"), "m9", deferred)
    other = message("m8", "upload_finisher", [5, 1], concurrency_deferrals=1)
    client.hset(LAYOUT.queue_key(".DQ.msgs"), "m8", other)

    keys = {k["key"]: k for k in gate_state(client, LAYOUT)}

    assert [h["holder"] for h in keys["4:7"]["holders"]] == ["live"]
    assert keys["4:7"]["pending"]["message_id"] == "m9"
    assert keys["4:7"]["pending"]["actor"] == "upload_finisher"
    assert keys["4:7"]["deferred"] == 1
    assert keys["5:1"] == {"key": "5:1", "holders": [], "pending": None, "deferred": 1}


def test_the_finisher_queue_is_counted_and_its_dead_letters_and_deferrals_listed() -> None:
    client = fakeredis.FakeRedis()
    layout = RedisLayout("cw", "covworker", "covworker.finish")
    for queue, n in (("covworker", 3), ("covworker.finish", 2)):
        for i in range(n):
            client.rpush(layout.queue_key(queue=queue), f"{queue}-{i}")
    client.zadd(layout.queue_key(".XQ", "covworker.finish"), {"m5": 1_700_000_000_005})
    client.hset(
        layout.queue_key(".XQ.msgs", "covworker.finish"), "m5", message("m5", "notify", [1, 2])
    )
    deferred = message("m6", "upload_finisher", [1, 2], concurrency_deferrals=1)
    client.hset(layout.queue_key(".DQ.msgs", "covworker.finish"), "m6", deferred)

    state = broker_state(client, layout)

    assert [(q["queue"], q["ready"]) for q in state["queues"]] == [
        ("covworker", 3),
        ("covworker.finish", 2),
    ]
    assert (state["ready"], state["delayed"], state["dead"]) == (5, 1, 1)
    assert [(d["queue"], d["actor"]) for d in state["dead_letters"]] == [
        ("covworker.finish", "notify")
    ]
    keys = {k["key"]: k for k in gate_state(client, layout)}
    assert keys["1:2"]["deferred"] == 1


def test_a_sweep_leaves_a_record_of_what_it_redrove(tmp_path: Path) -> None:
    services = unit_services(tmp_path)
    accepted = accept_uploads(services, "acme/web", "a" * 40, [("x.info", b"SF:a\nDA:1,1\n")])
    sent: list[int] = []
    sweep(
        services,
        send_processor=sent.append,
        send_finisher=lambda *a: None,
        send_notify=lambda *a: None,
        older_than_s=0,
    )
    record = last_sweep(services.redis, services.settings.namespace)
    assert record is not None
    assert record["reprocessed"] == 1 and record["reprocessed_ids"] == accepted.upload_ids
    assert sent == accepted.upload_ids
    services.close()
