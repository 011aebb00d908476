"""The whole pipeline on a Redis Cluster with RabbitMQ: real CLI uploads, real workers.

The second test kills a primary mid-run (SIGKILL; its replica is promoted
after the cluster's node timeout) while uploads keep coming: the uploads
ride through, nothing is lost or merged twice, and every commit settles
within 30 s of the promotion.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.runtime.services import Services
from app.web.ops import ops_state
from tests.support.brokers import pipeline_settled, settings_of, settle
from tests.support.faults.tally import assert_merged_once
from tests.support.processes import covworker, dramatiq_workers, service_env
from tests.support.rabbitmq import delete_covworker_queues, require_rabbitmq
from tests.support.redis_cluster import RedisClusterNodes, redis_cluster, wait_until
from tests.support.services import fresh_database
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

FILES, LINES = 4, 20
#: Settling after a failover: the bound the pipeline promises.
SETTLE_AFTER_FAILOVER_S = 30


def commits(count: int, uploads: int, tag: str) -> list[tuple[str, str, int, int]]:
    return [(f"cluster/{tag}-{i:02d}", f"{i + 1:02x}" * 20, 100 * i, uploads) for i in range(count)]


@pytest.fixture
def cluster_env(namespace: str) -> Iterator[dict[str, str]]:
    url = require_rabbitmq()
    try:
        yield {
            "COVWORKER_BROKER_URL": url,
            "COVWORKER_QUEUE_NAME": namespace,
            "COVWORKER_REDIS_CLUSTER": "true",
            "COVWORKER_REDIS_LOSS_CHECK_S": "1",
        }
    finally:
        delete_covworker_queues(namespace)


def upload(env: dict[str, str], tmp: Path, repo: str, sha: str, first: int, n: int) -> None:
    folder = tmp / f"{repo.replace('/', '_')}"
    folder.mkdir()
    paths = []
    for name, data in ci_matrix(n, FILES, LINES, first_job=first):
        (folder / name).write_bytes(data)
        paths.append(str(folder / name))
    done = covworker(env, "upload", "--create", "--repo", repo, "--commit", sha, *paths)
    assert done.returncode == 0, done.stdout + done.stderr


def assert_merged_once_and_notified(db_url: str, plan: list[tuple[str, str, int, int]]) -> None:
    notified = assert_merged_once(db_url, plan, FILES, LINES)
    assert all(n >= 1 for n in notified.values()), f"notifications: {notified}"


def test_the_pipeline_merges_every_upload_once_on_a_cluster(
    cluster: RedisClusterNodes, cluster_env: dict[str, str], tmp_path: Path, namespace: str
) -> None:
    plan = commits(6, 12, "steady")
    with fresh_database(migrated=True) as db_url:
        env = service_env(cluster.url, db_url, namespace, **cluster_env)
        with dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=4):
            for repo, sha, first, n in plan:
                upload(env, tmp_path, repo, sha, first, n)
            settle(env, timeout_s=180)
            services = Services.from_settings(
                settings_of(env).model_copy(update={"redis_cluster": True})
            )
            ops = ops_state(services)
            services.close()
        assert_merged_once_and_notified(db_url, plan)
        # /-/ops on RabbitMQ and the cluster: the queues drained, the gate's keys read
        assert (ops["broker"]["ready"], ops["broker"]["dead"]) == (0, 0)
        assert ops["broker"]["workers"] == 2  # two worker processes consume the queue
        assert all(key["holders"] == [] for key in ops["gate"]), ops["gate"]
    log = (tmp_path / "worker.log").read_text()
    assert " ERROR " not in log and "CRITICAL" not in log, log[-5000:]


def test_a_primary_killed_mid_run_loses_nothing_and_the_commits_settle_within_30_s(
    cluster_env: dict[str, str], tmp_path: Path, namespace: str
) -> None:
    before, after = commits(4, 12, "before"), commits(4, 12, "after")
    after = [(repo, sha[::-1], first + 5000, n) for repo, sha, first, n in after]
    with redis_cluster() as nodes, fresh_database(migrated=True) as db_url:
        env = service_env(nodes.url, db_url, namespace, **cluster_env)
        with dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=4):
            for repo, sha, first, n in before:
                upload(env, tmp_path, repo, sha, first, n)
            # Not the seed node of REDIS_URL: a new process must reach one (in a
            # deployment the seed is a name that resolves to every node).
            victim = next(p for p in nodes.primaries() if p != nodes.ports[0])
            replica = nodes.replica_of(victim)
            nodes.kill(victim)  # mid-run: the first commits are being processed
            for repo, sha, first, n in after:  # uploads keep coming through the failover
                upload(env, tmp_path, repo, sha, first, n)
            wait_until(lambda: nodes.role(replica) == "master", 30, "the replica promoted")
            promoted = time.monotonic()
            wait_until(lambda: pipeline_settled(db_url), 120, "the pipeline settled")
            settled_s = time.monotonic() - promoted
        assert_merged_once_and_notified(db_url, before + after)
    print(f"\nFIGURES failover settled {settled_s:.1f} s after the promotion")
    assert settled_s <= SETTLE_AFTER_FAILOVER_S
    log = (tmp_path / "worker.log").read_text()
    assert "CRITICAL" not in log, log[-5000:]
    assert "Redis Cluster: the shard of slot" in log, "the failover was noticed and re-driven"
