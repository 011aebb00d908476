"""The public corpus of real reports (``shared/coverage-corpus`` beside the clone).

Its ``run.py`` parses each report with covworker and compares the totals
with an oracle that covworker did not compute. Every case must pass.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import SHARED
from tests.support.services import service_missing

pytestmark = pytest.mark.timeout(300)

RUN = SHARED / "coverage-corpus" / "run.py"


def test_every_public_corpus_case_passes() -> None:
    if not RUN.exists():
        service_missing("the public coverage corpus", f"{RUN} does not exist")
    done = subprocess.run(
        [sys.executable, str(RUN)], capture_output=True, text=True, timeout=240, check=False
    )
    summary = re.search(r"^(\d+) passed, (\d+) failed$", done.stdout, re.MULTILINE)
    assert summary, done.stdout[-2000:] + done.stderr[-2000:]
    failed = re.findall(r"^FAIL (\S+)", done.stdout, re.MULTILINE)
    assert failed == [] and int(summary[2]) == 0, done.stdout[-4000:]
    assert int(summary[1]) >= 130
