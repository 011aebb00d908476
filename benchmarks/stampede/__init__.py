"""``covworker bench``: the finisher stampede, measured against the designs it replaces.

The driver (:mod:`benchmarks.stampede.runner`) runs each strategy against real Redis,
PostgreSQL and ``dramatiq benchmarks.stampede.worker`` processes, in a fresh database
and Redis namespace of its own, and reads back what the workers recorded
(:mod:`benchmarks.stampede.instrument`). The strategies live in
:mod:`benchmarks.stampede.strategies`; ``covworker`` is the real app, unchanged.
"""
