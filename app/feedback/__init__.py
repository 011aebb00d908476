"""Pull-request feedback, one way: :mod:`.delivery` runs an outbox row and,
for a ``prepare`` row, calls :mod:`.prepare` (pull request, base,
codecov.yml, diff, the statuses and the comment rendered); both write
through :mod:`.rows`. The table's words and what the surfaces read of it are
:mod:`app.db.pull_deliveries`, below this package.
"""
