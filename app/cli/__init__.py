"""The ``covworker`` command line."""
