"""The connections and tunables every part of the pipeline needs, built once.

An entry point (worker module, CLI command, embedded run) builds one
``Services`` from its ``Settings`` and passes it down.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import sqlalchemy as sa
from redis import Redis
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.coverage import ParseLimits
from app.db.engine import make_engine, make_sessionmaker
from app.db.models import Instance
from app.errors import ConfigurationError
from app.providers import Providers
from app.runtime.kept_report import KeptReport
from app.runtime.metrics import PipelineMetrics
from app.runtime.parse_budget import ParseBudget
from app.runtime.state import ProcessingState
from app.settings import Settings
from app.storage import PayloadStore, build_store


def instance_id(sessions: sessionmaker[Session]) -> str:
    """The id of the database, created with its schema (``covworker db upgrade``)."""
    with sessions() as session:
        found = session.scalar(sa.select(Instance.id).order_by(Instance.created_at).limit(1))
    if not found:
        raise ConfigurationError(
            "the database has no instance id: run `covworker db upgrade` to migrate it"
        )
    return found


def _redis_client(settings: Settings) -> Redis:
    """``REDIS_URL``'s client: a Redis Cluster one (app/runtime/cluster.py) if it names a cluster.

    A ``RedisCluster`` answers the commands covworker sends as a ``Redis`` does
    (each multi-key one within a hash slot), so it is typed as one here.
    """
    if settings.redis_cluster:
        from app.runtime.cluster import cluster_client

        return cluster_client(settings.redis_url)  # type: ignore[return-value]
    return Redis.from_url(settings.redis_url)


@dataclass
class Services:
    settings: Settings
    redis: Redis
    engine: Engine
    sessions: sessionmaker[Session]
    state: ProcessingState
    limits: ParseLimits
    #: The pipeline's Prometheus metrics (app/runtime/metrics.py).
    metrics: PipelineMetrics = field(default_factory=PipelineMetrics)
    #: The Git providers with credentials (pull-request feedback; none: off).
    providers: Providers = field(default_factory=Providers.none)
    #: Where payloads go when not in the database (``COVWORKER_STORAGE=s3``); None: the database.
    payload_store: PayloadStore | None = None
    #: Bytes and uploads this process parses at once (COVWORKER_PARSE_BUDGET_MB,
    #: COVWORKER_PARSES_AT_ONCE).
    parse_budget: ParseBudget = field(default_factory=lambda: ParseBudget(0))
    #: The merged report this process's finishers wrote last, decoded.
    kept_report: KeptReport = field(default_factory=KeptReport)

    @classmethod
    def from_settings(cls, settings: Settings, *, redis_client: Redis | None = None) -> Services:
        client = redis_client or _redis_client(settings)
        engine = make_engine(settings.database_url)
        sessions = make_sessionmaker(engine)
        return cls(
            settings=settings,
            redis=client,
            engine=engine,
            sessions=sessions,
            state=ProcessingState(
                client,
                namespace=settings.namespace,
                instance=functools.partial(instance_id, sessions),
                intermediate_ttl_s=settings.intermediate_ttl_s,
                lock_timeout_s=settings.finisher_lock_timeout_s,
                min_batch=settings.finisher_min_batch,
            ),
            limits=ParseLimits(max_bytes=settings.max_upload_bytes),
            providers=Providers.from_settings(settings, redis=client),
            payload_store=build_store(settings),
            parse_budget=ParseBudget(
                settings.parse_budget_mb * 1_000_000, parses=settings.parses_at_once
            ),
        )

    def close(self) -> None:
        self.providers.close()
        self.engine.dispose()
        self.redis.close()
