"""``codecov.yml``'s typed settings, one per section, and the error of a key
that breaks the schema."""

from __future__ import annotations

from dataclasses import dataclass

#: Where Codecov looks for the file, in order (``shared:yaml/fetcher.py``).
CODECOV_YAML_PATHS: tuple[str, ...] = tuple(
    f"{folder}{name}"
    for folder in ("", "dev/", ".github/")
    for name in ("codecov.yml", ".codecov.yml", "codecov.yaml", ".codecov.yaml")
)

#: Most bytes of YAML read (a repository file or a stored one).
MAX_YAML_BYTES = 256 * 1024
#: What a file over ``MAX_YAML_BYTES`` is known by once the provider's answer
#: was refused (its text is never kept): not YAML (U+0001 cannot be in a YAML
#: stream), so no file that loads equals it.
OVERSIZED_YAML = f"\x01codecov.yml over {MAX_YAML_BYTES} bytes\x01"

#: Longest key and message of a :class:`ConfigError` (the comment shows each).
MAX_ERROR_KEY_CHARS = 200
MAX_ERROR_MESSAGE_CHARS = 400

STATUS_RESULTS = ("success", "failure", "error", "ignore")
COMMENT_BEHAVIORS = ("default", "once", "new", "spammy")
ROUNDINGS = ("down", "up", "nearest")


@dataclass(frozen=True, slots=True)
class ConfigError:
    """One key of the file that does not fit the schema, and why."""

    key: str  # dotted path, e.g. ``coverage.status.project.default.target``
    message: str

    def __post_init__(self) -> None:
        # a key or a value quoted from the file is the file's: never whole
        for name, most in (("key", MAX_ERROR_KEY_CHARS), ("message", MAX_ERROR_MESSAGE_CHARS)):
            text = getattr(self, name)
            if len(text) > most:
                object.__setattr__(self, name, text[: most - 1] + "…")

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


#: covworker's default ``comment.layout`` (see :class:`CommentConfig`).
DEFAULT_COMMENT_LAYOUT = ("condensed_header", "diff", "flags", "files", "condensed_footer")


@dataclass(frozen=True, slots=True)
class CommentConfig:
    """``comment:`` of ``codecov.yml``; each key the file leaves out keeps its default.

    The defaults are the comment Codecov posts today on its own repositories
    (``docs/pull-requests.md``): the header lines, then the Coverage Diff,
    the flags and the files folded under "Additional details and impacted
    files", then the short footer. Codecov's site defaults differ (no fold);
    ``layout: "header, diff, flags, files, footer"`` with
    ``hide_comment_details: false`` gives Codecov's older full comment.
    """

    enabled: bool = True
    layout: tuple[str, ...] = DEFAULT_COMMENT_LAYOUT
    behavior: str = "default"
    #: False, or the conditions of which one must hold (``any_change``,
    #: ``coverage_drop``, ``uncovered_patch``); ``and`` joins are all-of.
    require_changes: bool | str = False
    require_base: bool = False
    require_head: bool = True
    after_n_builds: int = 0
    show_carryforward_flags: bool = False
    hide_project_coverage: bool = False
    #: Fold the middle sections (diff, flags, files, old footer) in ``<details>``.
    hide_comment_details: bool = True


@dataclass(frozen=True, slots=True)
class FlagRule:
    """A flag's settings: ``flag_management.default_rules`` overlaid with its own."""

    name: str
    carryforward: bool = False
    paths: tuple[str, ...] | None = None
    statuses: tuple[StatusRule, ...] = ()
    after_n_builds: int = 0
