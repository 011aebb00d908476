"""ArgumentValidation: a message that cannot fit its actor is dead-lettered, not retried."""

from __future__ import annotations

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from middleware import ArgumentValidation

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def actor() -> dramatiq.Actor:  # type: ignore[type-arg]
    broker = StubBroker()

    def finish(repoid: int, commitid: int, ratio: float = 1.0, note: str = "") -> None:
        pass

    return dramatiq.actor(broker=broker, actor_name="finish")(finish)


@pytest.mark.parametrize(
    ("args", "kwargs", "reason"),
    [
        ((1,), {}, "missing a required argument: 'commitid'"),
        ((1, 2, 3.0, "x", "extra"), {}, "too many positional arguments"),
        (("1", 2), {}, "argument 'repoid' must be int, got str"),
        ((True, 2), {}, "argument 'repoid' must be int, got bool"),
        ((1, 2), {"note": 5}, "argument 'note' must be str, got int"),
        ((1, 2), {"colour": "red"}, "unexpected keyword argument 'colour'"),
        ({"not": "a list"}, {}, "args must be a list"),
    ],
)
def test_arguments_that_cannot_fit_are_named_in_the_reason(
    actor: dramatiq.Actor,
    args: object,
    kwargs: dict[str, object],
    reason: str,  # type: ignore[type-arg]
) -> None:
    problem = ArgumentValidation().problem(actor, args, kwargs)
    assert problem is not None and reason in problem


@pytest.mark.parametrize(
    ("args", "kwargs"), [((1, 2), {}), ((1, 2, 3), {}), ((1,), {"commitid": 2, "ratio": 0.5})]
)
def test_arguments_that_fit_pass(
    actor: dramatiq.Actor,
    args: tuple[object, ...],
    kwargs: dict[str, object],  # type: ignore[type-arg]
) -> None:
    assert ArgumentValidation().problem(actor, args, kwargs) is None


def test_a_message_that_cannot_fit_is_failed_so_it_is_dead_lettered_at_once(
    actor: dramatiq.Actor,  # type: ignore[type-arg]
) -> None:
    message = dramatiq.broker.MessageProxy(actor.message("not-an-int", 2))

    with pytest.raises(SkipMessage, match="must be int"):
        ArgumentValidation().before_process_message(actor.broker, message)

    assert message.failed  # the consumer nacks a failed message into the dead-letter queue
