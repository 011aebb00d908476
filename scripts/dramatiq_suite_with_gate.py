"""Run the pinned Dramatiq's own test suite with the gate in every broker and on every actor.

    .venv/bin/python scripts/dramatiq_suite_with_gate.py [--workdir DIR] [pytest arguments]

The gate must be invisible to Dramatiq's behaviour: every test of Dramatiq
should pass with it. This script:

1. downloads the sdist of the installed Dramatiq with pip and takes its
   ``tests/`` (the sdist ships the test modules, not their fixtures);
2. writes fixtures of its own for them (``conftest.py`` and ``common.py``
   import them from this file): brokers, workers, result and rate-limiter
   backends, the CLI, all on 127.0.0.1 as the suite expects;
3. adds ``PerKeyConcurrency`` (a ``StubBackend``, ``concurrency_limit``
   10,000, hour-long leases so that no leaked slot expires unseen) to every
   ``StubBroker``, ``RedisBroker`` and ``RabbitmqBroker`` made in the run,
   the CLI's worker processes included, and gives every actor a
   ``concurrency_key`` (its name): each message takes and gives back a slot;
4. runs pytest in a network namespace of its own (``unshare -n``, as root)
   with a private redis-server and RabbitMQ on their default ports: the
   suite connects to 127.0.0.1:6379 and :5672 and flushes what it finds there,
   which must not be the machine's shared servers;
5. prints pytest's counts, then ``slots: N acquired, N released, N leaked``
   (holders still in the backend when the session ends).

``--without-gate`` is the same run without the gate, to tell the gate's
failures from the environment's. Two tests of the suite watch source files
and need ``pip install 'dramatiq[watch]'`` (watchdog), which the project
does not install.

docs/gate.md ("Dramatiq's own suite") has the last result.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INSIDE = "DRAMATIQ_SUITE_NAMESPACE"  # set once the script runs in its own network namespace
STATS = "DRAMATIQ_SUITE_STATS"  # where the session writes its slot counts
WITHOUT_GATE = "DRAMATIQ_SUITE_WITHOUT_GATE"  # "1": the baseline run

# -- run by the script --------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="keep the suite and logs here")
    parser.add_argument(
        "--without-gate", action="store_true", help="the baseline: the same run, no gate"
    )
    args, pytest_args = parser.parse_known_args()
    if os.environ.get(INSIDE) != "1":  # fetch here, then run in the namespace (no network)
        if shutil.which("unshare") is None or os.geteuid() != 0:
            sys.exit("needs root and unshare: the suite's servers live in a network namespace")
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="dramatiq-suite-"))
        workdir.mkdir(parents=True, exist_ok=True)
        fetch_suite(workdir)
        command = ["unshare", "--net", sys.executable, __file__, "--workdir", str(workdir)]
        env = {**os.environ, INSIDE: "1", WITHOUT_GATE: "1" if args.without_gate else "0"}
        return subprocess.run([*command, *pytest_args], env=env).returncode
    workdir = args.workdir
    suite = workdir / "suite"
    print("baseline: no gate" if os.environ.get(WITHOUT_GATE) == "1" else "the gate on")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with redis_server(workdir), rabbitmq_server(workdir):
        stats = workdir / "slots.json"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "scripts"), str(ROOT)]),
            STATS: str(stats),
        }
        command = [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider"]
        command += ["-o", "addopts=", "-q", "-rfE", *pytest_args]
        code = subprocess.run(command, cwd=suite, env=env).returncode
    if stats.exists():
        slots = json.loads(stats.read_text())
        print(
            f"slots: {slots['acquired']} acquired, {slots['released']} released, "
            f"{slots['leaked']} leaked"
        )
    return code


def fetch_suite(workdir: Path) -> Path:
    """The installed Dramatiq's tests/, from its sdist, with this script's fixtures."""
    import dramatiq

    version = dramatiq.__version__
    download = workdir / "sdist"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    subprocess.run(
        [*pip, "--no-binary", ":all:", "-d", str(download), f"dramatiq=={version}"], check=True
    )
    (archive,) = download.glob(f"dramatiq-{version}.tar.gz")
    suite = workdir / "suite"
    shutil.rmtree(suite, ignore_errors=True)
    with tarfile.open(archive) as tar:
        prefix = f"dramatiq-{version}/tests/"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
        for member in members:
            member.name = "tests/" + member.name[len(prefix) :]
        tar.extractall(suite, members=members, filter="data")
    tests = suite / "tests"
    here = Path(__file__).stem
    (tests / "__init__.py").write_text(f"from {here} import install_gate\n\ninstall_gate()\n")
    (tests / "conftest.py").write_text(f"from {here} import *  # noqa: F403 (fixtures)\n")
    (tests / "common.py").write_text(f"from {here} import *  # noqa: F403\n")
    return suite


def wait_for_port(port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


class redis_server:  # noqa: N801 (a context manager named for what it holds)
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def __enter__(self) -> None:
        command = ["redis-server", "--port", "6379", "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.workdir)]
        log = (self.workdir / "redis.log").open("w")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        if not wait_for_port(6379, 20):
            sys.exit("the private redis-server did not start")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(20)


class rabbitmq_server:  # noqa: N801
    """RabbitMQ of its own in the namespace, if installed; its tests skip otherwise."""

    def __init__(self, workdir: Path) -> None:
        self.base = workdir / "rabbitmq"

    def __enter__(self) -> None:
        self.started = False
        if shutil.which("rabbitmq-server") is None:
            print("rabbitmq-server not installed: the suite's RabbitMQ tests skip")
            return
        shutil.rmtree(self.base, ignore_errors=True)
        (self.base / "log").mkdir(parents=True)
        (self.base / "plugins").write_text("[].\n")
        shutil.chown(self.base, "rabbitmq") if _user_exists("rabbitmq") else None
        for path in self.base.rglob("*"):
            shutil.chown(path, "rabbitmq") if _user_exists("rabbitmq") else None
        self.env = {
            **os.environ,
            "RABBITMQ_NODENAME": "rabbit@localhost",
            "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.base / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "plugins"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(self.base / "feature_flags"),
            "RABBITMQ_PID_FILE": str(self.base / "pid"),
            "RABBITMQ_CONFIG_FILE": str(self.base / "none"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.base / "none-advanced.config"),
        }
        log = (self.base / "server.out").open("w")
        self.process = subprocess.Popen(
            ["rabbitmq-server"], env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        self.started = wait_for_port(5672, 90)
        if not self.started:
            print(f"RabbitMQ did not start ({self.base}/server.out): its tests skip")

    def __exit__(self, *exc: object) -> None:
        if shutil.which("rabbitmq-server") is None:
            return
        subprocess.run(
            ["rabbitmqctl", "-n", "rabbit@localhost", "stop"],
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        self.process.wait(60)
        # The Erlang port mapper it started outlives it: this namespace's only one.
        subprocess.run(["epmd", "-kill"], capture_output=True, timeout=30)


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


# -- imported by the suite (tests/__init__.py, conftest.py, common.py) ----------

import dramatiq  # noqa: E402
import pytest  # noqa: E402
from dramatiq import Worker  # noqa: E402
from dramatiq.brokers.rabbitmq import RabbitmqBroker  # noqa: E402
from dramatiq.brokers.redis import RedisBroker  # noqa: E402
from dramatiq.brokers.stub import StubBroker  # noqa: E402

from middleware import PerKeyConcurrency, StubBackend  # noqa: E402
from middleware.gate.backends import ACQUIRED, Decision  # noqa: E402
from middleware.gate.backends.base import HOLDER, Ask  # noqa: E402


class CountingBackend(StubBackend):
    """The gate's ``StubBackend``, counting slots taken and given back."""

    def __init__(self) -> None:
        super().__init__()
        self.acquired = 0
        self.released = 0

    def _decide(self, key: str, token: str, ask: Ask) -> Decision:
        decision = super()._decide(key, token, ask)
        if decision.decision == ACQUIRED:
            self.acquired += 1
        return decision

    def release(self, key: str, member: str) -> bool:
        removed = super().release(key, member)
        if removed and member.startswith(HOLDER):
            self.released += 1
        return removed

    def leaked(self) -> int:
        return sum(len(self.holders(key)) for key in self.keys())


