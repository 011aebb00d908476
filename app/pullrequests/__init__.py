"""Pull-request feedback as Codecov gives it: pure logic, no provider calls.

- :mod:`.config`: ``codecov.yml`` parsed and validated into typed settings;
- :mod:`.diff`: unified diffs (GitHub, GitLab, ``git diff``) as added and
  removed lines per file, with the base-to-head line shift;
- :mod:`.compare`: the one comparison of a head report with its base (totals,
  patch coverage, indirect changes, flags) that the comment, the statuses,
  the pages and the webhook read;
- :mod:`.statuses`: ``codecov/project`` and ``codecov/patch`` states and
  descriptions, worded as Codecov words them;
- :mod:`.comment`: the pull-request comment in Codecov's layout;
- :mod:`.carryforward`: flags carried from an ancestor when no upload names them.

The provider clients and delivery (``app/providers``) call these; nothing
here does I/O except :mod:`.carryforward`, which reads the database.
"""
