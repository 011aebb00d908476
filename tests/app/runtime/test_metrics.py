"""The pipeline's metrics: counted where they happen, never in the way."""

from __future__ import annotations

import pytest

from app.runtime.metrics import PipelineMetrics
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.timeout(60)


def sample(metrics: PipelineMetrics, name: str, **labels: str) -> float:
    return float(metrics.registry.get_sample_value(name, labels) or 0.0)


def test_a_commit_through_the_pipeline_is_counted_by_format_outcome_and_merge(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(
        [("a.info", b"SF:a.py\nDA:1,1\nend_of_record\n"), ("x.txt", b"hello")]
    )
    for upload_id in accepted.upload_ids:
        pipeline.process(upload_id)
    pipeline.finish(accepted.repoid, accepted.commitid)
    pipeline.notify(accepted.repoid, accepted.commitid)

    m = pipeline.services.metrics
    assert sample(m, "covworker_uploads_processed_total", format="lcov", outcome="processed") == 1
    assert (
        sample(m, "covworker_uploads_processed_total", format="unknown", outcome="unknown_format")
        == 1
    )
    assert sample(m, "covworker_uploads_merged_total") == 1
    assert sample(m, "covworker_merge_pass_uploads_count") == 1
    assert sample(m, "covworker_notify_lag_seconds_count") == 1
    # Series of known labels exist at zero before anything happens to them.
    assert (
        m.registry.get_sample_value(
            "covworker_uploads_processed_total", {"format": "jacoco", "outcome": "malformed"}
        )
        == 0.0
    )


def test_a_failing_metric_never_changes_what_the_pipeline_does(pipeline: Pipeline) -> None:
    class Broken(PipelineMetrics):
        def make(self) -> None:
            raise RuntimeError("metrics backend is broken")

    pipeline.services.metrics = Broken()
    accepted = pipeline.upload([("a.info", b"SF:a.py\nDA:1,1\nend_of_record\n")])
    assert pipeline.process(accepted.upload_ids[0]) == "processed"
    outcome = pipeline.finish(accepted.repoid, accepted.commitid)
    assert outcome.merged == accepted.upload_ids
    assert pipeline.notify(accepted.repoid, accepted.commitid).created


def test_each_actor_is_charged_the_cpu_of_its_own_messages_and_not_their_waits() -> None:
    import time

    import dramatiq
    from dramatiq.brokers.stub import StubBroker

    from app.runtime.metrics import ActorCpu

    metrics = PipelineMetrics()
    broker = StubBroker()
    broker.add_middleware(ActorCpu(metrics))

    @dramatiq.actor(broker=broker)
    def burns() -> None:
        started = time.thread_time()
        while time.thread_time() - started < 0.05:
            pass

    @dramatiq.actor(broker=broker)
    def waits() -> None:
        time.sleep(0.2)

    for _ in range(3):
        burns.send()
        waits.send()
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=50)
    worker.start()
    try:
        broker.join(burns.queue_name)
        worker.join()
    finally:
        worker.stop()
    burned = sample(metrics, "covworker_actor_cpu_seconds_total", actor="burns")
    waited = sample(metrics, "covworker_actor_cpu_seconds_total", actor="waits")
    assert 0.15 <= burned < 1.0
    assert waited < 0.05
