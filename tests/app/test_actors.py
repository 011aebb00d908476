"""The actors of ``app.actors``: their queues, priorities and gate options, the
app they follow, and what each one sends, called directly on an app built on
fakeredis + SQLite (no worker runs; a test reads the queues the broker wrote)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import dramatiq
import fakeredis
import pytest

from app.notify.webhooks import Attempt
from app.recovery.watch import RedisLossWatch
from app.runtime.worker import CovworkerApp, build_app
from app.storage import STORE_DOWN_RETRY_MS, StorageUnavailable
from middleware import ArgumentValidation, PerKeyConcurrency
from tests.support.pipeline import sqlite_settings

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def built(tmp_path: Path) -> Iterator[CovworkerApp]:
    from app.db.migrate import upgrade

    settings = sqlite_settings(tmp_path)
    upgrade(settings.database_url)
    app = build_app(settings, redis_client=fakeredis.FakeRedis())
    yield app
    app.close()


def queued(app: CovworkerApp, queue: str) -> list[tuple[str, tuple[int, ...]]]:
    """The messages on ``queue`` (``<name>.DQ``: delayed), as (actor, args)."""
    broker = app.broker
    raw = broker.client.hvals(f"{broker.namespace}:{queue}.msgs")  # type: ignore[attr-defined]
    found = [dramatiq.Message.decode(m) for m in raw]
    return [(m.actor_name, tuple(m.args)) for m in found]


def delays(app: CovworkerApp, queue: str) -> list[int]:
    """How long after it was made each message of a delayed queue is due (ms): the
    delay it was sent with, plus the moment the broker took to enqueue it."""
    broker = app.broker
    raw = broker.client.hvals(f"{broker.namespace}:{queue}.msgs")  # type: ignore[attr-defined]
    found = [dramatiq.Message.decode(m) for m in raw]
    return [m.options["eta"] - m.message_timestamp for m in found]


def test_finisher_and_notify_are_gated_per_commit_and_the_processor_is_not(tmp_path: Path) -> None:
    app = build_app(
        sqlite_settings(tmp_path, finisher_concurrency=5), redis_client=fakeredis.FakeRedis()
    )
    from app import actors

    try:
        finisher, notify = actors.upload_finisher.options, actors.notify.options
        assert "concurrency_limit" not in finisher
        assert app.gate.defaults.limit == 5, "the finisher's limit is the gate's default"
        assert finisher["concurrency_skip_if_pending"] is True
        assert notify["concurrency_limit"] == 1
        assert finisher["concurrency_key"](7, 42) == "7:42"
        assert "concurrency_key" not in actors.upload_processor.options
        assert isinstance(app.gate, PerKeyConcurrency)
        assert any(isinstance(m, ArgumentValidation) for m in app.broker.middleware)
    finally:
        app.close()


def test_a_notify_is_admitted_while_a_finisher_of_its_commit_holds_the_gate(
    built: CovworkerApp,
) -> None:
    from dramatiq.broker import MessageProxy

    from app import actors

    broker, gate = built.broker, built.gate
    finisher = MessageProxy(  # not held back by the debounce window: it runs now
        actors.upload_finisher.message_with_options(args=(7, 42), concurrency_debounce_ms=0)
    )
    notify = MessageProxy(actors.notify.message(7, 42))
    gate.before_process_message(broker, finisher)  # it merges, then stores the windows
    try:
        gate.before_process_message(broker, notify)  # deferred: SkipMessage
        gate.after_process_message(broker, notify)
    finally:
        gate.after_process_message(broker, finisher)
    assert queued(built, f"{actors.notify.queue_name}.DQ") == []  # no deferred copy


def test_the_commit_key_is_called_like_the_actor() -> None:
    from app.actors import commit_key  # the key PER_COMMIT gives the gate

    assert commit_key(1, 2) == "1:2"
    assert commit_key(repoid=3, commitid=4) == "3:4"


def test_the_actors_are_module_level_and_follow_the_app_built_last(tmp_path: Path) -> None:
    import app.actors as actors

    first = build_app(sqlite_settings(tmp_path), redis_client=fakeredis.FakeRedis())
    second = build_app(
        sqlite_settings(tmp_path, queue_name="other"), redis_client=fakeredis.FakeRedis()
    )
    try:
        assert {a.actor_name for a in actors.ACTORS} == {
            "upload_processor",
            "bulk_upload_processor",
            "payload_arrival",
            "upload_finisher",
            "notify",
            "deliver_webhook",
            "deliver_pull",
            "sweep",
        }
        for actor in actors.ACTORS:
            assert actor.broker is second.broker
            assert second.broker.get_actor(actor.actor_name) is actor
            expected = "other.finish" if actor.actor_name in actors.ON_FINISHER_QUEUE else "other"
            if actor is actors.bulk_upload_processor:
                expected = "other.bulk"
            assert actor.queue_name == expected
        assert actors.upload_finisher.broker is second.broker
        assert actors.services() is second.services
    finally:
        first.close()
        second.close()


def test_the_finishers_debounce_window_is_that_of_the_app_built_last(tmp_path: Path) -> None:
    import app.actors as actors

    first = build_app(
        sqlite_settings(tmp_path, finisher_debounce_ms=250), redis_client=fakeredis.FakeRedis()
    )
    second = build_app(
        sqlite_settings(tmp_path, finisher_debounce_ms=0), redis_client=fakeredis.FakeRedis()
    )
    try:
        assert actors.upload_finisher.options["concurrency_debounce_ms"] == 0
    finally:
        first.close()
        second.close()


def test_notify_and_finishers_sent_ahead_use_the_finisher_queue_and_processors_run_last(
    tmp_path: Path,
) -> None:

    import app.actors as actors
    from app.db.migrate import upgrade

    settings = sqlite_settings(tmp_path)
    upgrade(settings.database_url)  # a finisher's window reads the commit's state
    covworker = build_app(settings, redis_client=fakeredis.FakeRedis())
    broker = covworker.broker
    try:
        assert covworker.settings.queue_names == ("covworker", "covworker.finish", "covworker.bulk")
        assert set(covworker.settings.queue_names) <= broker.get_declared_queues()
        assert actors.notify.queue_name == "covworker.finish"
        # A webhook is not held behind the processors either.
        assert actors.deliver_webhook.queue_name == "covworker.finish"
        assert actors.upload_finisher.queue_name == "covworker"
        processors = (actors.upload_processor, actors.bulk_upload_processor)
        others = [a for a in actors.ACTORS if a not in processors]
        assert all(actors.upload_processor.priority > a.priority for a in others)
        # A worker holding both runs the shared queue's processor first.
        assert actors.bulk_upload_processor.priority > actors.upload_processor.priority
        assert actors.bulk_upload_processor.queue_name == "covworker.bulk"

        actors.send_finisher(1, 2)
        actors.send_finisher_ahead(3, 4)

        # Each opens its commit's debounce window as it is sent: delayed on its queue.
        assert queued(covworker, "covworker.DQ") == [("upload_finisher", (1, 2))]
        assert queued(covworker, "covworker.finish.DQ") == [("upload_finisher", (3, 4))]
        assert queued(covworker, "covworker") == queued(covworker, "covworker.finish") == []
    finally:
        covworker.close()


def test_a_finisher_is_sent_ahead_only_when_nothing_of_its_commit_is_processing(
    built: CovworkerApp,
) -> None:
    import app.actors as actors

    built.services.state.mark_processing(1, 2, [10])
    actors.send_finisher_for(1, 2)
    actors.send_finisher_for(3, 4)
    assert queued(built, "covworker.DQ") == [("upload_finisher", (1, 2))]  # the window's copy
    assert queued(built, "covworker.finish.DQ") == [("upload_finisher", (3, 4))]


def test_a_finisher_of_a_commit_with_one_pending_is_not_sent_again(
    built: CovworkerApp,
) -> None:
    import app.actors as actors

    for _ in range(3):
        actors.send_finisher(1, 2)
    actors.send_finisher(1, 3)
    assert sorted(queued(built, "covworker.DQ")) == [
        ("upload_finisher", (1, 2)),
        ("upload_finisher", (1, 3)),
    ]


def test_a_processor_whose_payload_store_is_down_sends_itself_again_later(
    built: CovworkerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.actors as actors

    def store_down(*args: object) -> None:
        raise StorageUnavailable("the object store does not answer")

    monkeypatch.setattr(actors, "process_upload", store_down)
    actors.upload_processor.fn(41)
    assert queued(built, "covworker.DQ") == [("upload_processor", (41,))]
    (delay,) = delays(built, "covworker.DQ")
    assert STORE_DOWN_RETRY_MS <= delay < STORE_DOWN_RETRY_MS + 1000


def test_a_webhook_delivery_to_retry_sends_itself_after_its_backoff(
    built: CovworkerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.actors as actors

    attempts = iter([Attempt(attempted=True, retry_in_s=2.5), Attempt(attempted=True)])
    monkeypatch.setattr(actors.webhooks, "deliver_webhook", lambda svc, nid: next(attempts))
    actors.deliver_webhook.fn(7)
    actors.deliver_webhook.fn(7)  # delivered: nothing more to send
    assert queued(built, "covworker.finish.DQ") == [("deliver_webhook", (7,))]
    (delay,) = delays(built, "covworker.finish.DQ")
    assert 2500 <= delay < 3500


def test_each_app_gets_a_redis_loss_watch_that_sweeps_everything_once_redis_lost_its_data(
    built: CovworkerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.actors as actors

    watches = [m for m in built.broker.middleware if isinstance(m, RedisLossWatch)]
    assert len(watches) == 1
    assert watches[0].interval_s == built.settings.redis_loss_check_s
    sweeps: list[float | None] = []
    monkeypatch.setattr(
        actors, "sweep_uploads", lambda older_than_s=None: sweeps.append(older_than_s)
    )
    missing = iter([False, True])
    monkeypatch.setattr(built.services.state, "epoch_missing", lambda: next(missing))
    watches[0].check()
    assert sweeps == [], "Redis kept its data: nothing to do"
    watches[0].check()
    assert sweeps == [None], "the epoch marker is gone: the sweep runs at once"


def settled_by_its_finisher(built: CovworkerApp) -> tuple[int, int]:
    """A commit of two uploads, parsed by the processor actor and merged by the
    finisher actor, called directly: (repoid, commitid)."""
    import app.actors as actors
    from app.ingest.accept import accept_uploads
    from tests.support.synthetic import ci_matrix

    accepted = accept_uploads(built.services, "acme/web", "a" * 40, ci_matrix(2))
    for upload_id in accepted.upload_ids:
        actors.upload_processor.fn(upload_id)
    actors.upload_finisher.fn(accepted.repoid, accepted.commitid)
    return accepted.repoid, accepted.commitid


def notifications_of(built: CovworkerApp, commitid: int) -> list[tuple[int, int]]:
    import sqlalchemy as sa

    from app.db.models import Notification

    with built.services.sessions() as session:
        rows = session.execute(
            sa.select(Notification.report_version, Notification.uploads_merged).where(
                Notification.commit_id == commitid
            )
        ).all()
    return [(row[0], row[1]) for row in rows]


def test_the_finisher_that_settles_a_commit_notifies_in_its_own_delivery(
    built: CovworkerApp,
) -> None:
    _, commitid = settled_by_its_finisher(built)
    assert notifications_of(built, commitid) == [(1, 2)]
    notify_messages = [
        m
        for queue in ("covworker", "covworker.DQ", "covworker.finish", "covworker.finish.DQ")
        for m in queued(built, queue)
        if m[0] == "notify"
    ]
    assert notify_messages == [], "no notify message: the finisher wrote it"


def test_a_notification_that_fails_in_the_finisher_is_left_to_the_notify_message(
    built: CovworkerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.actors as actors

    def database_gone(*args: object) -> None:
        raise OSError("the database went away")

    monkeypatch.setattr(actors, "notify_commit", database_gone)
    _, commitid = settled_by_its_finisher(built)
    assert notifications_of(built, commitid) == []
    (sent,) = [m for m in queued(built, "covworker.finish") if m[0] == "notify"]
    monkeypatch.undo()
    actors.notify.fn(*sent[1])
    assert notifications_of(built, commitid) == [(1, 2)]


def test_a_commit_whose_finisher_runs_take_long_batches_its_arrivals_longer(
    built: CovworkerApp,
) -> None:
    import app.actors as actors

    settings = built.settings
    defaults = (250, 3.0, 1000)
    assert (
        settings.finisher_debounce_ms,
        settings.finisher_debounce_factor,
        settings.finisher_debounce_max_ms,
    ) == defaults
    built.services.state.record_run(1, 2, 0.25)  # a run of 250 ms: windows of 750 ms
    built.services.state.record_run(1, 3, 0.05)  # a quick one: the base window
    built.services.state.record_run(1, 4, 9.0)  # a slow one: the longest window
    sent_ms = int(time.time() * 1000)  # whole milliseconds, as Dramatiq's eta is counted
    for commit in (2, 3, 4):
        actors.send_finisher(1, commit)
    broker = built.broker
    raw = broker.client.hvals(f"{broker.namespace}:covworker.DQ.msgs")  # type: ignore[attr-defined]
    due = {
        tuple(m.args): m.options["eta"] - sent_ms for m in map(dramatiq.Message.decode, raw)
    }  # the window's copy is due when the window closes
    assert 750 <= due[(1, 2)] < 850
    assert 250 <= due[(1, 3)] < 350
    assert 1000 <= due[(1, 4)] < 1100


def test_a_finisher_run_that_merged_is_remembered_for_the_next_window(
    built: CovworkerApp,
) -> None:
    import app.actors as actors

    state = built.services.state
    actors.upload_finisher.fn(1, 2)  # nothing processed: merges nothing
    assert state.last_run_ms(1, 2) == 0
    repoid, commitid = settled_by_its_finisher(built)
    assert state.last_run_ms(repoid, commitid) > 0
