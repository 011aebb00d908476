"""A module fixture's result made once per test run, not once per xdist worker.

``pytest -n 6 --dist worksteal`` hands the tests of one module to several
workers, and each worker sets a module fixture up again: a fixture that
runs a whole pipeline (tests/e2e/test_real_pulls.py) ran three to six times
in one run. :func:`once` runs ``make`` in the first worker to ask and keeps
its JSON in the run's shared temporary directory (under a file lock); the
others read it. Without xdist it is a plain call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from filelock import FileLock


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[], Any]) -> Any:
    """``make()``'s value (JSON), made by one worker of the run."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if base.name.startswith("popen-gw") else base  # xdist: gwN's parent
    path = shared / f"once-{name}.json"
    with FileLock(str(path) + ".lock"):
        if path.exists():
            return json.loads(path.read_text())
        value = make()
        path.write_text(json.dumps(value))
        return value
