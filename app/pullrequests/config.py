"""``codecov.yml``: Codecov's schema for the keys covworker acts on.

An invalid file is never fatal: every key that breaks the schema becomes a
:class:`ConfigError` naming the key and why, that key falls back to its
default, and the rest of the file still applies (the comment's footer and
the commit show the errors, as Codecov shows them).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import UnionType
from typing import Any

import re2

from app.pullrequests import yamlfile

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


# -- paths ------------------------------------------------------------------


def path_matches(patterns: tuple[str, ...], path: str) -> bool:
    """Codecov's ``paths``/``ignore`` match.

    A pattern is a regex if it starts with ``^`` or ends with ``$``; a glob if
    it has ``*``, ``?`` or ``[``; else a path prefix. ``!`` in front negates:
    a path matches when a positive pattern (or none is given) matches and no
    negated one does.
    """
    positive = [p for p in patterns if not p.startswith("!")]
    negative = [p[1:] for p in patterns if p.startswith("!")]
    if positive and not any(_compiled(p).match(path) for p in positive):
        return False
    return not any(_compiled(p).match(path) for p in negative)


#: RE2's options: errors are returned to the user, not written to stderr.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    """The pattern compiled by RE2: matching is linear in the path, whatever
    the pattern (``^(a+)+$`` costs what ``^a+$`` does); a pattern RE2 cannot
    take (a backreference, a lookaround, a program over its memory bound)
    is ``re2.error``, a configuration error naming it."""
    return re2.compile(_to_regex(pattern), options=_RE2_OPTIONS)


def _to_regex(pattern: str) -> str:
    if pattern.startswith("^") or pattern.endswith("$"):
        return pattern
    pattern = pattern.removeprefix("./")
    if any(c in pattern for c in "*?["):
        return "^" + _glob(pattern) + "$"
    return "^" + re.escape(pattern.rstrip("/")) + "(/.*)?$" if pattern else "^.*$"


def _glob(pattern: str) -> str:
    """A glob as a regex: ``**`` any depth, ``*`` within a segment, ``?`` one char."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    if pattern.endswith("/"):
        out.append(".*")
    return "".join(out)


# -- the sections -------------------------------------------------------------


#: What a YAML value is, in an error's words; the first type that fits (a bool is an int).
_KINDS: tuple[tuple[type | UnionType, str], ...] = (
    (type(None), "empty"),
    (bool, "a boolean"),
    (int | float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "a mapping"),
)


#: How a value from the file is shown in an error: a few items and characters
#: of it, never the whole (a value shared through aliases can be huge).
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 2, 40, 40
_SHOWN.maxlist = _SHOWN.maxdict = _SHOWN.maxtuple = 3


def _shown(value: object) -> str:
    return _SHOWN.repr(value)


def _kind(value: object) -> str:
    return next((kind for t, kind in _KINDS if isinstance(value, t)), type(value).__name__)


def _mapping(
    parent: dict[str, Any] | Any,
    key: str,
    errors: list[ConfigError],
    where: str,
    *,
    allow_bool: bool = False,
) -> Any:
    """``parent[key]`` as a mapping ({} when absent or wrong; a bool if allowed)."""
    if not isinstance(parent, dict) or key not in parent or parent[key] is None:
        return {}
    value = parent[key]
    if isinstance(value, dict):
        return value
    if allow_bool and isinstance(value, bool):
        return value
    wanted = "a mapping or true/false" if allow_bool else "a mapping"
    errors.append(ConfigError(where, f"must be {wanted}, not {_kind(value)}"))
    return {}


def _integer(
    parent: Any,
    key: str,
    errors: list[ConfigError],
    where: str,
    default: int,
    low: int,
    high: int | None = None,
) -> int:
    if not isinstance(parent, dict) or parent.get(key) is None:
        return default
    value = parent[key]
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(ConfigError(where, f"must be a whole number, not {_kind(value)}"))
        return default
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        errors.append(ConfigError(where, f"must be {bound}, not {value}"))
        return default
    return value


def _boolean(parent: Any, key: str, errors: list[ConfigError], where: str, default: bool) -> bool:
    if not isinstance(parent, dict) or parent.get(key) is None:
        return default
    value = parent[key]
    if not isinstance(value, bool):
        errors.append(ConfigError(where, f"must be true or false, not {_kind(value)}"))
        return default
    return value


def _choice(
    parent: Any,
    key: str,
    errors: list[ConfigError],
    where: str,
    choices: tuple[str, ...],
    default: str,
) -> str:
    if not isinstance(parent, dict) or parent.get(key) is None:
        return default
    value = parent[key]
    if not isinstance(value, str) or value not in choices:
        shown = _shown(value) if isinstance(value, str) else _kind(value)
        errors.append(ConfigError(where, f"must be one of {', '.join(choices)}, not {shown}"))
        return default
    return value


def _percent(value: object, where: str, errors: list[ConfigError]) -> float | None:
    """``80``, ``80.5`` or ``"80%"`` → 80.0 (0..100); None (and an error) otherwise."""
    number: float | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().removesuffix("%"))
        except ValueError:
            number = None
    if number is None or math.isnan(number) or not 0 <= number <= 100:
        errors.append(ConfigError(where, f"must be a percentage 0..100, not {_shown(value)}"))
        return None
    return number


