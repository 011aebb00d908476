"""The gate's options: ``GateOptions.of`` (overrides and validation), ``key_of`` and
``is_observed``, called directly; the gate refusing them at declaration is in
``test_per_key_concurrency.py``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from dramatiq.brokers.stub import StubBroker
from dramatiq.results import Results
from dramatiq.results.backends import StubBackend as ResultsStub

from middleware.gate._options import (
    MAX_DELAY_MS,
    GateConfigurationError,
    GateOptions,
    Ungateable,
    is_observed,
    key_of,
)

DEFAULTS = GateOptions(limit=1, delay_ms=500, jitter_ms=500, lease_ms=30_000, skip_if_pending=False)


def test_options_override_only_the_defaults_they_name() -> None:
    found = GateOptions.of(
        "actor a", {"concurrency_limit": 4, "concurrency_skip_if_pending": True}, DEFAULTS
    )
    assert found == GateOptions(
        limit=4, delay_ms=500, jitter_ms=500, lease_ms=30_000, skip_if_pending=True
    )
    assert GateOptions.of("actor a", {"concurrency_limit": None}, DEFAULTS) == DEFAULTS


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("concurrency_limit", 0),
        ("concurrency_lease_ms", 0),
        ("concurrency_delay_ms", -1),
        ("concurrency_jitter_ms", 1.5),
        ("concurrency_limit", True),
        ("concurrency_debounce_ms", "100"),
    ],
)
def test_an_integer_option_that_is_not_an_int_at_its_minimum_is_refused_naming_where(
    name: str, value: Any
) -> None:
    with pytest.raises(GateConfigurationError, match=rf"^actor a: {name} must be an int >= "):
        GateOptions.of("actor a", {name: value}, DEFAULTS)


@pytest.mark.parametrize("name", ["concurrency_skip_if_pending", "concurrency_keep_timestamp"])
def test_a_flag_must_be_a_bool(name: str) -> None:
    with pytest.raises(GateConfigurationError, match=f"{name} must be a bool"):
        GateOptions.of("actor a", {name: 1}, DEFAULTS)


def test_keep_timestamp_is_off_unless_asked_for() -> None:
    assert DEFAULTS.keep_timestamp is False
    kept = GateOptions.of("actor a", {"concurrency_keep_timestamp": True}, DEFAULTS)
    assert kept.keep_timestamp is True


def test_a_debounce_needs_fungible_messages() -> None:
    with pytest.raises(GateConfigurationError, match="needs concurrency_skip_if_pending=True"):
        GateOptions.of("actor a", {"concurrency_debounce_ms": 100}, DEFAULTS)
    found = GateOptions.of(
        "actor a",
        {"concurrency_debounce_ms": 100, "concurrency_skip_if_pending": True},
        DEFAULTS,
    )
    assert found.debounce_ms == 100


def test_a_delay_a_broker_cannot_take_is_refused() -> None:
    fits = GateOptions.of(
        "a", {"concurrency_delay_ms": MAX_DELAY_MS - 500, "concurrency_jitter_ms": 500}, DEFAULTS
    )
    assert fits.delay_ms + fits.jitter_ms == MAX_DELAY_MS
    with pytest.raises(GateConfigurationError, match="at most"):
        GateOptions.of("a", {"concurrency_delay_ms": MAX_DELAY_MS - 499}, DEFAULTS)
    with pytest.raises(GateConfigurationError, match="concurrency_debounce_ms must be at most"):
        GateOptions.of(
            "a",
            {"concurrency_debounce_ms": MAX_DELAY_MS + 1, "concurrency_skip_if_pending": True},
            DEFAULTS,
        )


def test_the_error_raised_is_the_callers_choice() -> None:
    with pytest.raises(Ungateable, match="message m1: concurrency_limit"):
        GateOptions.of("message m1", {"concurrency_limit": 0}, DEFAULTS, error=Ungateable)


def test_a_messages_own_key_wins_over_the_actors_function() -> None:
    actor = {"concurrency_key": lambda repo: f"repo-{repo}"}
    assert key_of(actor, {}, (7,), {}) == "repo-7"
    assert key_of(actor, {"concurrency_key": "literal"}, (7,), {}) == "literal"
    assert key_of({}, {}, (7,), {}) is None, "an actor without a key is not gated"


def test_the_key_function_is_called_with_the_messages_arguments() -> None:
    actor = {"concurrency_key": lambda repo, *, sha: f"{repo}:{sha}"}
    assert key_of(actor, {}, (1,), {"sha": "abc"}) == "1:abc"
    assert key_of({"concurrency_key": lambda *a: None}, {}, (), {}) is None


def test_a_key_function_that_raises_makes_the_message_ungateable_naming_the_error() -> None:
    empty: dict[str, int] = {}
    with pytest.raises(Ungateable, match="concurrency_key raised KeyError"):
        key_of({"concurrency_key": lambda: empty["x"]}, {}, (), {})


@pytest.mark.parametrize("key", ["", 42, b"bytes"])
def test_a_key_that_is_not_a_non_empty_str_is_ungateable(key: object) -> None:
    with pytest.raises(Ungateable, match="must give a non-empty str or None"):
        key_of({"concurrency_key": lambda: key}, {}, (), {})
    with pytest.raises(Ungateable):
        key_of({}, {"concurrency_key": key}, (), {})


def observed(
    message_options: dict[str, Any], actor_options: dict[str, Any], broker: Any = None
) -> bool:
    message = SimpleNamespace(options=message_options)
    actor = SimpleNamespace(options=actor_options)
    return is_observed(broker or StubBroker(), actor, message)


@pytest.mark.parametrize(
    "name", ["on_success", "on_failure", "pipe_target", "group_completion_uuid"]
)
def test_a_message_or_actor_with_a_completion_observer_is_observed(name: str) -> None:
    assert observed({name: "x"}, {}) is True
    assert observed({}, {name: "x"}) is True


def test_a_plain_message_is_not_observed() -> None:
    assert observed({}, {}) is False


def test_a_stored_result_is_observed_and_the_message_option_wins_over_results_default() -> None:
    broker = StubBroker()
    broker.add_middleware(Results(backend=ResultsStub(), store_results=True))
    assert observed({}, {}, broker) is True, "Results stores every result by default"
    assert observed({"store_results": False}, {}, broker) is False
    assert observed({}, {"store_results": False}, broker) is False
    assert observed({"store_results": True}, {}) is True
