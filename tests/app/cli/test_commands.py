"""What each ``covworker`` subcommand does: ``status``, ``report``,
``run-local``, ``health``, ``db upgrade`` (the servers' commands against
real Redis, PostgreSQL and a worker)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from dramatiq import Worker

from app.cli import commands
from app.cli.main import main
from app.runtime.health import SWEEPER_BEAT, touch
from tests.app.cli.conftest import GOOD, SHA, lcov, upload, write
from tests.support.synthetic import ci_matrix, expected_totals, job_hits

pytestmark = pytest.mark.timeout(120)

#: 1 of 2 lines hit, another file: 50 %.
OTHER = lcov({"src/b.py": {1: 1, 2: 0}, "src/__init__.py": {}})


@pytest.mark.integration
def test_status_lists_every_upload_with_its_flags_and_the_reason_of_a_failure(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upload("--flag", "unit", "--wait", *write(tmp_path, {"a.info": GOOD})) == 0
    assert upload("--flag", "e2e", "--wait", *write(tmp_path, {"bin.dat": b"\x7fELF\x00"})) == 1
    capsys.readouterr()

    assert main(["status", "--repo", "acme/web", "--commit", SHA]) == 0
    table = capsys.readouterr().out
    assert "finisher finisher" not in table
    assert "a.info" in table and "unit" in table and "merged" in table
    assert "bin.dat" in table and "e2e" in table and "error" in table

    assert main(["status", "--repo", "acme/web", "--commit", SHA, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    by_file = {u["file"]: u for u in status["upload_list"]}
    assert by_file["a.info"]["flags"] == ["unit"] and by_file["a.info"]["format"] == "lcov"
    assert by_file["bin.dat"]["state"] == "error" and by_file["bin.dat"]["error"]
    assert status["flags"]["unit"]["coverage"] == 75.0 and status["flags"]["unit"]["uploads"] == 1


@pytest.mark.integration
def test_report_per_flag_shows_only_that_flags_coverage(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upload("--flag", "unit", "--wait", *write(tmp_path, {"a.info": GOOD})) == 0
    assert (
        upload("--flag", "e2e", "--flag", "py", "--wait", *write(tmp_path, {"b.info": OTHER})) == 0
    )
    capsys.readouterr()

    assert main(["report", "--repo", "acme/web", "--commit", SHA, "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["totals"]["lines"] == 6 and whole["totals"]["hits"] == 4
    assert set(whole["flags"]) == {"unit", "e2e", "py"}
    # a file without lines is not kept (Codecov's report drops it) nor counted
    assert "src/__init__.py" not in whole["files"] and whole["totals"]["files"] == 2
    assert "files" not in whole["files"]["src/a.py"]

    assert main(["report", "--repo", "acme/web", "--commit", SHA, "--flag", "e2e", "--json"]) == 0
    e2e = json.loads(capsys.readouterr().out)
    assert set(e2e["files"]) == {"src/b.py"}
    assert e2e["totals"]["coverage"] == 50.0

    assert main(["report", "--repo", "acme/web", "--commit", SHA, "--flag", "nope"]) == 1
    assert "no merged upload of this commit has flag 'nope'" in capsys.readouterr().err


@pytest.mark.integration
def test_report_of_a_commit_whose_uploads_all_failed_says_so_and_exits_one(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upload("--wait", *write(tmp_path, {"x.xml": b"<coverage><packages>"})) == 1
    capsys.readouterr()
    assert main(["report", "--repo", "acme/web", "--commit", SHA]) == 1
    err = capsys.readouterr().err
    assert "every upload of this commit failed (1)" in err
    assert "malformed cobertura" in err.lower()


@pytest.mark.integration
def test_report_all_lists_every_file_beyond_fifty(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    many = lcov({f"src/m{i:02d}.py": {1: 1} for i in range(60)})
    assert upload("--wait", *write(tmp_path, {"many.info": many})) == 0
    capsys.readouterr()
    assert main(["report", "--repo", "acme/web", "--commit", SHA]) == 0
    assert "10 more files" in capsys.readouterr().out
    assert main(["report", "--repo", "acme/web", "--commit", SHA, "--all"]) == 0
    out = capsys.readouterr().out
    assert "src/m59.py" in out and "more files" not in out


def test_run_local_merges_reports_without_servers_and_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, dict(ci_matrix(4, files=3, lines=12)))
    files += write(tmp_path, {"broken.xml": b"<coverage><packages>"})

    assert main(["run-local", "--repo", "acme/web", "--commit", SHA, "--json", *files]) == 1

    out, err = capsys.readouterr()
    report = json.loads(out)
    assert "broken.xml" in err and "1 of 5 report(s) could not be merged" in err
    expected = expected_totals([job_hits(j, 3, 12) for j in range(4)])
    assert {k: report["totals"][k] for k in expected} == expected
    assert len(report["upload_ids"]) == 4
    assert [e["file"] for e in report["errors"]] == ["broken.xml"]
    assert "malformed cobertura" in report["errors"][0]["error"].lower()


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        pytest.param("lcov.info", ["warning:", "negative counts read as 0"], id="what-it-forgave"),
        pytest.param(
            "[job].info",
            ["warning: [job].info: LCOV: 1 negative counts read as 0"],
            id="brackets-kept-as-they-are",
        ),
    ],
)
def test_run_local_shows_what_each_parser_forgave_naming_the_file_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, shown: list[str]
) -> None:
    report = tmp_path / name
    report.write_text("SF:a.c\nDA:1,3\nDA:2,-1\nend_of_record\n")
    assert main(["run-local", "--repo", "acme/web", "--commit", "f" * 40, str(report)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    for text in shown:
        assert text in err


def test_health_without_a_health_directory_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COVWORKER_HEALTH_DIR", raising=False)
    assert main(["health", "worker"]) == 2
    assert "COVWORKER_HEALTH_DIR is not set" in capsys.readouterr().err


def test_health_worker_is_ok_while_a_live_process_beats_and_fails_once_it_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COVWORKER_HEALTH_DIR", str(tmp_path))
    assert main(["health", "worker"]) == 1  # no worker has beaten yet
    beat = tmp_path / f"worker-{os.getpid()}.beat"
    touch(beat)
    assert main(["health", "worker"]) == 0
    old = time.time() - 120
    os.utime(beat, (old, old))
    capsys.readouterr()
    assert main(["health", "worker", "--max-age", "60"]) == 1
    assert capsys.readouterr().err.strip()


def test_health_sweeper_fails_until_a_sweep_completed_and_again_when_it_is_too_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COVWORKER_HEALTH_DIR", str(tmp_path))
    assert main(["health", "sweeper"]) == 1
    assert "has not completed a sweep yet" in capsys.readouterr().err
    touch(tmp_path / SWEEPER_BEAT)
    assert main(["health", "sweeper"]) == 0
    old = time.time() - commands.SWEEPER_MAX_AGE_S - 60
    os.utime(tmp_path / SWEEPER_BEAT, (old, old))
    assert main(["health", "sweeper"]) == 1  # the default age
    assert main(["health", "sweeper", "--max-age", str(commands.SWEEPER_MAX_AGE_S * 2)]) == 0


def refused(statement: str) -> sa.exc.OperationalError:
    return sa.exc.OperationalError(statement, {}, Exception("connection refused\nmore detail"))


def test_db_upgrade_waits_for_a_database_that_refuses_connections_then_migrates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setattr(commands, "DB_RETRY_S", 0.01)
    tries: list[str] = []

    def starting(to: str) -> bool:
        tries.append(to)
        if len(tries) < 3:
            raise refused("connect")
        return True

    monkeypatch.setattr(commands, "upgrade", starting)
    assert commands.db_upgrade(argparse.Namespace(wait_for_database=30.0)) == 0
    out, err = capsys.readouterr()
    assert tries == [url] * 3
    assert err.count("not accepting connections yet (connection refused)") == 1
    assert "retrying for up to 30 s" in err
    assert "database created and migrated to the latest schema" in out


def test_db_upgrade_gives_up_once_the_wait_is_over_and_at_once_without_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    monkeypatch.setattr(commands, "DB_RETRY_S", 0.01)
    tries: list[str] = []

    def down(to: str) -> bool:
        tries.append(to)
        raise refused("connect")

    monkeypatch.setattr(commands, "upgrade", down)
    with pytest.raises(sa.exc.OperationalError):
        commands.db_upgrade(argparse.Namespace(wait_for_database=0.0))
    assert len(tries) == 1
    with pytest.raises(sa.exc.OperationalError):
        commands.db_upgrade(argparse.Namespace(wait_for_database=0.1))
    assert 2 < len(tries) < 100
