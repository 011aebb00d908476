"""CI must never go green by skipping the tests that need Redis or PostgreSQL."""

from __future__ import annotations

import pytest

from tests.support.services import service_missing

pytestmark = pytest.mark.timeout(10)


def test_a_missing_service_fails_the_test_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: required services must run"):
        service_missing("Redis", "connection refused")


def test_a_missing_service_skips_the_test_on_a_developer_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Redis is not reachable"):
        service_missing("Redis", "connection refused")


def test_a_test_that_needs_no_server_is_in_the_unit_tier(request: pytest.FixtureRequest) -> None:
    # tests/conftest.py reads the sources of a test and of every fixture it
    # uses; an autouse fixture that named a server would empty `pytest -m unit`.
    assert request.node.get_closest_marker("unit") is not None
