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
#: coverage.py with ``source = ["shapes"]`` (tests/fixtures/regenerate.sh pypackage):
#: ``<source>`` is the package directory, filenames are relative to it.
PKG_REPORTS = FIXTURES / "reports" / "pypackage"
#: That checkout's file list, as the uploaders send it.
PKG_NETWORK = (PKG_REPORTS / "network.txt").read_text().split()
#: Where the report was written (the checkout; its ``<source>`` is below it).
PKG_CHECKOUT = (PKG_REPORTS / "SOURCE_ROOT").read_text().strip()
