"""Exit codes of ``covworker``: what a CI step or a script can test."""

#: Done.
EXIT_OK = 0
#: The commit is unknown, an upload failed, or coverage is under ``--fail-under``.
EXIT_FAILED = 1
#: Bad arguments or configuration.
EXIT_USAGE = 2
#: Redis or PostgreSQL cannot be reached.
EXIT_UNAVAILABLE = 3
#: ``upload --wait`` gave up before the commit settled.
EXIT_TIMEOUT = 4
