"""Where codecov.yml is looked for."""

from __future__ import annotations

from app.pullrequests.config import CODECOV_YAML_PATHS


def test_the_yaml_is_looked_up_in_codecovs_order() -> None:
    assert CODECOV_YAML_PATHS == (
        "codecov.yml",
        ".codecov.yml",
        "codecov.yaml",
        ".codecov.yaml",
        "dev/codecov.yml",
        "dev/.codecov.yml",
        "dev/codecov.yaml",
        "dev/.codecov.yaml",
        ".github/codecov.yml",
        ".github/.codecov.yml",
        ".github/codecov.yaml",
        ".github/.codecov.yaml",
    )
