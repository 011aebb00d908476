"""upload_processor: parse, keep the intermediate in Redis, hand over to the finisher."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.coverage import codec
from app.db.models import Upload, UploadChunk, UploadState
from app.errors import UnknownEntity
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(60)

ENTITY_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<coverage><packages><package name="&lol4;"><classes/></package></packages></coverage>
"""

BAD_INPUTS = {
    "empty file": b"",
    "not a coverage report": b"Lorem ipsum dolor sit amet\n",
    "truncated XML": ci_matrix(2, files=1, lines=5)[1][1][:120],
    "entity-expansion bomb": ENTITY_BOMB,
}


def upload_row(pipeline: Pipeline, upload_id: int) -> Upload:
    with pipeline.services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None
        return row


def test_a_parsed_upload_is_processed_with_its_intermediate_in_redis(pipeline: Pipeline) -> None:
    accepted = pipeline.upload(ci_matrix(1, files=2, lines=10))
    upload_id = accepted.upload_ids[0]

    assert pipeline.process(upload_id) == UploadState.PROCESSED

    state = pipeline.services.state
    row = upload_row(pipeline, upload_id)
    assert row.state == UploadState.PROCESSED and row.report_format == "lcov"
    assert state.counts(accepted.repoid, accepted.commitid) == (0, 1)
    blob = state.load_intermediates(accepted.repoid, accepted.commitid, [upload_id])[0]
    assert blob is not None and codec.load(blob).totals().lines == 20
    assert pipeline.outbox.finisher == [(accepted.repoid, accepted.commitid)]


def test_a_payload_stored_in_chunks_is_parsed_as_the_same_payload_stored_whole(
    pipeline: Pipeline,
) -> None:
    ((name, payload),) = ci_matrix(1, files=30, lines=40)
    whole = pipeline.upload([(name, payload)]).upload_ids[0]
    accepted = pipeline.upload([(name, payload)], sha="b" * 40)
    chunked = accepted.upload_ids[0]
    with pipeline.services.sessions.begin() as session:  # as a large PUT stores it
        session.execute(sa.update(Upload).where(Upload.id == chunked).values(raw=b""))
        session.add_all(
            UploadChunk(upload_id=chunked, seq=seq, data=payload[at : at + 1000])
            for seq, at in enumerate(range(0, len(payload), 1000))
        )

    assert pipeline.process(whole) == pipeline.process(chunked) == UploadState.PROCESSED

    state = pipeline.services.state
    [of_whole] = state.load_intermediates(
        accepted.repoid, upload_row(pipeline, whole).commit_id, [whole]
    )
    [of_chunks] = state.load_intermediates(accepted.repoid, accepted.commitid, [chunked])
    assert len(payload) > 10 * 1000  # read back from more than ten chunks, in order
    assert of_whole is not None and of_chunks is not None
    assert codec.load(of_chunks).files == codec.load(of_whole).files
    assert codec.load(of_chunks).totals().lines == 30 * 40


def test_only_the_commits_last_upload_in_flight_sends_its_finisher_ahead(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(4, files=2, lines=10))  # all 4 processing from accept
    other = pipeline.upload(ci_matrix(1, files=2, lines=10), sha="b" * 40)
    commit = (accepted.repoid, accepted.commitid)
    first, second, third, last = accepted.upload_ids

    for upload_id in (first, second, third):
        assert pipeline.process_routed(upload_id) == UploadState.PROCESSED
    assert pipeline.outbox.finisher == [commit] * 3 and pipeline.outbox.finisher_ahead == []

    # The other commit's only upload is its last in flight; it does not count for this one.
    pipeline.process_routed(other.upload_ids[0])
    assert pipeline.outbox.finisher_ahead == [(other.repoid, other.commitid)]

    assert pipeline.process_routed(last) == UploadState.PROCESSED
    assert pipeline.outbox.finisher == [commit] * 3
    assert pipeline.outbox.finisher_ahead[-1] == commit
    assert pipeline.services.state.counts(*commit) == (0, 4)


