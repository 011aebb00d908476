"""``upload --wait`` / ``--fail-under``, ``status`` and ``report`` of failed
uploads, per-flag reports: against real Redis, PostgreSQL and a worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dramatiq import Worker

from app.cli.main import main
from tests.app.cli.conftest import SHA, lcov, write

pytestmark = [pytest.mark.timeout(120), pytest.mark.integration]

#: 3 of 4 lines hit: 75 %.
GOOD = lcov({"src/a.py": {1: 1, 2: 1, 3: 1, 4: 0}})
#: 1 of 2 lines hit, another file: 50 %.
OTHER = lcov({"src/b.py": {1: 1, 2: 0}, "src/__init__.py": {}})


def upload(*args: str) -> int:
    return main(["upload", "--repo", "acme/web", "--commit", SHA, *args])


def test_upload_wait_prints_the_merged_totals_and_exits_zero(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert upload("--wait", "--timeout", "60", *files) == 0
    out = capsys.readouterr().out
    assert "1 upload(s) merged, 0 failed; coverage 75.00 %" in out
    assert "3 of 4 lines hit" in out


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


def test_fail_under_exits_one_below_the_threshold_and_zero_above(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert upload("--fail-under", "80", *files) == 1
    assert "coverage 75.00 % is under --fail-under 80 %" in capsys.readouterr().err
    assert (
        main(["upload", "--repo", "acme/web", "--commit", "f" * 40, "--fail-under", "70", *files])
        == 0
    )


def test_upload_wait_gives_up_with_exit_four_when_no_worker_runs(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": GOOD})
    assert upload("--wait", "--timeout", "0.5", *files) == 4
    err = capsys.readouterr().err
    assert "timed out after 0.5 s" in err and "'uploaded': 1" in err


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
    assert whole["files"]["src/__init__.py"]["coverage"] is None  # no lines, no percentage
    assert "files" not in whole["files"]["src/a.py"]

    assert main(["report", "--repo", "acme/web", "--commit", SHA, "--flag", "e2e", "--json"]) == 0
    e2e = json.loads(capsys.readouterr().out)
    assert set(e2e["files"]) == {"src/b.py", "src/__init__.py"}
    assert e2e["totals"]["coverage"] == 50.0

    assert main(["report", "--repo", "acme/web", "--commit", SHA, "--flag", "nope"]) == 1
    assert "no merged upload of this commit has flag 'nope'" in capsys.readouterr().err


def test_report_of_a_commit_whose_uploads_all_failed_says_so_and_exits_one(
    worker: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upload("--wait", *write(tmp_path, {"x.xml": b"<coverage><packages>"})) == 1
    capsys.readouterr()
    assert main(["report", "--repo", "acme/web", "--commit", SHA]) == 1
    err = capsys.readouterr().err
    assert "every upload of this commit failed (1)" in err
    assert "malformed cobertura" in err.lower()


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
