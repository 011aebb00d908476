"""What the payload tests share: the captured uploads and the reports they carry."""

from __future__ import annotations

from tests.support.paths import FIXTURES

#: PUT bodies captured from the real uploaders (tests/fixtures/payloads).
PAYLOADS = FIXTURES / "payloads"
#: The coverage.py reports the captured payloads carry.
PY_REPORTS = FIXTURES / "reports" / "coveragepy"
#: The byte limit the payload tests decode within.
LIMIT = 10 * 1024 * 1024
#: The files of the captured project, repository-relative.
CALC = ["calc/__init__.py", "calc/main.py", "calc/ops.py"]
