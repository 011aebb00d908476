"""``covworker upload``: arguments and files refused before anything is
stored, what is stored and queued, Redis lost before or after the rows,
and ``--wait`` / ``--fail-under`` against real Redis, PostgreSQL and a worker."""

from __future__ import annotations

import json
from pathlib import Path

import dramatiq
import fakeredis
import pytest
import sqlalchemy as sa
from dramatiq import Worker

from app.cli.main import main
from app.cli.upload import read_reports, submit
from app.db.migrate import upgrade
from app.db.models import Commit, Repository, Upload
from app.errors import InvalidUpload
from app.runtime.state import ProcessingState
from app.runtime.worker import build_app
from tests.app.cli.conftest import GOOD, SHA, lcov, upload, write
from tests.support.pipeline import sqlite_settings
from tests.support.redis_commands import redis_refuses
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(120)

#: The report of the Redis-lost test.
REPORT = lcov({"a.py": {1: 1, 2: 0}})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repo", "no-slash", "--commit", SHA], "is not of the form OWNER/NAME"),
        (["--repo", "a/b", "--commit", "not-hex!"], "is not a full SHA"),
        (["--repo", "a/b", "--commit", "abc1234"], "give all 40 hex digits"),
        (["--repo", "a/b", "--commit", SHA, "--flag", "bad flag"], "flag 'bad flag'"),
    ],
)
def test_upload_refuses_bad_arguments_with_a_clear_message(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, dict(ci_matrix(1, files=1, lines=3)))
    assert main(["upload", *args, *files]) == 2
    assert message in capsys.readouterr().err


def test_upload_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.xml")
    assert main(["upload", "--create", "--repo", "a/b", "--commit", SHA, missing]) == 2
    assert "nope.xml: no such file" in capsys.readouterr().err


def test_upload_refuses_a_file_over_the_size_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVWORKER_MAX_UPLOAD_BYTES", "100")
    files = write(tmp_path, dict(ci_matrix(1, files=2, lines=10)))
    assert main(["upload", "--create", "--repo", "a/b", "--commit", SHA, *files]) == 2
    assert "over the limit of 100 bytes" in capsys.readouterr().err


def test_an_unreachable_redis_is_reported_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens on port 1
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    upgrade(f"sqlite:///{tmp_path / 'x.db'}")
    files = write(tmp_path, dict(ci_matrix(1, files=1, lines=3)))

    assert main(["upload", "--create", "--repo", "a/b", "--commit", SHA, *files]) == 3
    err = capsys.readouterr().err
    assert "cannot reach Redis (REDIS_URL)" in err and "nothing was stored" in err
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'x.db'}")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM uploads")).scalar() == 0
    engine.dispose()


