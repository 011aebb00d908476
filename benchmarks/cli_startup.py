"""CPU time of ``covworker`` commands that neither parse nor merge, beside ``python -c pass``.

Each command runs ``--repeat`` times as a child process; its user + system
CPU time is read from ``getrusage(RUSAGE_CHILDREN)`` around each run, and
the median is reported, in one run with the interpreter's own start-up.
Target: at most 0.25 s of CPU (median of 10).

    python benchmarks/cli_startup.py --repeat 10
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "covworker --help": [sys.executable, "-m", "app.cli.main", "--help"],
    "covworker --version": [sys.executable, "-m", "app.cli.main", "--version"],
    "covworker run-local --help": [sys.executable, "-m", "app.cli.main", "run-local", "--help"],
    "covworker serve --help": [sys.executable, "-m", "app.cli.main", "serve", "--help"],
    "covworker repo --help": [sys.executable, "-m", "app.cli.main", "repo", "--help"],
    "covworker status (no arguments: usage error)": [
        sys.executable,
        "-m",
        "app.cli.main",
        "status",
    ],
}


def cpu_of(command: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}; median of {args.repeat} runs each")
    print("| command | CPU (median) | CPU (max) |")
    print("|---|---:|---:|")
    for name, command in COMMANDS.items():
        runs = [cpu_of(command) for _ in range(args.repeat)]
        print(f"| `{name}` | {statistics.median(runs):.3f} s | {max(runs):.3f} s |")


if __name__ == "__main__":
    main()
