"""``python -m benchmarks.stampede``: the finisher stampede, from a checkout's root.

The options are the benchmark's own (``python -m benchmarks.stampede --help``);
``covworker bench ...`` runs this same module in a subprocess.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from benchmarks.stampede.cli import add_bench_parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stampede")
    add_bench_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
