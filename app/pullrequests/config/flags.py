"""``flags`` and ``flag_management``: each flag's carryforward, paths and statuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.pullrequests.config.fields import _boolean, _integer, _kind, _mapping, _paths, _shown
from app.pullrequests.config.schema import ConfigError, FlagRule, StatusRule
from app.pullrequests.config.status import _status

_FLAG_KEYS = {
    "carryforward",
    "paths",
    "statuses",
    "after_n_builds",
    "name",
    "carryforward_mode",
    "ignore",
    "joined",
    "required",
}


def _flag_rule(
    name: str, raw: dict[str, Any], errors: list[ConfigError], where: str, base: FlagRule
) -> FlagRule:
    for key in raw:
        if key not in _FLAG_KEYS:
            errors.append(ConfigError(f"{where}.{key}", "is not a flag setting"))
    paths = base.paths
    if "paths" in raw:
        paths = _paths(raw.get("paths"), errors, f"{where}.paths")
    statuses = base.statuses
    if raw.get("statuses") is not None:
        statuses = _flag_statuses(name, raw["statuses"], errors, f"{where}.statuses")
    elif name and base.statuses:
        statuses = _flag_statuses(name, [_raw_of(s) for s in base.statuses], errors, where)
    return FlagRule(
        name=name,
        carryforward=_boolean(
            raw, "carryforward", errors, f"{where}.carryforward", base.carryforward
        ),
        paths=paths,
        statuses=statuses,
        after_n_builds=_integer(
            raw, "after_n_builds", errors, f"{where}.after_n_builds", base.after_n_builds, 0
        ),
    )


def _raw_of(rule: StatusRule) -> dict[str, Any]:
    """A default rule's status back as its raw mapping, to name it after a flag."""
    raw: dict[str, Any] = {
        "type": rule.kind,
        "name_prefix": rule.name,
        "threshold": rule.threshold,
        "informational": rule.informational,
        "only_pulls": rule.only_pulls,
        "if_ci_failed": rule.if_ci_failed,
        "if_not_found": rule.if_not_found,
        "base": rule.base,
    }
    if rule.target is not None:
        raw["target"] = rule.target
    if rule.paths is not None:
        raw["paths"] = list(rule.paths)
    return raw


def _flag_statuses(
    flag: str, value: object, errors: list[ConfigError], where: str
) -> tuple[StatusRule, ...]:
    """``statuses: [{type: project|patch, name_prefix, target, ...}]`` of a flag:
    contexts ``codecov/<type>/<name_prefix><flag>``, filtered to the flag."""
    if not isinstance(value, list):
        errors.append(ConfigError(where, f"must be a list, not {_kind(value)}"))
        return ()
    rules = []
    for i, raw in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(raw, dict):
            errors.append(ConfigError(at, f"must be a mapping, not {_kind(raw)}"))
            continue
        kind = raw.get("type")
        if kind not in ("project", "patch"):
            problem = f"must be project or patch, not {_shown(kind)}"
            errors.append(ConfigError(f"{at}.type", problem))
            continue
        prefix = raw.get("name_prefix") or ""
        if not isinstance(prefix, str):
            errors.append(ConfigError(f"{at}.name_prefix", "must be a string"))
            prefix = ""
        if not flag:  # a default rule's status: named once a flag uses it
            rules.append(_status(kind, prefix, raw, errors, at, context=prefix))
            continue
        name = f"{prefix}{flag}"
        rule = _status(kind, name, raw, errors, at, context=f"codecov/{kind}/{name}")
        rules.append(replace(rule, flags=(flag,)))
    return tuple(rules)


def _flags(data: dict[str, Any], errors: list[ConfigError]) -> tuple[dict[str, FlagRule], FlagRule]:
    """``flag_management`` (default rules, individual flags), then legacy ``flags:``,
    which wins for a flag named in both (as Codecov)."""
    management = _mapping(data, "flag_management", errors, "flag_management")
    default_rule = FlagRule(name="")
    if isinstance(management, dict) and management.get("default_rules") is not None:
        raw = management["default_rules"]
        if isinstance(raw, dict):
            default_rule = _flag_rule(
                "", raw, errors, "flag_management.default_rules", default_rule
            )
        else:
            errors.append(
                ConfigError("flag_management.default_rules", f"must be a mapping, not {_kind(raw)}")
            )
    for key in management if isinstance(management, dict) else ():
        if key not in ("default_rules", "individual_flags"):
            errors.append(ConfigError(f"flag_management.{key}", "is not a flag_management setting"))
    flags: dict[str, FlagRule] = {}
    individual = management.get("individual_flags") if isinstance(management, dict) else None
    if individual is not None:
        if not isinstance(individual, list):
            errors.append(
                ConfigError(
                    "flag_management.individual_flags", f"must be a list, not {_kind(individual)}"
                )
            )
        else:
            for i, raw in enumerate(individual):
                where = f"flag_management.individual_flags[{i}]"
                if (
                    not isinstance(raw, dict)
                    or not isinstance(raw.get("name"), str)
                    or not raw["name"]
                ):
                    errors.append(ConfigError(where, "must be a mapping with a name"))
                    continue
                flags[raw["name"]] = _flag_rule(raw["name"], raw, errors, where, default_rule)
    legacy = _mapping(data, "flags", errors, "flags")
    for name, raw in legacy.items() if isinstance(legacy, dict) else ():
        name = str(name)
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            errors.append(ConfigError(f"flags.{name}", f"must be a mapping, not {_kind(raw)}"))
            continue
        flags[name] = _flag_rule(name, raw, errors, f"flags.{name}", FlagRule(name=name))
    return flags, default_rule
