"""What a bench worker process is told, and how ``--time-scale`` shrinks time.

The driver passes the strategy and its tunables to ``dramatiq
benchmarks.stampede.worker`` through the environment; the worker reads them once at
start-up into :class:`BenchWorkerSettings`, next to the app's own
``Settings`` (which take the scaled ``COVWORKER_*`` values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.settings import Settings

Strategy = Literal[
    "lock-wait",
    "counter-gate",
    "rate-limiter",
    "covworker",
    "covworker-no-debounce",
    "covworker-one-queue",
]
#: Every strategy ``--strategy`` accepts; on request: ``covworker-no-debounce``
#: is covworker with ``COVWORKER_FINISHER_DEBOUNCE_MS=0`` (each finisher at
#: once), ``covworker-one-queue`` covworker with every finisher and notify on
#: the shared queue (``COVWORKER_FINISHER_QUEUE_NAME=COVWORKER_QUEUE_NAME``).
CHOICES: tuple[str, ...] = get_args(Strategy)
#: The strategies run by default.
STRATEGIES: tuple[str, ...] = CHOICES[:4]
SCENARIOS = ("burst", "trickle", "fleet", "monorepo", "backlog")
#: How ``monorepo`` uploads arrive: all at once, evenly over the spread, or in 4 waves.
ARRIVALS = ("burst", "trickle", "waves")
#: ``waves``: the number of waves the uploads arrive in.
WAVES = 4

#: Seconds a ``lock-wait`` finisher blocks on the commit lock (Codecov's default).
DEFAULT_LOCK_WAIT_S = 30.0
#: Seconds the ``counter-gate`` counter lives after its last INCR.
DEFAULT_COUNTER_TTL_S = 60.0
#: Dramatiq's idle poll ceiling of a consumer (``dramatiq_worker_timeout``), ms.
DRAMATIQ_POLL_MS = 1000
#: Shortest scaled duration, ms: a zero would mean "default" to some knobs.
MIN_SCALED_MS = 5


class BenchWorkerSettings(BaseSettings):
    """The bench-only part of a worker's configuration (``COVWORKER_BENCH_*``)."""

    model_config = SettingsConfigDict(env_prefix="COVWORKER_BENCH_", extra="ignore")

    strategy: Strategy = "covworker"
    #: Blocking timeout of the ``lock-wait`` and whole-set finishers' lock, seconds (scaled).
    lock_wait_s: float = Field(DEFAULT_LOCK_WAIT_S, gt=0)
    #: Finishers admitted per commit by ``counter-gate`` and ``rate-limiter``.
    limit: int = Field(3, gt=0)
    #: TTL of the ``counter-gate`` counter and the rate limiter's slots, seconds (scaled).
    counter_ttl_s: float = Field(DEFAULT_COUNTER_TTL_S, gt=0)


@dataclass(frozen=True)
class BenchKnobs:
    """The run's tunables, unscaled, as the command line gave them."""

    strategy: str
    time_scale: float
    limit: int
    max_retries: int
    lock_wait_s: float = DEFAULT_LOCK_WAIT_S
    counter_ttl_s: float = DEFAULT_COUNTER_TTL_S

    def ms(self, unscaled_ms: float) -> int:
        return max(MIN_SCALED_MS, round(unscaled_ms * self.time_scale))

    def worker_env(self, configured: Settings) -> dict[str, str]:
        """Environment of the worker processes: every timeout and countdown scaled."""
        return {
            "COVWORKER_BENCH_STRATEGY": self.strategy,
            "COVWORKER_BENCH_LOCK_WAIT_S": str(self.ms(self.lock_wait_s * 1000) / 1000),
            "COVWORKER_BENCH_LIMIT": str(self.limit),
            "COVWORKER_BENCH_COUNTER_TTL_S": str(self.ms(self.counter_ttl_s * 1000) / 1000),
            "COVWORKER_FINISHER_CONCURRENCY": str(self.limit),
            "COVWORKER_FINISHER_DEBOUNCE_MS": str(
                0 if self.strategy == "covworker-no-debounce" else configured.finisher_debounce_ms
            ),
            "COVWORKER_FINISHER_QUEUE_NAME": configured.queue_name
            if self.strategy == "covworker-one-queue"
            else configured.finisher_queue_name,
            "COVWORKER_MAX_RETRIES": str(self.max_retries),
            "COVWORKER_MIN_BACKOFF_MS": str(self.ms(configured.min_backoff_ms)),
            "COVWORKER_MAX_BACKOFF_MS": str(self.ms(configured.max_backoff_ms)),
            "COVWORKER_GATE_DELAY_MS": str(self.ms(configured.gate_delay_ms)),
            "COVWORKER_GATE_JITTER_MS": str(self.ms(configured.gate_jitter_ms)),
            "COVWORKER_GATE_LEASE_MS": str(self.ms(configured.gate_lease_ms)),
            "COVWORKER_FINISHER_LOCK_TIMEOUT_S": str(
                self.ms(configured.finisher_lock_timeout_s * 1000) / 1000
            ),
            "dramatiq_worker_timeout": str(self.ms(DRAMATIQ_POLL_MS)),
        }
