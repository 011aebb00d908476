"""Bad configuration and bad arguments: one line naming what to fix, exit 2."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from app.cli.main import main

pytestmark = pytest.mark.timeout(60)

STATUS = ["status", "--repo", "a/b", "--commit", "abc1234"]


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("REDIS_URL", "127.0.0.1:6379", "REDIS_URL=127.0.0.1:6379: it must start with redis://"),
        (
            "COVWORKER_FINISHER_CONCURRENCY",
            "0",
            "COVWORKER_FINISHER_CONCURRENCY=0: it must be greater than 0",
        ),
        ("COVWORKER_SWEEP_AFTER_S", "soon", "COVWORKER_SWEEP_AFTER_S=soon: it must be a valid"),
        (
            "COVWORKER_FINISHER_LOCK_TIMEOUT_S",
            "120",
            "COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS=60000 must be at least "
            "COVWORKER_FINISHER_LOCK_TIMEOUT_S x 1000 + 2000",
        ),
        ("DATABASE_URL", "mysql://x/y", "unsupported DATABASE_URL"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable_with_exit_two(
    variable: str,
    value: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(STATUS) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {says}") or (says.startswith("unsupported") and says in err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.integration
def test_a_database_role_that_does_not_exist_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pg_url: str
) -> None:
    url = make_url(pg_url).set(username="nobody_of_covworker")
    monkeypatch.setenv("DATABASE_URL", url.render_as_string(hide_password=False))
    assert main(STATUS) == 2
    err = capsys.readouterr().err
    assert "DATABASE_URL names a PostgreSQL user that does not exist" in err
    assert "db upgrade" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["demo", "--uploads", "0"],
        ["demo", "--uploads", "-5"],
        ["demo", "--threads", "0"],
        ["sweep", "--every", "0"],
        ["sweep", "--every", "-1"],
        ["sweep", "--older-than", "-1"],
        ["upload", "--repo", "a/b", "--commit", "a" * 40, "--timeout", "-1", "x.info"],
    ],
)
def test_arguments_that_make_no_sense_are_refused_with_exit_two(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(args)
    assert refused.value.code == 2
    assert "must be" in capsys.readouterr().err


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("covworker 0.")


def test_upload_help_lists_the_formats_in_plain_words(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["upload", "--help"])
    text = capsys.readouterr().out
    for name in ("Cobertura XML", "JaCoCo XML", "LCOV", "coverage.py JSON", "Go coverprofile"):
        assert name in text
    assert "--wait" in text and "--fail-under" in text
    assert "``" not in text
