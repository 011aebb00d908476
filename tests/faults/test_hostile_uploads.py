"""Hostile uploads: reports at and just over the size limit, and 100,000 tiny uploads.

Real Redis and PostgreSQL; the pipeline's steps are called directly
(``tests.support.pipeline``), so the finisher's memory can be measured with
``tracemalloc`` around the one call a worker thread would make.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.coverage import codec, parse_report
from app.db.models import Notification, Upload, UploadState, merged_upload_ids
from app.errors import InvalidUpload
from app.ingest.accept import accept_uploads
from app.queries import uploads_by_state
from tests.support.faults.harness import FULL, record, sized
from tests.support.pipeline import Pipeline, real_services
from tests.support.processes import covworker, service_env
from tests.support.services import fresh_database, redis_test_url, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

#: The upload size limit under test: the production default at full scale.
LIMIT = sized(1 << 20, 100 << 20)
#: Tiny uploads of one commit, and the merge batch (the default ``merge_batch_size``).
TINY = sized(5_000, 100_000)
BATCH = 1000


def lcov_of_size(size: int) -> bytes:
    """A valid LCOV report of exactly ``size`` bytes (long paths keep the model small)."""
    records = []
    used = len(b"TN:\n")
    n = 0
    while True:
        path = f"src/{'deep/' * 300}module_{n:07d}.py"
        body = "".join(f"DA:{i},{i % 3}\n" for i in range(1, 21))
        chunk = f"SF:{path}\n{body}end_of_record\n".encode()
        if used + len(chunk) > size:
            break
        records.append(chunk)
        used += len(chunk)
        n += 1
    raw = b"TN:" + b"t" * (size - used) + b"\n" + b"".join(records)
    assert len(raw) == size
    return raw


@pytest.fixture
def pipeline_at_limit(namespace: str) -> Iterator[Pipeline]:
    require_redis()
    with fresh_database(migrated=True) as url:
        services = real_services(redis_test_url(), url, namespace, max_upload_bytes=LIMIT)
        yield Pipeline(services)
        services.close()


def test_a_report_at_the_size_limit_merges_and_one_byte_over_is_refused_clearly(
    pipeline_at_limit: Pipeline, tmp_path: Path, namespace: str
) -> None:
    at_limit = lcov_of_size(LIMIT)
    accepted = pipeline_at_limit.upload([("at-limit.info", at_limit)])
    (upload_id,) = accepted.upload_ids
    assert pipeline_at_limit.process(upload_id) == UploadState.PROCESSED
    outcome = pipeline_at_limit.finish(accepted.repoid, accepted.commitid)
    assert outcome.merged == [upload_id]

    over = at_limit + b"\n"
    with pytest.raises(InvalidUpload, match=f"{LIMIT + 1} bytes is over the limit of {LIMIT}"):
        pipeline_at_limit.upload([("over.info", over)], sha="b" * 40)

    # The CLI refuses the file before storing anything.
    path = tmp_path / "over.info"
    path.write_bytes(over)
    env = service_env(
        redis_test_url(),
        pipeline_at_limit.services.settings.database_url,
        namespace,
        COVWORKER_MAX_UPLOAD_BYTES=str(LIMIT),
    )
    refused = covworker(
        env, "upload", "--create", "--repo", "acme/web", "--commit", "c" * 40, str(path)
    )
    assert refused.returncode != 0
    assert f"over the limit of {LIMIT} bytes" in refused.stdout + refused.stderr
    with pipeline_at_limit.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Upload)) == 1
    record("size-limit", limit=LIMIT, at_limit="merged", over_limit="refused by CLI and API")


def test_an_oversized_report_that_reached_the_processor_ends_in_error_alone(
    namespace: str,
) -> None:
    """A report stored under a larger limit (settings changed, or written around the
    CLI) is refused by the parser's own byte limit: that upload errs, nothing else."""
    require_redis()
    small = 64 * 1024
    with fresh_database(migrated=True) as url:
        lenient = real_services(redis_test_url(), url, namespace, max_upload_bytes=small + 1)
        strict = real_services(redis_test_url(), url, namespace, max_upload_bytes=small)
        try:
            accepted = accept_uploads(
                lenient,
                "acme/web",
                "d" * 40,
                [("over.info", lcov_of_size(small + 1)), ("fine.info", lcov_of_size(4096))],
            )
            pipeline = Pipeline(strict)
            over, fine = accepted.upload_ids
            assert pipeline.process(over) == UploadState.ERROR
            assert pipeline.process(fine) == UploadState.PROCESSED
            outcome = pipeline.finish(accepted.repoid, accepted.commitid)
            with strict.sessions() as session:
                error = session.scalar(sa.select(Upload.error).where(Upload.id == over))
        finally:
            lenient.close()
            strict.close()
    assert outcome.merged == [fine] and outcome.notified
    assert error is not None and f"over the limit of {small} bytes" in error


def tiny_report(i: int) -> bytes:
    return f"SF:src/pkg/f{i % 50:02d}.py\nDA:{i % 200 + 1},1\nend_of_record\n".encode()


