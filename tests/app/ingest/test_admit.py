"""``admit``: an awaiting upload enters processing once, however its payload
arrived, and a failure after the fence leaves it for the sweep."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta

import pytest
import redis
import sqlalchemy as sa

from app.db.models import Commit, Repository, Upload, UploadState, utcnow
from app.ingest.accept import accept_uploads
from app.ingest.admit import (
    InChunks,
    InObject,
    InRow,
    Payload,
    SendProcessor,
    admit,
    send_in_lanes,
)
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload, read_chunks
from app.runtime.services import Services
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.timeout(60)

SHA = "a" * 40
LCOV = b"SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n"


def awaiting_upload(services: Services) -> int:
    """A new upload of ``acme/web`` at ``SHA`` awaiting its payload, as create-upload makes it."""
    with services.sessions.begin() as session:
        repo = session.scalar(sa.select(Repository).where(Repository.name == "acme/web"))
        if repo is None:
            repo = Repository(name="acme/web")
            session.add(repo)
    return add_awaiting_upload(services, repo, SHA, CommitMeta(), UploadMeta(), "")


def row(services: Services, upload_id: int) -> tuple[str, bytes, int, str | None]:
    with services.sessions() as session:
        found = session.get(Upload, upload_id)
        assert found is not None
        return found.state, found.raw, found.raw_size, found.storage_path


def processing(services: Services, repoid: int, commitid: int) -> int:
    """How many of the commit's uploads are in its Redis processing set."""
    return services.state.counts(repoid, commitid)[0]


def test_admitting_an_upload_twice_stores_and_sends_it_once(pipeline: Pipeline) -> None:
    services, sent = pipeline.services, pipeline.outbox.processor
    upload_id = awaiting_upload(services)

    first = admit(services, upload_id, InRow(LCOV), pipeline.outbox.send_processor)
    second = admit(services, upload_id, InRow(b"again"), pipeline.outbox.send_processor)

    assert first is not None and second is None
    assert sent == [upload_id]
    assert row(services, upload_id) == (UploadState.UPLOADED, LCOV, len(LCOV), None)
    assert processing(services, *first) == 1


#: How each way in hands its payload over: the small PUT, the large (spooled)
#: PUT, the object store (a PUT through covworker, or a presigned one found).
PAYLOADS: dict[str, Callable[[], Payload]] = {
    "in its row": lambda: InRow(bytearray(LCOV)),
    "in chunk rows": lambda: InChunks(io.BytesIO(LCOV), 10),
    "in the object store": lambda: InObject("v4/raw/a.txt", len(LCOV)),
}


@pytest.mark.parametrize("way", list(PAYLOADS))
def test_every_way_a_payload_is_stored_admits_the_upload_alike(
    pipeline: Pipeline, way: str
) -> None:
    services = pipeline.services
    upload_id = awaiting_upload(services)
    payload = PAYLOADS[way]()

    admitted = admit(services, upload_id, payload, pipeline.outbox.send_processor)

    assert admitted is not None
    assert pipeline.outbox.processor == [upload_id]
    assert processing(services, *admitted) == 1
    state, raw, size, key = row(services, upload_id)
    assert (state, size) == (UploadState.UPLOADED, len(LCOV))
    with services.sessions() as session:
        chunks = read_chunks(session, upload_id)
    expected = {
        "in its row": (LCOV, b"", None),
        "in chunk rows": (b"", LCOV, None),
        "in the object store": (b"", b"", "v4/raw/a.txt"),
    }
    assert (raw, chunks, key) == expected[way]


