"""``codecov.yml``: Codecov's schema for the keys covworker acts on.

An invalid file is never fatal: every key that breaks the schema becomes a
:class:`ConfigError` naming the key and why, that key falls back to its
default, and the rest of the file still applies (the comment's footer and
the commit show the errors, as Codecov shows them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Where Codecov looks for the file, in order (``shared:yaml/fetcher.py``).
CODECOV_YAML_PATHS: tuple[str, ...] = tuple(
    f"{folder}{name}"
    for folder in ("", "dev/", ".github/")
    for name in ("codecov.yml", ".codecov.yml", "codecov.yaml", ".codecov.yaml")
)

#: Most bytes of YAML read (a repository file or a stored one).
MAX_YAML_BYTES = 256 * 1024

STATUS_RESULTS = ("success", "failure", "error", "ignore")
COMMENT_BEHAVIORS = ("default", "once", "new", "spammy")
ROUNDINGS = ("down", "up", "nearest")


@dataclass(frozen=True, slots=True)
class ConfigError:
    """One key of the file that does not fit the schema, and why."""

    key: str  # dotted path, e.g. ``coverage.status.project.default.target``
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


@dataclass(frozen=True, slots=True)
class StatusRule:
    """One named status (``coverage.status.project.<name>``, or a flag's)."""

    kind: str  # "project" | "patch"
    name: str  # "default" gives the context ``codecov/<kind>``
    target: float | None = None  # None: ``auto`` (the base's coverage)
    threshold: float = 0.0
    base: str = "auto"  # parent | pr | auto
    flags: tuple[str, ...] | None = None  # None: every flag
    paths: tuple[str, ...] | None = None  # None: every file
    informational: bool = False
    only_pulls: bool = False
    if_ci_failed: str = "error"
    if_not_found: str = "success"
    #: ``codecov/<kind>`` or ``codecov/<kind>/<name>``.
    context: str = ""


@dataclass(frozen=True, slots=True)
class CommentConfig:
    enabled: bool = True
    layout: tuple[str, ...] = ("header", "diff", "flags", "files", "footer")
    behavior: str = "default"
    #: False, or the conditions of which one must hold (``any_change``,
    #: ``coverage_drop``, ``uncovered_patch``); ``and`` joins are all-of.
    require_changes: bool | str = False
    require_base: bool = False
    require_head: bool = True
    after_n_builds: int = 0
    show_carryforward_flags: bool = False
    hide_project_coverage: bool = False


@dataclass(frozen=True, slots=True)
class FlagRule:
    """A flag's settings: ``flag_management.default_rules`` overlaid with its own."""

    name: str
    carryforward: bool = False
    paths: tuple[str, ...] | None = None
    statuses: tuple[StatusRule, ...] = ()
    after_n_builds: int = 0


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
        raise NotImplementedError

    def is_carryforward(self, flag: str) -> bool:
        raise NotImplementedError

    def carryforward_flags(self) -> tuple[str, ...]:
        """Flags named in the file with ``carryforward: true`` (for the ancestor search)."""
        raise NotImplementedError

    def is_ignored(self, path: str) -> bool:
        raise NotImplementedError


def default_config() -> CodecovConfig:
    """Codecov's defaults: project and patch statuses on, the comment on."""
    raise NotImplementedError


def parse_codecov_yaml(text: str | bytes | None) -> CodecovConfig:
    """Parse and validate a ``codecov.yml``; ``None`` or empty: the defaults.

    Never raises for bad input: unreadable YAML is one error on the key
    ``(file)`` and the defaults are used.
    """
    raise NotImplementedError


def validate(data: object) -> CodecovConfig:
    """The typed settings of an already-loaded YAML document."""
    raise NotImplementedError


def path_matches(patterns: tuple[str, ...], path: str) -> bool:
    """Codecov's ``paths``/``ignore`` match: a regex if it starts with ``^``
    or ends with ``$``, else a glob (``**``, ``*``, ``?``), else a prefix."""
    raise NotImplementedError