def prepare_processed(pipeline: Pipeline, sha: str, count: int) -> tuple[int, int, list[int]]:
    """``count`` tiny uploads of one commit, stored (``accept_uploads``) and left
    processed as the processor leaves them: intermediate in Redis, state
    ``processed``, id in the processed set. Done in bulk: the subject here is
    the finisher."""
    services, state = pipeline.services, pipeline.services.state
    ids: list[int] = []
    repoid = commitid = 0
    for start in range(0, count, BATCH):
        chunk = range(start, min(start + BATCH, count))
        accepted = accept_uploads(
            services, "acme/tiny", sha, [(f"t{i}.info", tiny_report(i)) for i in chunk]
        )
        repoid, commitid = accepted.repoid, accepted.commitid
        keys = state.keys(repoid, commitid)
        with services.redis.pipeline(transaction=False) as pipe:
            for upload_id, i in zip(accepted.upload_ids, chunk, strict=True):
                blob = codec.dump(parse_report(tiny_report(i)))
                pipe.set(keys.report(upload_id), blob, ex=state.intermediate_ttl_s)
            pipe.srem(keys.processing, *accepted.upload_ids)
            pipe.sadd(keys.processed, *accepted.upload_ids)
            pipe.execute()
        with services.sessions.begin() as session:
            session.execute(
                sa.update(Upload)
                .where(Upload.id.in_(accepted.upload_ids))
                .values(state=UploadState.PROCESSED, report_format="lcov")
            )
        ids += accepted.upload_ids
    return repoid, commitid, ids


def finish_measured(pipeline: Pipeline, repoid: int, commitid: int) -> tuple[int, int]:
    """(merge passes, peak bytes allocated) of one finisher call."""
    tracemalloc.start()
    try:
        outcome = pipeline.finish(repoid, commitid)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome.merge_passes, peak


@pytest.mark.slow
def test_a_hundred_thousand_tiny_uploads_merge_in_batches_with_bounded_memory(
    namespace: str,
) -> None:
    require_redis()
    with fresh_database(migrated=True) as url:
        services = real_services(redis_test_url(), url, namespace, merge_batch_size=BATCH)
        pipeline = Pipeline(services)
        try:
            one_batch = prepare_processed(pipeline, "e" * 40, BATCH)
            many = prepare_processed(pipeline, "f" * 40, TINY)
            batch_passes, batch_peak = finish_measured(pipeline, *one_batch[:2])
            started = time.monotonic()
            passes, peak = finish_measured(pipeline, *many[:2])
            seconds = time.monotonic() - started
            notified = pipeline.notify(*many[:2])
            repoid, commitid, ids = many
            with services.sessions() as session:
                states = uploads_by_state(session, commitid)
                merged_ids = merged_upload_ids(session, commitid)
                notes = session.scalar(
                    sa.select(sa.func.count()).where(Notification.commit_id == commitid)
                )
            left = services.state.counts(repoid, commitid)
        finally:
            services.close()

    record(
        "tiny-uploads",
        uploads=TINY,
        merge_batch_size=BATCH,
        passes=passes,
        peak_mib=round(peak / 2**20, 1),
        one_batch_peak_mib=round(batch_peak / 2**20, 1),
        bytes_per_upload=round((peak - batch_peak) / TINY),
        seconds=round(seconds, 1),
        full_scale=FULL,
    )
    assert states == {UploadState.MERGED: TINY} and left == (0, 0)
    assert sorted(merged_ids) == sorted(ids)  # each once
    assert batch_passes == 1 and passes == math.ceil(TINY / BATCH)
    assert notified.created and notes == 1
    # Bounded: the finisher holds one batch of reports at a time, and a pass
    # appends only its own batch to ``report_uploads``. What still grows with
    # the commit is the finisher's outcome (the ids it merged, for the caller)
    # and the merged report itself: about 110 bytes an upload.
    assert peak < 2 * batch_peak + 256 * TINY, (peak, batch_peak)


#: Uploads in flight when Redis loses its data: more than one ordinary sweep takes.
IN_FLIGHT = sized(12_000, 50_000)


@pytest.mark.slow
def test_redis_loss_recovery_re_drives_every_upload_in_flight_however_many(
    namespace: str,
) -> None:
    """After a loss, one recovery sweep re-drives all of them, in pages, not the
    first ``SWEEP_BATCH`` (10,000) while the rest wait for the age-based sweep."""
    from app.recovery.sweeper import SWEEP_BATCH, sweep

    assert IN_FLIGHT > SWEEP_BATCH
    require_redis()
    with fresh_database(migrated=True) as url:
        services = real_services(redis_test_url(), url, namespace)
        try:
            pipeline = Pipeline(services)
            sent, bulk = pipeline.outbox.processor, pipeline.outbox.bulk

            def run() -> object:
                return sweep(
                    services,
                    send_processor=pipeline.outbox.send_processor,
                    send_finisher=lambda r, c: None,
                    send_notify=lambda r, c: None,
                )

            run()  # the first epoch marker: nothing in flight yet
            tiny = b"SF:a.py\nDA:1,1\nend_of_record\n"
            for start in range(0, IN_FLIGHT, 5_000):
                count = min(5_000, IN_FLIGHT - start)
                pipeline.upload([(f"u{start + i}.info", tiny) for i in range(count)])
            keys = list(services.redis.scan_iter(match=f"{namespace}:*", count=1000))
            services.redis.delete(*keys)  # FLUSHALL, as far as this test's keys go
            lost_at = time.monotonic()
            result = run()
            drained_s = time.monotonic() - lost_at
        finally:
            services.close()
    record(
        "redis-loss-drain", in_flight=IN_FLIGHT, re_driven=len(sent), sweep_s=round(drained_s, 1)
    )
    assert result.redis_lost  # type: ignore[attr-defined]
    assert len(sent) == len(set(sent)) == IN_FLIGHT
    # One commit: its first uploads within its share, the rest on the bulk queue.
    assert len(bulk) == IN_FLIGHT - services.settings.processor_share
