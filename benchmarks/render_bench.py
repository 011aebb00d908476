"""Render ``covworker bench --json`` documents as the Markdown in RESULTS-bench.md.

Not a benchmark itself: it prints, for each JSON file given, a heading with
the command's scenario and the tables the terminal showed (results with
ratios to ``covworker``, targets, per-run figures), so the results file is
the tool's own output, not figures copied by hand.

    python benchmarks/render_bench.py burst.json fleet.json ... > part.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.stampede.report import markdown_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", type=Path, nargs="+", help="files written by --json")
    args = parser.parse_args()
    for path in args.documents:
        print(markdown_report(json.loads(path.read_text())))
        print()


if __name__ == "__main__":
    main()
