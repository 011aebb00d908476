"""Pull-request feedback as Codecov gives it: pure logic, no provider calls.

- :mod:`.config`: ``codecov.yml`` parsed and validated into typed settings;
- :mod:`.diff`: unified diffs (GitHub, GitLab, ``git diff``) as added and
  removed lines per file, with the base-to-head line shift;
- :mod:`.compare`: the one comparison of a head report with its base (totals,
  patch coverage, indirect changes, flags), a :class:`.comparison.Comparison`
  that the comment, the statuses, the pages and the webhook read; one file's
  lines compared in :mod:`.file_compare`, cached per-file totals compared in
  :mod:`.cached_totals`;
- :mod:`.statuses`: ``codecov/project`` and ``codecov/patch`` states and
  descriptions, worded as Codecov words them;
- :mod:`.comment`: the pull-request comment in Codecov's layout;
- :mod:`.carryforward`: which ancestor's coverage a flag no upload names
  takes, and the report with it (the merge reads the ancestors:
  ``app.merge.carryforward``).

The provider clients and delivery (``app/providers``) call these; nothing
here does I/O (``tests/test_import_graph.py`` checks it).
The names below are the package's interface.
"""

from app.pullrequests.comment import CommentLinks, PullInfo, render_comment, should_comment
from app.pullrequests.compare import compare
from app.pullrequests.comparison import Comparison, FlagInput
from app.pullrequests.config import CODECOV_YAML_PATHS, CodecovConfig, parse_codecov_yaml
from app.pullrequests.diff import (
    Diff,
    from_github_compare,
    from_gitlab_compare,
    parse_patch,
    parse_unified_diff,
)
from app.pullrequests.statuses import CommitStatus, commit_statuses, pending_statuses

__all__ = [
    "CODECOV_YAML_PATHS",
    "CodecovConfig",
    "CommentLinks",
    "CommitStatus",
    "Comparison",
    "Diff",
    "FlagInput",
    "PullInfo",
    "commit_statuses",
    "compare",
    "from_github_compare",
    "from_gitlab_compare",
    "parse_codecov_yaml",
    "parse_patch",
    "parse_unified_diff",
    "pending_statuses",
    "render_comment",
    "should_comment",
]
