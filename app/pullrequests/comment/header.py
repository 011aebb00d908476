"""The header lines, in Codecov's current wording (``header``,
``condensed_header`` and ``newheader`` all write them, as Codecov's
``HeaderSectionWriter`` does):

- patch: ``:white_check_mark: All modified and coverable lines are covered
  by tests.`` or ``:x: Patch coverage is `61.11%` with `7 lines` in your
  changes missing coverage. Please review.`` (misses + partials);
- covworker's own line naming the diff's files it could not measure;
- project, unless ``hide_project_coverage``: ``:white_check_mark: Project
  coverage is 92.26%. Comparing base (`42aa7cc`) to head (`b14d01b`).``, or
  ``:warning: Please upload report for BASE (`main@1234567`)…`` without a
  base report, and ``:warning: Report is N commits behind head on main.``;
- the status lines the caller gives (the tests line).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.pullrequests.comment.text import CommentLinks, PullInfo, code, escape_markdown, link
from app.pullrequests.comparison import Comparison
from app.pullrequests.config import CodecovConfig
from app.pullrequests.numbers import coverage, percent

UPLOADER_DOCS = "https://docs.codecov.com/docs/codecov-uploader"
MISSING_DOCS = "https://docs.codecov.io/docs/error-reference#section-missing-{}-commit"
ALL_COVERED = ":white_check_mark: All modified and coverable lines are covered by tests."
#: Files named in the header's "not measured" line; the rest are counted.
NOT_MEASURED_NAMED = 10


def header_lines(
    comparison: Comparison,
    config: CodecovConfig,
    pull: PullInfo,
    links: CommentLinks,
    status_lines: Sequence[str] = (),
) -> list[str]:
    lines = [_patch_line(comparison, config), *not_measured(comparison)]
    if not config.comment.hide_project_coverage:
        lines.append(_project_line(comparison, config, pull, links))
        if pull.behind_by:
            branch = escape_markdown(pull.base_branch)
            lines.append(f":warning: Report is {pull.behind_by} commits behind head on {branch}.")
    lines += status_lines
    return lines


def _patch_line(comparison: Comparison, config: CodecovConfig) -> str:
    patch = comparison.patch
    uncovered = patch.misses + patch.partials if patch is not None else 0
    patch_cov = coverage(patch)
    if not uncovered or patch_cov is None:
        return ALL_COVERED
    noun = "lines" if uncovered > 1 else "line"
    return (
        f":x: Patch coverage is `{percent(config, patch_cov)}%` with "
        f"`{uncovered} {noun}` in your changes missing coverage. Please review."
    )


def _project_line(
    comparison: Comparison, config: CodecovConfig, pull: PullInfo, links: CommentLinks
) -> str:
    head_cov = coverage(comparison.head)
    if comparison.base is not None and comparison.base_sha and head_cov is not None:
        base = link(f"`{comparison.base_sha[:7]}`", links.commit_url(comparison.base_sha))
        head = link(f"`{comparison.head_sha[:7]}`", links.commit_url(comparison.head_sha))
        return (
            f":white_check_mark: Project coverage is {percent(config, head_cov)}%. "
            f"Comparing base ({base}) to head ({head})."
        )
    what = "BASE" if comparison.base is None else "HEAD"
    branch = pull.base_branch if comparison.base is None else (pull.head_branch or "")
    sha = (pull.base_sha or "") if comparison.base is None else comparison.head_sha
    where = f"{code(branch)}@{code(sha[:7])}" if sha else code(branch)
    return (
        f":warning: Please [upload]({UPLOADER_DOCS}) report for {what} (`{where}`). "
        f"[Learn more]({MISSING_DOCS.format(what.lower())}) about missing {what} report."
    )


def not_measured(comparison: Comparison) -> list[str]:
    """The line naming the diff's files that patch coverage could not include.

    A file the provider listed without a patch (too large, binary) cannot
    have its added lines measured; a file list cut short at the provider's
    limit may leave files out. Both are said, never silently dropped.
    """
    paths = comparison.not_measured
    if not paths and not comparison.diff_truncated:
        return []
    parts: list[str] = []
    if paths:
        named = ", ".join(f"`{code(p)}`" for p in paths[:NOT_MEASURED_NAMED])
        more = len(paths) - NOT_MEASURED_NAMED
        noun = "file" if len(paths) == 1 else "files"
        parts.append(
            f"{len(paths)} {noun} of the diff not measured (the provider gave no patch): "
            + named
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    if comparison.diff_truncated:
        parts.append(
            "The provider's file list of the diff was cut short at its limit: "
            "files past it are not measured."
        )
    return [":warning: " + " ".join(parts)]
