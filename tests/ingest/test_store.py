"""Uploads created over HTTP, before and after their payload (embedded pipeline)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from app.db.models import Repository, Upload, UploadState, utcnow
from app.embedded import embedded
from app.ingest.store import (
    CommitMeta,
    UploadMeta,
    create_awaiting_upload,
    store_payload,
    upload_counts,
    upsert_commit,
)
from app.pipeline.sweeper import sweep


def test_an_upload_awaiting_its_payload_is_outside_the_sweep_and_the_counts(
    tmp_path: Path,
) -> None:
    with embedded(database_path=tmp_path / "s.db") as runtime:
        services = runtime.app.services
        with services.sessions.begin() as session:
            repo = Repository(name="acme/web")
            session.add(repo)
            session.flush()
            commit = upsert_commit(session, repo, "a" * 40, CommitMeta(branch="main", pullid=3))
            upload = create_awaiting_upload(session, commit, UploadMeta(flags=["unit"]), "v1")
            commit_id, upload_id = commit.id, upload.id
        sent: list[object] = []
        result = sweep(
            services,
            send_processor=sent.append,
            send_finisher=lambda *a: sent.append(a),
            send_notify=lambda *a: sent.append(a),
            now=utcnow() + timedelta(days=1),
        )
        assert result.reprocessed == [] and sent == []
        assert upload_counts(services, commit_id)["uploads_total"] == 0

        assert store_payload(services, upload_id, b"SF:a.py\nDA:1,1\nend_of_record\n") is not None
        assert store_payload(services, upload_id, b"again") is None  # single use
        with services.sessions() as session:
            stored = session.execute(
                sa.select(Upload.state, Upload.raw, Upload.branch, Upload.pullid)
            ).one()
        assert tuple(stored) == (
            UploadState.UPLOADED,
            b"SF:a.py\nDA:1,1\nend_of_record\n",
            "main",
            3,
        )
        assert upload_counts(services, commit_id) == {
            "uploads_total": 1,
            "uploads_success": 0,
            "uploads_processing": 1,
            "uploads_error": 0,
        }
