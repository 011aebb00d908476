"""A commit's change against its base, on per-file totals (what the pages cache).

The one comparison engine is :mod:`app.pullrequests.compare` (on totals:
:mod:`app.pullrequests.cached_totals`); the pages, the
notification and the pull-request feedback all use it. These names stay here
for the pages' imports.
"""

from app.pullrequests.cached_totals import compare_flags, compare_totals, file_changes
from app.pullrequests.cached_totals import report_change as compare
from app.pullrequests.comparison import DEFAULT_TOP_FILES, change

__all__ = [
    "DEFAULT_TOP_FILES",
    "change",
    "compare",
    "compare_flags",
    "compare_totals",
    "file_changes",
]
