"""Uploads handed over directly (``covworker upload``, the demo): the
validators every way in shares, and ``accept_uploads`` storing the reports
and letting them into processing, in the database or the object store."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db.models import Upload, UploadState
from app.errors import InvalidUpload
from app.ingest.accept import (
    accept_uploads,
    validate_flags,
    validate_full_sha,
    validate_repo,
    validate_sha,
)
from app.runtime.services import Services
from app.storage import StorageUnavailable
from tests.support.memory_store import MemoryStore
from tests.support.pipeline import Pipeline, unit_services

SHA = "ab" * 20
REPORTS = [("a.info", b"SF:a.py\nDA:1,1\nend_of_record\n"), ("b.info", b"SF:b.py\nDA:1,0\n")]


def test_a_repository_name_is_owner_slash_name_or_a_nested_group_and_kept_lower_case() -> None:
    assert validate_repo("Acme/Web") == "acme/web"
    assert validate_repo("group/sub.group/my_repo-2") == "group/sub.group/my_repo-2"
    for bad in ("no-slash", "a/b c", "/a", "a/" + "b" * 255, "/".join("abcdefghij")):
        with pytest.raises(InvalidUpload, match="is not of the form OWNER/NAME"):
            validate_repo(bad)


def test_a_sha_to_look_up_may_be_short_one_to_store_must_be_full() -> None:
    assert validate_sha("ABC1234") == "abc1234"
    assert validate_full_sha(SHA.upper()) == SHA
    assert validate_full_sha("c" * 64) == "c" * 64
    for bad in ("abc123", "g" * 40, "a" * 65):
        with pytest.raises(InvalidUpload, match="is not a hex SHA"):
            validate_sha(bad)
    for bad in ("abc1234", "a" * 41, "z" * 40):
        with pytest.raises(InvalidUpload, match="give all 40 hex digits"):
            validate_full_sha(bad)


def test_flags_are_short_words_of_letters_digits_and_punctuation() -> None:
    assert validate_flags(["unit", "py3.11", "linux_x-64"]) == ["unit", "py3.11", "linux_x-64"]
    for bad in ("bad flag", "", "x" * 65, "a/b"):
        with pytest.raises(InvalidUpload, match=f"flag {bad!r}"):
            validate_flags([bad])


def uploads(services: Services) -> list[tuple[object, ...]]:
    """Every upload's (filename, state, flags, raw, storage_path), oldest first."""
    columns = (Upload.filename, Upload.state, Upload.flags, Upload.raw, Upload.storage_path)
    with services.sessions() as session:
        return [tuple(r) for r in session.execute(sa.select(*columns).order_by(Upload.id))]


def test_accepted_reports_are_stored_uploaded_and_each_processor_is_sent_once(
    pipeline: Pipeline,
) -> None:
    services, sent = pipeline.services, pipeline.outbox.processor

    accepted = accept_uploads(
        services, "Acme/Web", SHA, REPORTS, ["unit"], send_processor=pipeline.outbox.send_processor
    )

    assert sent == accepted.upload_ids and len(sent) == 2
    assert uploads(services) == [
        (name, UploadState.UPLOADED, ["unit"], raw, None) for name, raw in REPORTS
    ]
    assert services.state.counts(accepted.repoid, accepted.commitid) == (2, 0)


def test_without_a_sender_accepted_reports_wait_in_the_processing_set(pipeline: Pipeline) -> None:
    accepted = pipeline.upload(REPORTS)
    again = pipeline.upload(REPORTS[:1])  # the same commit: a second upload of it

    assert (again.repoid, again.commitid) == (accepted.repoid, accepted.commitid)
    counts = pipeline.services.state.counts(accepted.repoid, accepted.commitid)
    assert counts == (3, 0)
    assert pipeline.process(accepted.upload_ids[0]) == UploadState.PROCESSED


def test_a_report_over_the_limit_or_a_bad_name_stores_nothing(tmp_path: Path) -> None:
    services = unit_services(tmp_path, max_upload_bytes=40)
    try:
        with pytest.raises(InvalidUpload, match=r"b\.info: 41 bytes is over the limit of 40"):
            accept_uploads(services, "acme/web", SHA, [REPORTS[0], ("b.info", b"x" * 41)])
        with pytest.raises(InvalidUpload, match="give all 40 hex digits"):
            accept_uploads(services, "acme/web", SHA[:12], REPORTS[:1])
        with pytest.raises(InvalidUpload, match="flag 'bad flag'"):
            accept_uploads(services, "acme/web", SHA, REPORTS[:1], ["bad flag"])
        assert uploads(services) == []
    finally:
        services.close()


def test_with_an_object_store_the_payloads_become_objects_named_by_their_uploads(
    pipeline: Pipeline,
) -> None:
    services = pipeline.services
    services.payload_store = store = MemoryStore()

    accepted = accept_uploads(
        services, "acme/web", SHA, REPORTS, send_processor=pipeline.outbox.send_processor
    )

    rows = uploads(services)
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (name, UploadState.UPLOADED, b"") for name, _ in REPORTS
    ]
    keys = [str(r[4]) for r in rows]  # a row without a key names no object
    assert [store.objects.get(key) for key in keys] == [raw for _, raw in REPORTS]
    assert pipeline.outbox.processor == accepted.upload_ids
    assert services.state.counts(accepted.repoid, accepted.commitid) == (2, 0)
    assert pipeline.process(accepted.upload_ids[0]) == UploadState.PROCESSED


def test_an_object_store_failing_midway_keeps_neither_objects_nor_uploads(
    pipeline: Pipeline,
) -> None:
    services = pipeline.services
    services.payload_store = store = MemoryStore(fail_after=1)

    with pytest.raises(StorageUnavailable, match="nothing was stored, upload again later"):
        accept_uploads(
            services, "acme/web", SHA, REPORTS, send_processor=pipeline.outbox.send_processor
        )

    assert store.objects == {} and uploads(services) == []
    assert pipeline.outbox.processor == []
