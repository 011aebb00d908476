"""The plugin of ``scripts/dramatiq_suite_with_gate.py``: what it does to each broker
of Dramatiq's suite. (The whole run takes 11 minutes; its result is in docs/gate.md.)"""

from __future__ import annotations

import importlib.util
from types import ModuleType

import dramatiq
import pytest
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker

from middleware import PerKeyConcurrency
from tests.support.paths import ROOT


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module; the brokers it patches are restored after the test."""
    for broker_class in (StubBroker, RedisBroker, RabbitmqBroker):
        monkeypatch.setattr(broker_class, "__init__", broker_class.__init__)
    monkeypatch.delenv("DRAMATIQ_SUITE_WITHOUT_GATE", raising=False)
    path = ROOT / "scripts" / "dramatiq_suite_with_gate.py"
    spec = importlib.util.spec_from_file_location("dramatiq_suite_with_gate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_broker_gets_the_gate_and_every_message_takes_and_gives_back_a_slot(
    plugin: ModuleType,
) -> None:
    plugin.install_gate()
    broker = StubBroker()
    gate = PerKeyConcurrency.of(broker)
    assert gate is not None and gate.defaults.limit == 10_000

    @dramatiq.actor(broker=broker)
    def add(x: int, y: int) -> int:
        return x + y

    assert add.options["concurrency_key"](1, 2) == "add", "keyed by its name"
    for n in range(5):
        add.send(n, n)
    worker = dramatiq.Worker(broker, worker_timeout=50)
    worker.start()
    broker.join(add.queue_name, timeout=10_000)
    worker.stop()
    broker.close()
    assert (plugin.BACKEND.acquired, plugin.BACKEND.released) == (5, 5)
    assert plugin.BACKEND.leaked() == 0


def test_the_baseline_run_adds_no_gate(plugin: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRAMATIQ_SUITE_WITHOUT_GATE", "1")
    plugin.install_gate()
    assert PerKeyConcurrency.of(StubBroker()) is None
