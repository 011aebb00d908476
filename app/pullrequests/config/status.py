"""``coverage.status``: the project and patch statuses."""

from __future__ import annotations

from typing import Any

from app.pullrequests.config.fields import _boolean, _choice, _kind, _names, _paths, _percent
from app.pullrequests.config.schema import STATUS_RESULTS, ConfigError, StatusRule

_STATUS_KEYS = {
    "target",
    "threshold",
    "base",
    "flags",
    "paths",
    "informational",
    "only_pulls",
    "if_ci_failed",
    "if_not_found",
    # accepted by Codecov, not acted on by covworker
    "branches",
    "if_no_uploads",
    "removed_code_behavior",
    "carryforward_behavior",
    "flag_coverage_not_uploaded_behavior",
    "set_pending",
    "enabled",
    "type",
    "name_prefix",
}


def _status(
    kind: str,
    name: str,
    raw: dict[str, Any],
    errors: list[ConfigError],
    where: str,
    *,
    context: str | None = None,
) -> StatusRule:
    for key in raw:
        if key not in _STATUS_KEYS:
            errors.append(ConfigError(f"{where}.{key}", "is not a status setting"))
    target: float | None = None
    if raw.get("target") not in (None, "auto"):
        target = _percent(raw["target"], f"{where}.target", errors)
    threshold = 0.0
    if raw.get("threshold") is not None:
        threshold = _percent(raw["threshold"], f"{where}.threshold", errors) or 0.0
    informational = _boolean(raw, "informational", errors, f"{where}.informational", False)
    return StatusRule(
        kind=kind,
        name=name,
        target=target,
        threshold=threshold,
        base=_choice(raw, "base", errors, f"{where}.base", ("parent", "pr", "auto"), "auto"),
        flags=_names(raw.get("flags"), errors, f"{where}.flags"),
        paths=_paths(raw.get("paths"), errors, f"{where}.paths"),
        informational=informational,
        only_pulls=_boolean(raw, "only_pulls", errors, f"{where}.only_pulls", False),
        if_ci_failed=_choice(
            raw,
            "if_ci_failed",
            errors,
            f"{where}.if_ci_failed",
            STATUS_RESULTS,
            "success" if informational else "error",
        ),
        if_not_found=_choice(
            raw, "if_not_found", errors, f"{where}.if_not_found", STATUS_RESULTS, "success"
        ),
        context=context or (f"codecov/{kind}" if name == "default" else f"codecov/{kind}/{name}"),
    )


def _statuses(
    status: dict[str, Any], kind: str, errors: list[ConfigError], default: tuple[StatusRule, ...]
) -> tuple[StatusRule, ...]:
    where = f"coverage.status.{kind}"
    if kind not in status or status[kind] is None:
        return default
    value = status[kind]
    if value is True:
        return default
    if value is False:
        return ()
    if not isinstance(value, dict):
        errors.append(ConfigError(where, f"must be true, false or a mapping, not {_kind(value)}"))
        return default
    rules = []
    for name, raw in value.items():
        name = str(name)
        if raw is False or (isinstance(raw, dict) and raw.get("enabled") is False):
            continue
        if raw is None or raw is True:
            raw = {}
        if not isinstance(raw, dict):
            errors.append(ConfigError(f"{where}.{name}", f"must be a mapping, not {_kind(raw)}"))
            continue
        rules.append(_status(kind, name, raw, errors, f"{where}.{name}"))
    return tuple(rules)
