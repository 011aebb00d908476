"""Which providers the settings give, and what start-up says about them."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from app.errors import ConfigurationError
from app.providers import Providers
from app.providers.github import AppAuth, GitHub, TokenAuth
from app.providers.gitlab import GitLab
from app.settings import Settings


def settings(**values: str) -> Settings:
    return Settings(redis_url="redis://unused", database_url="sqlite://", **values)


def test_without_credentials_there_is_no_provider_and_start_up_says_feedback_is_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    found = Providers.from_settings(settings())
    with caplog.at_level(logging.INFO, logger="app.providers"):
        found.announce()
    assert found.by_service == {}
    assert [r.getMessage() for r in caplog.records] == [
        "Pull-request feedback is off: no GitHub or GitLab credentials "
        "(COVWORKER_GITHUB_TOKEN or COVWORKER_GITHUB_APP_ID, COVWORKER_GITLAB_TOKEN)."
    ]


def test_a_token_per_service_gives_that_services_client_at_its_api_url(
    caplog: pytest.LogCaptureFixture,
) -> None:
    found = Providers.from_settings(
        settings(
            github_token="ghp_x",
            github_api_url="https://ghe.example.com/api/v3/",
            gitlab_token="glpat-x",
        )
    )
    github, gitlab = found.for_service("github"), found.for_service("gitlab")
    assert isinstance(github, GitHub) and isinstance(github.auth, TokenAuth)
    assert github.http.base_url == "https://ghe.example.com/api/v3"
    assert isinstance(gitlab, GitLab) and gitlab.http.base_url == "https://gitlab.com/api/v4"
    with caplog.at_level(logging.INFO, logger="app.providers"):
        found.announce()
    assert caplog.records[0].getMessage() == "Pull-request feedback is on for github and gitlab."
    found.close()


def test_a_github_app_is_preferred_over_a_token(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n")
    found = Providers.from_settings(
        settings(
            github_token="ghp_x",
            github_app_id="123",
            github_app_private_key_path=str(key),
        )
    )
    github = found.for_service("github")
    assert isinstance(github, GitHub) and isinstance(github.auth, AppAuth)
    assert github.auth.app_id == "123"


def test_a_github_app_without_its_key_is_a_configuration_error_naming_both_settings() -> None:
    with pytest.raises(ConfigurationError, match="COVWORKER_GITHUB_APP_PRIVATE_KEY_PATH"):
        Providers.from_settings(settings(github_app_id="123"))


def test_an_unreadable_key_file_is_a_configuration_error_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(ConfigurationError, match=f"{missing}: cannot read it"):
        Providers.from_settings(
            settings(github_app_id="123", github_app_private_key_path=str(missing))
        )


def test_a_worker_loads_the_http_and_jwt_libraries_only_for_the_credentials_it_has() -> None:
    """Without credentials neither httpx nor PyJWT is imported (about 25 MiB of
    every worker's memory); a token needs httpx, only a GitHub App needs PyJWT."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from app.providers import Providers\n"
        "from app.settings import Settings\n"
        "values = dict(arg.split('=', 1) for arg in sys.argv[1:])\n"
        "Providers.from_settings(Settings(redis_url='redis://unused', database_url='sqlite://',"
        " **values))\n"
        "print(sorted(m for m in ('httpx', 'jwt') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}

    def loaded(*values: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe, *values], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert loaded() == "[]"
    assert loaded("github_token=t", "gitlab_token=t") == "['httpx']"