def test_a_last_upload_that_fails_to_parse_still_sends_the_finisher_ahead(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload([*ci_matrix(1, files=2, lines=10), ("bad.lcov", b"not coverage")])
    good, bad = accepted.upload_ids
    commit = (accepted.repoid, accepted.commitid)

    pipeline.process_routed(good)
    assert pipeline.process_routed(bad) == UploadState.ERROR

    assert pipeline.outbox.finisher == [commit] and pipeline.outbox.finisher_ahead == [commit]
    assert pipeline.services.state.counts(*commit) == (0, 1)


def test_the_counts_come_back_from_the_same_transaction_that_moves_the_upload(
    pipeline: Pipeline,
) -> None:
    state = pipeline.services.state
    state.mark_processing(1, 2, [10, 11, 12])

    assert state.mark_processed(1, 2, 10) == 2
    assert state.drop_processing(1, 2, 11) == 1
    assert state.mark_processed(1, 2, 12) == 0
    assert state.mark_processed(1, 2, 12) == 0  # again (a duplicate delivery): still 0
    assert state.drop_processing(1, 2, 99) == 0  # in neither set
    assert state.counts(1, 2) == (0, 2)


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_fails_that_upload_only_with_a_readable_reason(
    pipeline: Pipeline, kind: str
) -> None:
    good = ci_matrix(2, files=2, lines=10)
    accepted = pipeline.upload([*good, ("bad", BAD_INPUTS[kind])])
    *good_ids, bad_id = accepted.upload_ids

    results = [pipeline.process(u) for u in accepted.upload_ids]
    pipeline.finish(accepted.repoid, accepted.commitid)

    assert results == [UploadState.PROCESSED, UploadState.PROCESSED, UploadState.ERROR]
    bad = upload_row(pipeline, bad_id)
    assert bad.state == UploadState.ERROR and bad.error and len(bad.error) > 10
    assert all(upload_row(pipeline, u).state == UploadState.MERGED for u in good_ids)
    assert pipeline.outbox.notify  # the commit still settles and notifies
    assert pipeline.notify(accepted.repoid, accepted.commitid).created


def test_the_entity_bomb_error_says_what_was_refused(pipeline: Pipeline) -> None:
    accepted = pipeline.upload([("bomb.xml", ENTITY_BOMB)])
    pipeline.process(accepted.upload_ids[0])
    error = upload_row(pipeline, accepted.upload_ids[0]).error or ""
    assert "entit" in error.lower() or "dtd" in error.lower()


def test_processing_is_idempotent_under_duplicate_delivery(pipeline: Pipeline) -> None:
    accepted = pipeline.upload(ci_matrix(1, files=1, lines=5))
    upload_id = accepted.upload_ids[0]
    pipeline.process(upload_id)
    pipeline.process(upload_id)  # redelivered while processed
    pipeline.finish(accepted.repoid, accepted.commitid)
    assert pipeline.process(upload_id) == UploadState.MERGED  # redelivered after the merge

    assert pipeline.services.state.counts(accepted.repoid, accepted.commitid) == (0, 0)
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(Upload.merged_version).where(Upload.id == upload_id)) == 1


def test_an_unknown_upload_id_is_a_message_error(pipeline: Pipeline) -> None:
    with pytest.raises(UnknownEntity, match="upload 424242 does not exist"):
        pipeline.process(424242)


def test_what_a_parser_forgave_is_stored_as_the_uploads_warnings(pipeline: Pipeline) -> None:
    lenient = b"TN:\nSF:src/a.c\nDA:1,-3\nDA:2,1\nend_of_record\n"  # gcov's threaded race
    accepted = pipeline.upload([("lcov.info", lenient)])
    upload_id = accepted.upload_ids[0]

    assert pipeline.process(upload_id) == UploadState.PROCESSED

    warnings = upload_row(pipeline, upload_id).warnings
    assert warnings and len(warnings) == 1 and "negative" in warnings[0]


def test_a_big_upload_sends_its_finisher_ahead_while_others_of_its_commit_are_processing(
    pipeline: Pipeline,
) -> None:
    services = pipeline.services
    accepted = pipeline.upload(ci_matrix(3, files=2, lines=10))  # all 3 processing from accept
    commit = (accepted.repoid, accepted.commitid)
    first, second, last = accepted.upload_ids
    with services.sessions() as session:
        size = session.scalar(sa.select(Upload.raw_size).where(Upload.id == first))
    assert size

    services.settings = services.settings.model_copy(update={"finisher_ahead_min_bytes": size + 1})
    assert pipeline.process_routed(first) == UploadState.PROCESSED
    assert pipeline.outbox.finisher == [commit] and pipeline.outbox.finisher_ahead == []

    services.settings = services.settings.model_copy(update={"finisher_ahead_min_bytes": size})
    assert pipeline.process_routed(second) == UploadState.PROCESSED
    assert pipeline.outbox.finisher == [commit] and pipeline.outbox.finisher_ahead == [commit]

    services.settings = services.settings.model_copy(update={"finisher_ahead_min_bytes": 0})
    assert pipeline.process_routed(last) == UploadState.PROCESSED  # the last one: ahead anyway
    assert pipeline.outbox.finisher_ahead == [commit, commit]


def test_the_bad_records_a_parser_skipped_are_stored_on_the_upload_bounded(
    pipeline: Pipeline,
) -> None:
    bad = b"".join(b"DA:0,skipped\n" for _ in range(5000))
    raw = b"TN:\nSF:src/a.c\nDA:1,1\n" + bad + b"end_of_record\n"
    accepted = pipeline.upload([("lcov.info", raw)])
    upload_id = accepted.upload_ids[0]

    assert pipeline.process(upload_id) == UploadState.PROCESSED

    stored = upload_row(pipeline, upload_id).skipped_records
    assert stored is not None and stored["count"] == 5000
    assert stored["named"] == [["DA:0,skipped", f"line {n}"] for n in range(4, 9)]
