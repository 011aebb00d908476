"""Turns to receive large PUT bodies: per repository, then in all."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from app.api.errors import ApiError
from app.api.payload_limits import RETRY_AFTER_S, LargeBodies


def test_a_repository_past_its_turns_gets_429_with_retry_after_and_others_go_on() -> None:
    bodies = LargeBodies(at_once=10, per_repository=2)
    with ExitStack() as held:
        held.enter_context(bodies.turn(1))
        held.enter_context(bodies.turn(1))
        with pytest.raises(ApiError) as refused:
            held.enter_context(bodies.turn(1))
        assert refused.value.status == 429
        assert refused.value.headers == {"Retry-After": str(RETRY_AFTER_S), "Connection": "close"}
        held.enter_context(bodies.turn(2))
        assert bodies.receiving == 3
    assert bodies.receiving == 0 and not bodies.by_repository


def test_the_server_past_its_turns_gets_503_and_a_turn_given_back_is_taken_again() -> None:
    bodies = LargeBodies(at_once=2, per_repository=2)
    with bodies.turn(1):
        with bodies.turn(2):
            with pytest.raises(ApiError) as refused, bodies.turn(3):
                pass
            assert refused.value.status == 503
        with bodies.turn(3):
            assert bodies.receiving == 2
