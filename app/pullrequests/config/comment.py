"""``comment``: whether and how the pull-request comment is posted."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from app.pullrequests.config.fields import _boolean, _choice, _integer, _kind, _shown
from app.pullrequests.config.schema import COMMENT_BEHAVIORS, CommentConfig, ConfigError

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
