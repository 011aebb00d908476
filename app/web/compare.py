"""A commit's change against its base, on per-file totals (what the pages cache).

The one comparison engine is :mod:`app.pullrequests.compare`; the pages, the
notification and the pull-request feedback all use it. These names stay here
for the pages' imports.
"""

from app.pullrequests.compare import (
    DEFAULT_TOP_FILES,
    change,
    compare_flags,
    compare_totals,
    file_changes,
)
from app.pullrequests.compare import report_change as compare

__all__ = [
    "DEFAULT_TOP_FILES",
    "change",
    "compare",
    "compare_flags",
    "compare_totals",
    "file_changes",
]
