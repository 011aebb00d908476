"""The whole ``codecov.yml``: :class:`CodecovConfig`, Codecov's defaults, and
the parse that reads each section with its own module."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from app.pullrequests import yamlfile
from app.pullrequests.config.comment import _comment
from app.pullrequests.config.fields import (
    _choice,
    _integer,
    _kind,
    _mapping,
    _paths,
    _range,
    _shown,
)
from app.pullrequests.config.flags import _flag_statuses, _flags, _raw_of
from app.pullrequests.config.paths import path_matches
from app.pullrequests.config.schema import (
    MAX_YAML_BYTES,
    OVERSIZED_YAML,
    ROUNDINGS,
    CommentConfig,
    ConfigError,
    FlagRule,
    StatusRule,
)
from app.pullrequests.config.status import _status, _statuses


@dataclass(frozen=True, slots=True)
class CodecovConfig:
    precision: int = 2
    round: str = "down"
    range: tuple[float, float] = (60.0, 80.0)
    project_statuses: tuple[StatusRule, ...] = ()
    patch_statuses: tuple[StatusRule, ...] = ()
    comment: CommentConfig = field(default_factory=CommentConfig)
    notify_after_n_builds: int = 0
    #: Flags named in ``flags:`` or ``flag_management.individual_flags``.
    flags: dict[str, FlagRule] = field(default_factory=dict)
    default_flag_rule: FlagRule = field(default_factory=lambda: FlagRule(name=""))
    ignore: tuple[str, ...] = ()
    #: ``fixes: ["before::after"]`` as (before, after) pairs.
    fixes: tuple[tuple[str, str], ...] = ()
    errors: tuple[ConfigError, ...] = ()

    def flag_rule(self, flag: str) -> FlagRule:
        """The rule of ``flag``: its own entry, else the default rules."""
        found = self.flags.get(flag)
        if found is not None:
            return found
        default = self.default_flag_rule
        statuses = _flag_statuses(flag, [_raw_of(s) for s in default.statuses], [], "")
        return replace(default, name=flag, statuses=statuses)

    def is_carryforward(self, flag: str) -> bool:
        return self.flag_rule(flag).carryforward

    def carryforward_flags(self, known: Iterable[str] = ()) -> tuple[str, ...]:
        """Flags with ``carryforward: true``: those the file names, and of ``known``
        (flags the ancestors had) those the default rules carry."""
        names = set(self.flags) | set(known)
        return tuple(sorted(name for name in names if self.is_carryforward(name)))

    def is_ignored(self, path: str) -> bool:
        return bool(self.ignore) and path_matches(self.ignore, path)

    def fix_path(self, path: str) -> str:
        """``path`` rewritten by the first matching ``fixes`` entry (``before::after``)."""
        for before, after in self.fixes:
            if before == "" or before == "^":  # "::prefix" adds a prefix to every path
                return after.rstrip("/") + "/" + path if after else path
            if path.startswith(before):
                rest = path[len(before) :]
                return (after.rstrip("/") + "/" + rest.lstrip("/")) if after else rest.lstrip("/")
        return path


def default_config() -> CodecovConfig:
    """Codecov's defaults: project and patch statuses on, the comment on."""
    return CodecovConfig(
        project_statuses=(_status("project", "default", {}, [], "coverage.status.project"),),
        patch_statuses=(_status("patch", "default", {}, [], "coverage.status.patch"),),
    )


def parse_codecov_yaml(text: str | bytes | None) -> CodecovConfig:
    """Parse and validate a ``codecov.yml``; ``None`` or empty: the defaults.

    Never raises for bad input: unreadable YAML is one error on the key
    ``(file)`` and the defaults are used.
    """
    if text is None:
        return default_config()
    if len(text) > MAX_YAML_BYTES or text == OVERSIZED_YAML:
        return replace(
            default_config(),
            errors=(ConfigError("(file)", f"larger than {MAX_YAML_BYTES} bytes"),),
        )
    try:
        data = yamlfile.load(text)
    except yamlfile.YamlProblem as exc:
        return replace(default_config(), errors=(ConfigError("(file)", str(exc)),))
    if data is None:
        return default_config()
    try:
        return validate(data)
    except Exception as exc:  # a file must never stop the feedback: any failure is its error
        problem = f"could not be applied ({type(exc).__name__})"
        return replace(default_config(), errors=(ConfigError("(file)", problem),))


def validate(data: object) -> CodecovConfig:
    """The typed settings of an already-loaded YAML document."""
    errors: list[ConfigError] = []
    if not isinstance(data, dict):
        return replace(
            default_config(),
            errors=(ConfigError("(file)", f"must be a mapping, not {_kind(data)}"),),
        )
    base = default_config()
    coverage = _mapping(data, "coverage", errors, "coverage")
    precision = _integer(coverage, "precision", errors, "coverage.precision", base.precision, 0, 5)
    rounding = _choice(coverage, "round", errors, "coverage.round", ROUNDINGS, base.round)
    cov_range = _range(coverage, errors, base.range)
    project, patch = base.project_statuses, base.patch_statuses
    status = _mapping(coverage, "status", errors, "coverage.status", allow_bool=True)
    if status is False:
        project, patch = (), ()
    elif isinstance(status, dict):
        project = _statuses(status, "project", errors, base.project_statuses)
        patch = _statuses(status, "patch", errors, base.patch_statuses)
    comment = _comment(data, errors)
    codecov = _mapping(data, "codecov", errors, "codecov")
    notify = _mapping(codecov, "notify", errors, "codecov.notify")
    after = _integer(notify, "after_n_builds", errors, "codecov.notify.after_n_builds", 0, 0)
    flags, default_rule = _flags(data, errors)
    ignore = _paths(data.get("ignore"), errors, "ignore") if "ignore" in data else None
    fixes = _fixes(data.get("fixes"), errors) if "fixes" in data else ()
    return CodecovConfig(
        precision=precision,
        round=rounding,
        range=cov_range,
        project_statuses=project,
        patch_statuses=patch,
        comment=comment,
        notify_after_n_builds=after,
        flags=flags,
        default_flag_rule=default_rule,
        ignore=ignore or (),
        fixes=fixes,
        errors=tuple(errors),
    )


def _fixes(value: object, errors: list[ConfigError]) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        errors.append(
            ConfigError("fixes", f'must be a list of "before::after", not {_kind(value)}')
        )
        return ()
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or "::" not in item:
            problem = f'must be "before::after", not {_shown(item)}'
            errors.append(ConfigError(f"fixes[{i}]", problem))
            continue
        before, _, after = item.partition("::")
        out.append((before.removeprefix("./"), after.removeprefix("./")))
    return tuple(out)
