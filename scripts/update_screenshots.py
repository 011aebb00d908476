"""Refresh the screenshots the README and docs show (docs/screenshots/) from a browser run.

The browser tests (tests/browser) save a screenshot of every page they check
to tests/browser/screenshots/; this runs them and copies the ones the docs
shows into docs/screenshots/. From the checkout's root, with the services the
browser tests need (README, "Tests")::

    python scripts/update_screenshots.py            # run tests/browser, then copy
    python scripts/update_screenshots.py --no-run   # copy what the last run saved
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "browser" / "screenshots"
DOCS = ROOT / "docs" / "screenshots"
#: The screenshots the README and the docs show, by page.
README_PAGES = (
    "repositories",
    "commits",
    "commit-vs-base",
    "file",
    "ops",
    "repository-history",
    "pulls",
    "file-tree",
    "file-leads",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="copy without running the tests")
    args = parser.parse_args()
    if not args.no_run:
        tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/browser"]
        if subprocess.run(tests, cwd=ROOT).returncode != 0:
            print("the browser tests failed; docs/screenshots left as they were", file=sys.stderr)
            return 1
    missing = [name for name in README_PAGES if not (SHOTS / f"{name}.png").is_file()]
    if missing:
        print(f"no screenshot of {', '.join(missing)} in {SHOTS}", file=sys.stderr)
        return 1
    DOCS.mkdir(parents=True, exist_ok=True)
    for name in README_PAGES:
        shutil.copy(SHOTS / f"{name}.png", DOCS / f"{name}.png")
        print(f"docs/screenshots/{name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
