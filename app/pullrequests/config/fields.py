"""The value checks every section shares: each bad value becomes a
:class:`~app.pullrequests.config.schema.ConfigError` naming its key, and the
key keeps its default."""

from __future__ import annotations

import math
import re
import reprlib
from types import UnionType
from typing import Any

import re2

from app.pullrequests.config.paths import _compiled
from app.pullrequests.config.schema import ConfigError

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
