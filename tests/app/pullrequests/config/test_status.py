"""coverage.status: each named status is its own context, a bad key keeps its default."""

from __future__ import annotations

from app.pullrequests.config import parse_codecov_yaml


def test_a_named_status_is_its_own_context_and_default_is_the_kinds_context() -> None:
    config = parse_codecov_yaml(
        "coverage:\n  status:\n    patch:\n      default:\n        target: 90%\n"
        "      tests:\n        target: 50\n        paths: ['tests/']\n"
    )
    default, tests = config.patch_statuses
    assert (default.context, default.target) == ("codecov/patch", 90.0)
    assert (tests.context, tests.target, tests.paths) == ("codecov/patch/tests", 50.0, ("tests/",))
    assert config.errors == ()


def test_a_status_that_is_not_a_mapping_is_an_error_and_left_out() -> None:
    config = parse_codecov_yaml("coverage:\n  status:\n    project:\n      api: 80\n")
    assert [str(e) for e in config.errors] == [
        "coverage.status.project.api: must be a mapping, not a number"
    ]
    assert config.project_statuses == ()