@pytest.mark.parametrize("state", [UploadState.PROCESSING, UploadState.MERGED])
def test_an_upload_that_no_longer_awaits_its_payload_is_not_admitted(
    pipeline: Pipeline, state: str
) -> None:
    services = pipeline.services
    upload_id = awaiting_upload(services)
    with services.sessions.begin() as session:
        session.execute(
            sa.update(Upload).where(Upload.id == upload_id).values(state=state, raw=LCOV)
        )

    assert admit(services, upload_id, InRow(b"late"), pipeline.outbox.send_processor) is None
    assert admit(services, 10**9, InRow(b"nobody's"), pipeline.outbox.send_processor) is None

    assert pipeline.outbox.processor == []
    assert row(services, upload_id)[:2] == (state, LCOV)
    with services.sessions() as session:
        repoid, commitid = session.execute(
            sa.select(Commit.repository_id, Commit.id).join(Upload).where(Upload.id == upload_id)
        ).one()
    assert processing(services, repoid, commitid) == 0


def _redis_gone(*args: object) -> None:
    raise redis.exceptions.ConnectionError("Connection refused")


@pytest.mark.parametrize("failing", ["the processing set", "the sender"])
def test_a_failure_after_the_fence_leaves_the_upload_for_the_sweep_never_admitted_twice(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    services = pipeline.services
    upload_id = awaiting_upload(services)
    send: SendProcessor = _redis_gone
    with monkeypatch.context() as patched:
        if failing == "the processing set":
            patched.setattr(services.state, "mark_processing", _redis_gone)
            send = pipeline.outbox.send_processor
        with pytest.raises(redis.exceptions.ConnectionError):
            admit(services, upload_id, InRow(LCOV), send)

    # Past the fence: stored and counted, so no second admission sends it...
    assert row(services, upload_id)[:2] == (UploadState.UPLOADED, LCOV)
    assert admit(services, upload_id, InRow(LCOV), pipeline.outbox.send_processor) is None
    assert pipeline.outbox.processor == []
    # ...and the sweep, seeing it stuck in ``uploaded``, sends it on.
    later = utcnow() + timedelta(seconds=services.settings.sweep_after_s + 60)
    result = pipeline.sweep(now=later)
    assert result.reprocessed == [upload_id]
    assert pipeline.outbox.processor == [upload_id]
    assert pipeline.process(upload_id) == UploadState.PROCESSED


def test_a_commits_uploads_beyond_its_share_go_to_the_bulk_queue_until_its_own_are_parsed(
    pipeline: Pipeline,
) -> None:
    services, outbox = pipeline.services, pipeline.outbox
    share = services.settings.processor_share
    matrix = [(f"job{i}.info", LCOV) for i in range(share + 3)]

    big = accept_uploads(services, "acme/big", SHA, matrix, send_processor=outbox.send_processor)
    small = accept_uploads(
        services, "acme/small", SHA, matrix[:2], send_processor=outbox.send_processor
    )

    assert share == 8  # COVWORKER_PROCESSOR_SHARE's default
    assert outbox.processor == [*big.upload_ids, *small.upload_ids]
    # The matrix's first eight on the shared queue, the rest on the bulk queue;
    # the other commit's within its own share.
    assert outbox.bulk == big.upload_ids[share:]
    for upload_id in big.upload_ids:
        pipeline.process(upload_id)
    again = accept_uploads(
        services, "acme/big", SHA, matrix[:1], send_processor=outbox.send_processor
    )
    assert outbox.processor[-1] == again.upload_ids[0]
    assert outbox.bulk == big.upload_ids[share:]  # parsed: the commit's next is shared again


@pytest.mark.unit
def test_a_batch_that_crosses_the_share_is_split_there_and_a_share_of_0_is_one_queue() -> None:
    sent: list[tuple[int, bool]] = []

    def send(upload_id: int, /, *, bulk: bool = False) -> None:
        sent.append((upload_id, bulk))

    # Six processing before these four: the 7th and 8th are within a share of 8.
    send_in_lanes(send, [1, 2, 3, 4], 10, 8)
    assert sent == [(1, False), (2, False), (3, True), (4, True)]
    sent.clear()
    send_in_lanes(send, [5, 6], 500, 0)
    assert sent == [(5, False), (6, False)]