BACKEND = CountingBackend()


class EveryActorGated(PerKeyConcurrency):
    """The gate, keying every actor that names no key of its own by its name."""

    def before_declare_actor(self, broker: dramatiq.Broker, actor: Any) -> None:
        name = actor.actor_name
        actor.options.setdefault("concurrency_key", lambda *args, **kwargs: name)
        super().before_declare_actor(broker, actor)


def install_gate() -> None:
    """Every broker of the suite, once made, gets the gate (limit 10,000, hour-long leases)."""
    if os.environ.get(WITHOUT_GATE) == "1":
        return
    for broker_class in (StubBroker, RedisBroker, RabbitmqBroker):
        original = broker_class.__init__

        def gated_init(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            _original(self, *args, **kwargs)
            if PerKeyConcurrency.of(self) is None:
                gate = EveryActorGated(
                    backend=BACKEND, concurrency_limit=10_000, concurrency_lease_ms=3_600_000
                )
                self.add_middleware(gate)

        broker_class.__init__ = gated_init  # type: ignore[method-assign]


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get(STATS)
    if path:
        counts = {
            "acquired": BACKEND.acquired,
            "released": BACKEND.released,
            "leaked": BACKEND.leaked(),
        }
        Path(path).write_text(json.dumps(counts))


RABBITMQ_USERNAME = "guest"
RABBITMQ_PASSWORD = "guest"


def _rabbitmq_credentials() -> Any:
    import pika

    return pika.credentials.PlainCredentials(RABBITMQ_USERNAME, RABBITMQ_PASSWORD)


RABBITMQ_CREDENTIALS = _rabbitmq_credentials()


def _rabbitmq_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=1).close()
        return True
    except OSError:
        return False


