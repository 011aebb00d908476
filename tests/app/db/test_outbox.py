"""The outboxes' shared timing rules (app/db/outbox.py), without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.db.outbox import RetryPolicy
from app.feedback import rows
from app.notify import webhooks
from app.settings import Settings

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_the_backoff_doubles_from_the_first_wait_up_to_the_cap() -> None:
    policy = RetryPolicy(min_backoff_s=2.0, max_backoff_s=30.0, horizon_s=3600.0)
    assert [policy.backoff_s(n) for n in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert policy.backoff_s(10_000) == 30.0  # no overflow on a row tried for ever


def test_a_rate_limits_own_wait_wins_when_longer_than_the_backoff() -> None:
    policy = RetryPolicy(min_backoff_s=2.0, max_backoff_s=30.0, horizon_s=3600.0)
    assert policy.retry_in_s(NOW, NOW, 1, wait_s=45.0) == 45.0
    assert policy.retry_in_s(NOW, NOW, 3, wait_s=1.0) == 8.0


def test_past_the_horizon_there_is_no_next_attempt_even_for_a_naive_timestamp() -> None:
    policy = RetryPolicy(min_backoff_s=2.0, max_backoff_s=30.0, horizon_s=600.0)
    written = NOW - timedelta(seconds=600)
    assert policy.retry_in_s(written, NOW, 5) is None
    assert policy.retry_in_s(written.replace(tzinfo=None), NOW, 5) is None  # SQLite's datetimes
    assert policy.retry_in_s(written + timedelta(seconds=1), NOW, 5) == 30.0


def test_each_outbox_takes_its_own_settings() -> None:
    settings = Settings(
        webhook_min_backoff_s=1.0,
        webhook_max_backoff_s=5.0,
        webhook_horizon_s=60.0,
        pr_delivery_min_backoff_s=3.0,
        pr_delivery_max_backoff_s=7.0,
        pr_delivery_horizon_s=90.0,
    )
    assert webhooks.retry_policy(settings) == RetryPolicy(1.0, 5.0, 60.0)
    assert rows.retry_policy(settings) == RetryPolicy(3.0, 7.0, 90.0)
