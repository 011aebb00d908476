"""The whole codecov.yml: typed settings, errors that name the key, defaults kept."""

from __future__ import annotations

from app.pullrequests.config import default_config, parse_codecov_yaml


def test_no_file_gives_codecovs_defaults() -> None:
    config = parse_codecov_yaml(None)
    assert config == parse_codecov_yaml("") == default_config()
    assert (config.precision, config.round, config.range) == (2, "down", (60.0, 80.0))
    assert [s.context for s in config.project_statuses] == ["codecov/project"]
    assert [s.context for s in config.patch_statuses] == ["codecov/patch"]
    assert config.project_statuses[0].target is None  # auto
    assert config.comment.enabled and config.comment.behavior == "default"
    assert config.errors == ()


def test_a_full_file_is_read_into_typed_settings() -> None:
    config = parse_codecov_yaml(
        """
codecov:
  notify:
    after_n_builds: 3
coverage:
  precision: 1
  round: nearest
  range: "70...95"
  status:
    project:
      default:
        target: auto
        threshold: 1%
      backend:
        target: 80%
        paths: ["src/api/"]
        flags: [unit]
        informational: true
    patch:
      default:
        target: 90
        only_pulls: true
        if_not_found: failure
comment:
  layout: "header, diff, flags, files"
  behavior: new
  require_changes: "coverage_drop or uncovered_patch"
  after_n_builds: 2
  show_carryforward_flags: true
  hide_project_coverage: false
flags:
  unit:
    carryforward: true
    paths: [src/]
flag_management:
  default_rules:
    carryforward: false
  individual_flags:
    - name: integration
      carryforward: true
      statuses:
        - type: project
          name_prefix: it-
          target: 60%
ignore:
  - "tests/**"
  - "^vendor/.*"
fixes:
  - "/home/ci/src/::src/"
"""
    )
    assert config.errors == ()
    assert config.notify_after_n_builds == 3
    assert (config.precision, config.round, config.range) == (1, "nearest", (70.0, 95.0))
    default, backend = config.project_statuses
    assert (default.context, default.target, default.threshold) == ("codecov/project", None, 1.0)
    assert backend.context == "codecov/project/backend"
    assert (backend.target, backend.paths, backend.flags) == (80.0, ("src/api/",), ("unit",))
    assert backend.informational and backend.if_ci_failed == "success"
    (patch,) = config.patch_statuses
    assert (patch.target, patch.only_pulls, patch.if_not_found) == (90.0, True, "failure")
    comment = config.comment
    assert comment.layout == ("header", "diff", "flags", "files")
    assert comment.behavior == "new"
    assert comment.require_changes == "coverage_drop or uncovered_patch"
    assert (comment.after_n_builds, comment.show_carryforward_flags) == (2, True)
    assert config.is_carryforward("unit") and config.is_carryforward("integration")
    assert not config.is_carryforward("e2e")
    assert config.flag_rule("unit").paths == ("src/",)
    (it_status,) = config.flag_rule("integration").statuses
    assert (it_status.context, it_status.flags, it_status.target) == (
        "codecov/project/it-integration",
        ("integration",),
        60.0,
    )
    assert config.carryforward_flags() == ("integration", "unit")
    assert config.is_ignored("tests/unit/test_a.py") and config.is_ignored("vendor/x.go")
    assert not config.is_ignored("src/tests.py")
    assert config.fix_path("/home/ci/src/app/a.py") == "src/app/a.py"


def test_each_bad_key_is_named_with_why_and_falls_back_to_its_default() -> None:
    config = parse_codecov_yaml(
        """
coverage:
  precision: 9
  round: sideways
  range: "90...10"
  status:
    project:
      default:
        target: 180%
        colour: red
    patch: maybe
comment:
  behavior: loud
  require_changes: "coverage_up"
  after_n_builds: -1
  layout: "header, pie"
flags:
  unit:
    carryforward: "yes"
fixes: ["no-separator"]
"""
    )
    errors = {e.key: e.message for e in config.errors}
    assert errors["coverage.precision"] == "must be between 0 and 5, not 9"
    assert errors["coverage.round"] == "must be one of down, up, nearest, not 'sideways'"
    assert errors["coverage.range"] == "its low end 90 is above 10"
    assert errors["coverage.status.project.default.target"] == (
        "must be a percentage 0..100, not '180%'"
    )
    assert errors["coverage.status.project.default.colour"] == "is not a status setting"
    assert errors["coverage.status.patch"] == "must be true, false or a mapping, not a string"
    assert errors["comment.behavior"] == "must be one of default, once, new, spammy, not 'loud'"
    assert "coverage_up" in errors["comment.require_changes"]
    assert errors["comment.after_n_builds"] == "must be at least 0, not -1"
    assert errors["comment.layout"] == "unknown section(s): pie"
    assert errors["flags.unit.carryforward"] == "must be true or false, not a string"
    assert errors["fixes[0]"] == "must be \"before::after\", not 'no-separator'"
    # every bad key fell back to its default; the good parts of the file still apply
    defaults = default_config()
    assert (config.precision, config.round, config.range) == (2, "down", (60.0, 80.0))
    assert config.project_statuses[0].target is None
    assert config.patch_statuses == defaults.patch_statuses
    assert config.comment.behavior == "default" and config.comment.layout == defaults.comment.layout
    assert not config.is_carryforward("unit")


def test_unreadable_yaml_is_one_error_with_its_place_and_the_defaults() -> None:
    config = parse_codecov_yaml("coverage:\n  status: [unclosed\n")
    (error,) = config.errors
    assert error.key == "(file)"
    assert error.message.startswith("not valid YAML at line 3")
    assert config.project_statuses == default_config().project_statuses


def test_a_file_that_is_not_a_mapping_is_an_error() -> None:
    (error,) = parse_codecov_yaml("- just\n- a list\n").errors
    assert str(error) == "(file): must be a mapping, not a list"


def test_statuses_and_comment_can_be_turned_off() -> None:
    config = parse_codecov_yaml("coverage:\n  status:\n    project: false\ncomment: false\n")
    assert config.project_statuses == () and len(config.patch_statuses) == 1
    assert not config.comment.enabled
    assert parse_codecov_yaml("coverage:\n  status: false\n").patch_statuses == ()
