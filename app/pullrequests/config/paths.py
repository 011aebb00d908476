"""Codecov's path patterns (``ignore`` and every ``paths`` key), matched by RE2."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import re2


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
