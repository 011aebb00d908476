"""flags and flag_management: default rules, and the legacy key winning."""

from __future__ import annotations

from app.pullrequests.config import parse_codecov_yaml


def test_default_flag_rules_apply_to_flags_the_file_does_not_name() -> None:
    config = parse_codecov_yaml(
        """
flag_management:
  default_rules:
    carryforward: true
    statuses:
      - type: patch
        target: 75
  individual_flags:
    - name: docs
      carryforward: false
"""
    )
    assert config.errors == ()
    assert config.is_carryforward("anything") and not config.is_carryforward("docs")
    (status,) = config.flag_rule("anything").statuses
    assert (status.context, status.flags, status.target) == (
        "codecov/patch/anything",
        ("anything",),
        75.0,
    )
    assert config.carryforward_flags(known=["ui", "docs"]) == ("ui",)


def test_legacy_flags_win_over_flag_management_for_the_same_flag() -> None:
    config = parse_codecov_yaml(
        "flags:\n  unit:\n    carryforward: false\n"
        "flag_management:\n  individual_flags:\n    - name: unit\n      carryforward: true\n"
    )
    assert not config.is_carryforward("unit")
