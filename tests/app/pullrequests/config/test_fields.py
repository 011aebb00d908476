"""The value checks the sections share."""

from __future__ import annotations

from app.pullrequests.config import parse_codecov_yaml


def test_a_pattern_re2_cannot_take_is_a_config_error_naming_it() -> None:
    config = parse_codecov_yaml(
        "ignore: ['^(a)\\1$', 'src/']\n"
        "coverage:\n  status:\n    project:\n      api:\n        paths: ['^a(?=b)']\n"
    )
    errors = {e.key: e.message for e in config.errors}
    assert errors["ignore"] == "'^(a)\\\\1$' is not a valid pattern: invalid escape sequence: \\1"
    assert errors["coverage.status.project.api.paths"] == (
        "'^a(?=b)' is not a valid pattern: invalid perl operator: (?="
    )
    assert config.ignore == ("src/",)