@pytest.mark.integration
def test_a_directory_given_as_a_report_is_refused_as_a_directory(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["upload", "--create", "--repo", "acme/web", "--commit", SHA, str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.integration
def test_redis_lost_after_the_rows_were_stored_says_they_are_stored_and_not_to_retry(
    services_env: object,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = write(tmp_path, {"a.info": REPORT})
    with monkeypatch.context() as patched:
        patched.setattr(ProcessingState, "mark_processing", redis_refuses)
        assert main(["upload", "--create", "--repo", "acme/web", "--commit", SHA, *files]) == 3
    err = capsys.readouterr().err
    assert "were stored" in err and "do not upload them again" in err
    assert main(["status", "--repo", "acme/web", "--commit", SHA, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["uploads"]["uploaded"] == 1


def test_reports_are_read_in_order_under_their_file_names(tmp_path: Path) -> None:
    files = [tmp_path / "b.info", tmp_path / "sub" / "a.xml"]
    files[1].parent.mkdir()
    files[0].write_bytes(b"first")
    files[1].write_bytes(b"second")
    assert read_reports(files, max_bytes=6) == [("b.info", b"first"), ("a.xml", b"second")]


def a_bad_report(directory: Path, kind: str) -> Path:
    if kind == "oversized":
        (directory / "big.info").write_bytes(b"x" * 11)
        return directory / "big.info"
    return directory if kind == "directory" else directory / "absent.info"


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("directory", "is a directory; give the report files inside it"),
        ("missing", "absent.info: no such file"),
        ("oversized", "big.info: 11 bytes is over the limit of 10 bytes"),
    ],
)
def test_a_report_that_cannot_be_taken_is_refused_naming_it(
    kind: str, message: str, tmp_path: Path
) -> None:
    good = tmp_path / "good.info"
    good.write_bytes(GOOD[:10])
    with pytest.raises(InvalidUpload, match=message):
        read_reports([good, a_bad_report(tmp_path, kind)], max_bytes=10)


def test_submit_stores_each_report_with_its_flags_and_queues_each_for_the_processor_once(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path)
    upgrade(settings.database_url)
    app = build_app(settings, redis_client=fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    try:
        files = write(tmp_path, {"a.info": GOOD, "b.info": REPORT})

        ids = submit(app, "Acme/Web", SHA, [Path(f) for f in files], ["unit", "py"])

        with app.services.sessions() as session:
            rows = session.execute(
                sa.select(Upload.id, Upload.filename, Upload.flags, Repository.name, Commit.sha)
                .join(Commit, Commit.id == Upload.commit_id)
                .join(Repository, Repository.id == Commit.repository_id)
                .order_by(Upload.id)
            ).all()
            stored = {u.id: u.raw for u in session.scalars(sa.select(Upload))}
        assert [r.id for r in rows] == ids and len(ids) == 2
        assert [r.filename for r in rows] == ["a.info", "b.info"]
        assert all(r.flags == ["unit", "py"] and r.sha == SHA for r in rows)
        assert {r.name.lower() for r in rows} == {"acme/web"}
        assert sorted(stored.values()) == sorted([GOOD, REPORT])
        broker = app.broker
        raw = broker.client.hvals(f"{broker.namespace}:{app.settings.queue_name}.msgs")
        sent = [dramatiq.Message.decode(m) for m in raw]
        assert sorted((m.actor_name, tuple(m.args)) for m in sent) == [
            ("upload_processor", (upload_id,)) for upload_id in ids
        ]
    finally:
        app.close()


def test_submit_refuses_bad_arguments_before_reading_any_file(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path)
    upgrade(settings.database_url)
    app = build_app(settings, redis_client=fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    try:
        missing = [tmp_path / "absent.info"]
        with pytest.raises(InvalidUpload, match="OWNER/NAME"):
            submit(app, "no-slash", SHA, missing, [])
        with pytest.raises(InvalidUpload, match="flag 'bad flag'"):
            submit(app, "a/b", SHA, missing, ["bad flag"])
        with app.services.sessions() as session:
            assert session.scalar(sa.select(sa.func.count()).select_from(Upload)) == 0
    finally:
        app.close()


@pytest.mark.integration
def test_upload_wait_prints_the_merged_totals_and_exits_zero(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert upload("--wait", "--timeout", "60", *files) == 0
    out = capsys.readouterr().out
    assert "1 upload(s) merged, 0 failed; coverage 75.00% (" in out
    assert "3 of 4 lines hit" in out


@pytest.mark.integration
def test_upload_wait_names_each_failed_upload_and_its_reason_and_exits_one(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD, "empty.xml": b"", "README.md": b"# hello\n"})
    assert upload("--wait", *files) == 1
    captured = capsys.readouterr()
    assert "1 upload(s) merged, 2 failed" in captured.out
    failures = [line for line in captured.err.splitlines() if line.startswith("failed:")]
    assert len(failures) == 2
    assert any("(empty.xml)" in line for line in failures)
    assert any("(README.md)" in line for line in failures)


@pytest.mark.integration
def test_fail_under_exits_one_below_the_threshold_and_zero_above(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert upload("--fail-under", "80", *files) == 1
    assert "coverage 75.00% is under --fail-under 80%" in capsys.readouterr().err
    assert (
        main(
            [
                "upload",
                "--create",
                "--repo",
                "acme/web",
                "--commit",
                "f" * 40,
                "--fail-under",
                "70",
                *files,
            ]
        )
        == 0
    )


@pytest.mark.integration
def test_upload_wait_gives_up_with_exit_four_when_no_worker_runs(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert upload("--wait", "--timeout", "0.5", *files) == 4
    err = capsys.readouterr().err
    assert "timed out after 0.5 s" in err and "(pending uploads: 1 uploaded)" in err
    assert "no worker has picked any up" in err and "dramatiq app.actors" in err


@pytest.mark.integration
def test_an_upload_to_a_repository_nobody_added_is_refused_with_the_close_names(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert main(["upload", "--create", "--repo", "newteam/app", "--commit", SHA, *files]) == 0
    capsys.readouterr()
    assert main(["upload", "--repo", "Newteam/Ap", "--commit", SHA, *files]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no repository newteam/ap (did you mean newteam/app?)" in err
    assert "covworker repo add newteam/ap" in err and "--create" in err
    assert main(["commits", "newteam/ap"]) == 1  # the refused name was not created
    assert main(["upload", "--repo", "newteam/app", "--commit", SHA, *files]) == 0
