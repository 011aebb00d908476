"""``covworker bench``: the finisher stampede, measured against the designs it replaces.

The driver (:mod:`app.bench.runner`) runs each strategy against real Redis,
PostgreSQL and ``dramatiq app.bench.worker`` processes, in a fresh database
and Redis namespace of its own, and reads back what the workers recorded
(:mod:`app.bench.instrument`). The strategies live in
:mod:`app.bench.strategies`; ``covworker`` is the real app, unchanged.
"""
