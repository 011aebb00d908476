"""The covworker CLI as a user drives it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from dramatiq import Worker
from sqlalchemy.engine import make_url

from app.cli.main import main
from app.runtime.worker import build_app, join_queues
from app.settings import Settings
from tests.support.services import redis_test_url
from tests.support.synthetic import ci_matrix, expected_totals, job_hits

pytestmark = pytest.mark.timeout(120)

SHA = "abc1234" + "0" * 33
FEED = "feed123" + "0" * 33


def write(tmp_path: Path, reports: list[tuple[str, bytes]]) -> list[str]:
    paths = []
    for name, data in reports:
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    return paths


@pytest.mark.integration
def test_upload_status_and_report_against_real_services(
    services_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, ci_matrix(3, files=2, lines=8))
    assert main(["upload", "--create", "--repo", "acme/api", "--commit", FEED, *files]) == 0
    assert "accepted 3 upload(s)" in capsys.readouterr().out
    app = build_app(services_env, redis_client=redis.Redis.from_url(redis_test_url()))
    from app import actors  # noqa: F401  (declares the actors on app)

    worker = Worker(app.broker, worker_threads=4, worker_timeout=50)
    worker.start()
    try:
        join_queues(app.broker, services_env.queue_names, timeout_ms=60_000)
        worker.join()
    finally:
        worker.stop()
        app.close()

    assert main(["status", "--repo", "acme/api", "--commit", FEED, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["uploads"]["merged"] == 3 and len(status["notifications"]) == 1
    assert status["redis"] == {"processing": 0, "processed": 0}
    assert main(["report", "--repo", "acme/api", "--commit", FEED, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected = expected_totals([job_hits(j, 2, 8) for j in range(3)])
    assert {k: report["totals"][k] for k in expected} == expected


@pytest.mark.integration
def test_a_missing_database_points_to_db_upgrade(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    missing = make_url(pg_url).set(database=make_url(pg_url).database + "_absent")
    monkeypatch.setenv("DATABASE_URL", missing.render_as_string(hide_password=False))
    assert main(["status", "--repo", "a/b", "--commit", SHA]) == 3
    assert "run `covworker db upgrade`" in capsys.readouterr().err


def test_bench_outside_a_checkout_says_it_needs_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no benchmarks/ here, as where a wheel is installed
    assert main(["bench"]) == 2
    assert "runs from a checkout" in capsys.readouterr().err


def test_bench_without_the_development_install_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("app.cli.main.BENCH_NEEDS", ("pytest", "no_such_module_here"))
    assert main(["bench", "--help"]) == 2
    err = capfd.readouterr().err
    assert "no_such_module_here is missing" in err and "pip install -e '.[dev]'" in err
    assert "ModuleNotFoundError" not in err


def test_bench_from_a_checkout_finds_the_benchmark(capfd: pytest.CaptureFixture[str]) -> None:
    from app.cli.main import BENCH_MODULE

    assert (Path.cwd() / BENCH_MODULE.replace(".", "/") / "cli.py").is_file()
    assert main(["bench", "--help"]) == 0  # python -m benchmarks.stampede --help
    assert "--scenario" in capfd.readouterr().out


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--every", "0", "the interval must be at least 1 second"),
        ("--every", "-5", "seconds must be a finite number, 0 or more"),
        ("--every", "nan", "seconds must be a finite number, 0 or more"),
        ("--every", "0.01", "the interval must be at least 1 second"),
        ("--older-than", "-1", "seconds must be a finite number, 0 or more"),
        ("--every", "soon", "'soon' is not a number of seconds"),
    ],
)
def test_sweep_refuses_an_interval_that_makes_no_sense_with_one_clear_line(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", option, value])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "command", [["run-local", "--repo", "a/b", "--commit", SHA], ["demo", "--uploads", "5"]]
)
def test_metrics_on_the_embedded_default_are_refused_with_one_line(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COVWORKER_METRICS", "true")
    files = write(tmp_path, ci_matrix(1, files=1, lines=3)) if command[0] == "run-local" else []

    assert main([*command, *files]) == 2

    err = capsys.readouterr().err
    assert "COVWORKER_METRICS=true needs worker processes" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_help_lists_every_format_covworker_reads_and_run_local_only_its_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from app.coverage.detect import FORMAT_NAMES

    for argv in (["--help"], ["upload", "--help"], ["run-local", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        shown = " ".join(capsys.readouterr().out.split())
        missing = [name for name in FORMAT_NAMES.values() if name not in shown]
        assert missing == [] and len(FORMAT_NAMES) >= 12, (argv, missing)
        if argv[0] == "run-local":
            assert "1 a report could not be merged" in shown
            assert "--fail-under" not in shown and "--wait" not in shown and " 3 " not in shown


def test_help_and_version_import_no_database_redis_or_web_library() -> None:
    """``covworker --help`` answers without importing what commands use."""
    import subprocess
    import sys

    probe = (
        "import sys, contextlib, io\n"
        "from app.cli.main import main\n"
        "for argv in (['--help'], ['--version'], ['repo', '--help'], ['serve', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        main(argv)\n"
        "heavy = ('sqlalchemy', 'redis', 'pydantic', 'dramatiq', 'uvicorn', 'fastapi', 'rich')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_help_says_how_to_run_the_worker(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "dramatiq app.actors" in capsys.readouterr().out