skip_unless_rabbit_mq = pytest.mark.skipif(not _rabbitmq_up(), reason="no RabbitMQ")
skip_in_ci = pytest.mark.skipif(False, reason="")
skip_on_windows = pytest.mark.skipif(sys.platform == "win32", reason="POSIX only")
skip_on_pypy = pytest.mark.skipif(sys.implementation.name == "pypy", reason="CPython only")


class worker:  # noqa: N801 (the suite's name for it)
    """A started Worker, stopped on exit: ``with worker(broker, worker_timeout=100): ...``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.worker = Worker(*args, **kwargs)

    def __enter__(self) -> Worker:
        self.worker.start()
        return self.worker

    def __exit__(self, *exc: object) -> None:
        self.worker.stop()


def _booted(broker: dramatiq.Broker) -> dramatiq.Broker:
    broker.emit_after("process_boot")
    dramatiq.set_broker(broker)
    return broker


@pytest.fixture
def stub_broker() -> Iterator[StubBroker]:
    broker = _booted(StubBroker())
    yield broker  # type: ignore[misc]
    broker.flush_all()
    broker.close()


@pytest.fixture
def redis_broker() -> Iterator[RedisBroker]:
    broker = RedisBroker()
    broker.client.flushall()  # the namespace's private server
    yield _booted(broker)  # type: ignore[misc]
    broker.client.flushall()
    broker.close()


@pytest.fixture
def rabbitmq_broker() -> Iterator[RabbitmqBroker]:
    if not _rabbitmq_up():
        pytest.skip("no RabbitMQ")
    broker = RabbitmqBroker(host="127.0.0.1", max_priority=10, credentials=RABBITMQ_CREDENTIALS)
    yield _booted(broker)  # type: ignore[misc]
    broker.flush_all()
    broker.close()


def _worker_on(broker: dramatiq.Broker) -> Iterator[Worker]:
    started = Worker(broker, worker_timeout=100, worker_threads=32)
    started.start()
    yield started
    started.stop()


@pytest.fixture
def stub_worker(stub_broker: StubBroker) -> Iterator[Worker]:
    yield from _worker_on(stub_broker)


@pytest.fixture
def redis_worker(redis_broker: RedisBroker) -> Iterator[Worker]:
    yield from _worker_on(redis_broker)


@pytest.fixture
def rabbitmq_worker(rabbitmq_broker: RabbitmqBroker) -> Iterator[Worker]:
    yield from _worker_on(rabbitmq_broker)


@pytest.fixture(params=["redis", "stub"])
def result_backend(request: pytest.FixtureRequest) -> Any:
    from dramatiq.results.backends import RedisBackend as Redis
    from dramatiq.results.backends import StubBackend as Stub

    if request.param == "stub":
        return Stub()
    backend = Redis()
    backend.client.flushall()
    return backend


@pytest.fixture
def redis_result_backend() -> Any:
    from dramatiq.results.backends import RedisBackend as Redis

    backend = Redis()
    backend.client.flushall()
    return backend


@pytest.fixture(params=["redis", "stub"])
def rate_limiter_backend(request: pytest.FixtureRequest) -> Any:
    from dramatiq.rate_limits.backends import RedisBackend as Redis
    from dramatiq.rate_limits.backends import StubBackend as Stub

    if request.param == "stub":
        return Stub()
    backend = Redis()
    backend.client.flushall()
    return backend


@pytest.fixture
def start_cli() -> Iterator[Any]:
    """Start ``dramatiq BROKER`` from the suite's folder; every process ended afterwards."""
    started: list[subprocess.Popen[Any]] = []

    def start(broker_module: str, *, extra_args: list[str] | None = None, **kwargs: Any) -> Any:
        # The console script, not ``python -m dramatiq``: on SIGHUP the CLI re-executes
        # itself, and its ``-m`` form re-executes a bare "python" found on PATH.
        dramatiq_cli = str(Path(sys.executable).parent / "dramatiq")
        command = [dramatiq_cli, broker_module, *(extra_args or [])]
        process = subprocess.Popen(command, **kwargs)
        started.append(process)
        time.sleep(2)  # the CLI boots its worker processes
        return process

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


if __name__ == "__main__":
    sys.exit(main())