def _range(
    coverage: Any, errors: list[ConfigError], default: tuple[float, float]
) -> tuple[float, float]:
    """``coverage.range``: ``"60...80"``, ``"60..80"`` or ``[60, 80]``."""
    if not isinstance(coverage, dict) or coverage.get("range") is None:
        return default
    value = coverage["range"]
    parts: list[object]
    if isinstance(value, str):
        parts = [p for p in re.split(r"\.{2,3}", value.strip()) if p != ""]
    elif isinstance(value, list):
        parts = list(value)
    else:
        parts = []
    if len(parts) != 2:
        errors.append(
            ConfigError(
                "coverage.range", f'must be "LOW...HIGH" or [LOW, HIGH], not {_shown(value)}'
            )
        )
        return default
    bad: list[ConfigError] = []
    low, high = (_percent(p, "coverage.range", bad) for p in parts)
    if bad or low is None or high is None:
        errors.append(
            ConfigError("coverage.range", f"must hold two percentages 0..100, not {_shown(value)}")
        )
        return default
    if low > high:
        errors.append(ConfigError("coverage.range", f"its low end {low:g} is above {high:g}"))
        return default
    return (low, high)


def _strings(value: object, errors: list[ConfigError], where: str, what: str) -> list[str] | None:
    """A list of non-empty strings (one string is a list of one); None if absent,
    or, with an error naming ``what`` the list holds, if it is anything else."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        errors.append(ConfigError(where, f"must be a list of {what}"))
        return None
    return value


def _paths(value: object, errors: list[ConfigError], where: str) -> tuple[str, ...] | None:
    patterns = _strings(value, errors, where, "path patterns (strings)")
    if patterns is None:
        return None
    good = []
    for pattern in patterns:
        try:
            _compiled(pattern.removeprefix("!"))
        except re2.error as exc:
            reason = exc.args[0] if exc.args else exc
            why = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
            errors.append(ConfigError(where, f"{_shown(pattern)} is not a valid pattern: {why}"))
            continue
        good.append(pattern)
    return tuple(good)


def _names(value: object, errors: list[ConfigError], where: str) -> tuple[str, ...] | None:
    names = _strings(value, errors, where, "flag names")
    return None if names is None else tuple(names)


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


_COMMENT_KEYS = {
    "layout",
    "behavior",
    "require_changes",
    "require_base",
    "require_head",
    "after_n_builds",
    "show_carryforward_flags",
    "hide_project_coverage",
    "hide_comment_details",
    # accepted by Codecov, not acted on by covworker
    "branches",
    "show_critical_paths",
}
#: Sections of ``comment.layout`` Codecov knows (``tree`` and ``files`` are one table here).
_LAYOUT_SECTIONS = {
    "header",
    "condensed_header",
    "diff",
    "flags",
    "files",
    "tree",
    "footer",
    "condensed_footer",
    "condensed_files",
    "reach",
    "components",
    "newheader",
    "newfooter",
    "newfiles",
    "betaprofiling",
    "feedback",
    "changes",
    "suggestions",
    "sunburst",
    "uncovered",
    "announcements",
    "messages_to_user",
}
_REQUIREMENTS = ("any_change", "coverage_drop", "uncovered_patch")


def _comment(data: dict[str, Any], errors: list[ConfigError]) -> CommentConfig:
    default = CommentConfig()
    value = data.get("comment")
    if value is None or value is True:
        return default
    if value is False:
        return replace(default, enabled=False)
    if not isinstance(value, dict):
        errors.append(ConfigError("comment", f"must be false or a mapping, not {_kind(value)}"))
        return default
    for key in value:
        if key not in _COMMENT_KEYS:
            errors.append(ConfigError(f"comment.{key}", "is not a comment setting"))
    layout = default.layout
    if value.get("layout") is not None:
        raw = value["layout"]
        if not isinstance(raw, str):
            errors.append(ConfigError("comment.layout", f"must be a string, not {_kind(raw)}"))
        else:
            sections = tuple(s.strip() for s in raw.split(",") if s.strip())
            unknown = [
                s
                for s in sections
                if s.split(":")[0] not in _LAYOUT_SECTIONS
                and not s.startswith(("flag", "component"))
            ]
            bad_limit = [
                s for s in sections if ":" in s and not s.split(":", 1)[1].strip().isdigit()
            ]
            if unknown:
                errors.append(
                    ConfigError("comment.layout", f"unknown section(s): {', '.join(unknown)}")
                )
            elif bad_limit:
                errors.append(
                    ConfigError(
                        "comment.layout", f"a section's limit must be a number: {bad_limit[0]}"
                    )
                )
            else:
                layout = sections
    require_changes: bool | str = False
    raw_req = value.get("require_changes")
    if isinstance(raw_req, bool):
        require_changes = raw_req
    elif isinstance(raw_req, str):
        words = [w for w in re.split(r"\s+(?:or|and)\s+", raw_req.strip()) if w]
        if words and all(w in _REQUIREMENTS for w in words):
            require_changes = raw_req.strip()
        else:
            errors.append(
                ConfigError(
                    "comment.require_changes",
                    f"must be true, false or conditions of {', '.join(_REQUIREMENTS)} "
                    f"joined by 'or'/'and', not {_shown(raw_req)}",
                )
            )
    elif raw_req is not None:
        errors.append(
            ConfigError(
                "comment.require_changes", f"must be true, false or a string, not {_kind(raw_req)}"
            )
        )
    return CommentConfig(
        enabled=True,
        layout=layout,
        behavior=_choice(
            value, "behavior", errors, "comment.behavior", COMMENT_BEHAVIORS, default.behavior
        ),
        require_changes=require_changes,
        require_base=_boolean(value, "require_base", errors, "comment.require_base", False),
        require_head=_boolean(value, "require_head", errors, "comment.require_head", True),
        after_n_builds=_integer(value, "after_n_builds", errors, "comment.after_n_builds", 0, 0),
        show_carryforward_flags=_boolean(
            value, "show_carryforward_flags", errors, "comment.show_carryforward_flags", False
        ),
        hide_project_coverage=_boolean(
            value, "hide_project_coverage", errors, "comment.hide_project_coverage", False
        ),
        hide_comment_details=_boolean(
            value,
            "hide_comment_details",
            errors,
            "comment.hide_comment_details",
            default.hide_comment_details,
        ),
    )


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
