"""covworker: upload coverage reports, see what became of them, run the
whole pipeline in one process."""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pydantic
import redis
import sqlalchemy as sa

from app.cli import commands, exits, upload
from app.cli.render import err_console
from app.cli.repo import add_repo_parser
from app.cli.serve import add_serve_parser
from app.cli.upload import ServiceUnavailable
from app.errors import AmbiguousCommit, CommitNotFound, CovworkerError
from app.settings import describe_validation_error

DESCRIPTION = """covworker stores the coverage reports your CI jobs upload, merges every
upload of a commit into one report and notifies once the commit is settled."""
FORMATS = """report formats (recognised from the content, whatever the file name):
  Cobertura XML      coverage.py `coverage xml`, gcovr --xml, most JS/Java tools
  JaCoCo XML         jacoco.xml
  LCOV               lcov.info, coverage.info (gcov/lcov, c8, nyc, llvm-cov export)
  coverage.py JSON   `coverage json`
  Go coverprofile    `go test -coverprofile` (set, count and atomic modes)

exit codes: 0 done; 1 an upload failed or coverage is under --fail-under;
2 bad arguments or configuration; 3 Redis or PostgreSQL unreachable;
4 --wait gave up before the commit settled"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _seconds(*, zero_ok: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
            least = "0 or more" if zero_ok else "more than 0"
            raise argparse.ArgumentTypeError(f"{text!r}: seconds must be a finite number, {least}")
        return value

    return parse


def _package_version() -> str:
    try:
        return version("covworker")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


MIN_SWEEP_INTERVAL_S = 1.0


def _sweep_interval(text: str) -> float:
    value = _seconds(zero_ok=True)(text)
    if value < MIN_SWEEP_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the interval must be at least {MIN_SWEEP_INTERVAL_S:g} second "
            "(leave --every out to sweep once)"
        )
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="covworker",
        description=DESCRIPTION,
        epilog=FORMATS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"covworker {_package_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def commit_args(p: argparse.ArgumentParser, *, full: bool = False) -> None:
        p.add_argument(
            "--repo", required=True, help="repository, OWNER/NAME (case does not matter)"
        )
        p.add_argument(
            "--commit",
            required=True,
            help="the commit's full SHA (40 hex digits, or 64)"
            if full
            else "the commit's SHA, or a unique prefix of 7 or more hex digits",
        )

    p = sub.add_parser(
        "upload",
        help="upload coverage reports of a commit",
        description="Store coverage reports of a commit and queue them for the worker.",
        epilog=FORMATS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commit_args(p, full=True)
    p.add_argument("--flag", action="append", default=[], help="flag, e.g. unit (repeatable)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait until the commit is settled, print its coverage and every failed upload; "
        "exit 1 if an upload failed",
    )
    p.add_argument(
        "--timeout",
        type=_seconds(zero_ok=True),
        default=300.0,
        metavar="SECONDS",
        help="how long --wait waits (default 300); exit 4 when it runs out",
    )
    p.add_argument(
        "--fail-under",
        type=float,
        default=None,
        metavar="PCT",
        help="wait, then exit 1 if the commit's coverage is under PCT percent",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(run=upload.upload)

    p = sub.add_parser("status", help="where a commit's uploads are, and why any failed")
    commit_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=commands.status)

    p = sub.add_parser("report", help="a commit's merged coverage")
    commit_args(p)
    p.add_argument("--flag", default=None, help="only the uploads with this flag")
    p.add_argument("--all", action="store_true", help="list every file (default: the first 50)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=commands.report)

    p = sub.add_parser("commits", help="a repository's latest commits and their coverage")
    p.add_argument("repository", metavar="OWNER/NAME")
    p.add_argument(
        "--limit", type=_positive_int, default=100, help="most commits listed (default 100)"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=commands.commits)

    p = sub.add_parser("db", help="database administration")
    db_sub = p.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = db_sub.add_parser("upgrade", help="create the database if missing and migrate it")
    up.add_argument(
        "--wait-for-database",
        type=_seconds(zero_ok=True),
        default=0.0,
        metavar="SECONDS",
        help="retry while the database refuses connections, up to this long (default 0)",
    )
    up.set_defaults(run=commands.db_upgrade)

    p = sub.add_parser(
        "health", help="exit 0 if this container's worker processes (or sweeper) are alive"
    )
    p.add_argument("what", choices=("worker", "sweeper"))
    p.add_argument(
        "--max-age",
        type=_seconds(zero_ok=False),
        default=None,
        metavar="SECONDS",
        help="oldest acceptable beat (default 30 for workers, 900 for the sweeper)",
    )
    p.set_defaults(run=commands.health)

    p = sub.add_parser("sweep", help="re-drive stuck uploads once, or every few seconds")
    p.add_argument(
        "--older-than",
        type=_seconds(zero_ok=True),
        default=None,
        metavar="SECONDS",
        help="age of a stuck upload (default: COVWORKER_SWEEP_AFTER_S)",
    )
    p.add_argument(
        "--every",
        type=_sweep_interval,
        default=None,
        metavar="SECONDS",
        help="keep sweeping at this interval, at least 1 s (a scheduler for the sweep)",
    )
    p.set_defaults(run=commands.sweep_once)

    p = sub.add_parser(
        "run-local",
        help="merge reports in this process (no servers needed) and print the result",
        epilog=FORMATS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commit_args(p, full=True)
    p.add_argument("--flag", action="append", default=[], help="flag (repeatable)")
    p.add_argument("--json", action="store_true", help="print the merged report as JSON")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(run=commands.run_local)

    p = sub.add_parser("demo", help="a CI matrix's uploads of one commit, merged in this process")
    p.add_argument(
        "--uploads", type=_positive_int, default=167, help="uploads of the commit (default 167)"
    )
    p.add_argument("--threads", type=_positive_int, default=8, help="worker threads (default 8)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(run=commands.demo)

    add_serve_parser(sub)
    add_repo_parser(sub)
    _add_bench(sub)
    return parser


#: The repository checkout this package runs from, if it runs from one (``pip install -e .``).
CHECKOUT = Path(__file__).resolve().parents[2]


def _add_bench(sub: argparse._SubParsersAction) -> None:
    """``covworker bench``: the benchmark lives in the checkout's ``benchmarks/``, not the wheel."""
    if (CHECKOUT / "benchmarks" / "stampede").is_dir() and str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    try:
        from benchmarks.stampede.cli import add_bench_parser
    except ImportError:
        p = sub.add_parser("bench", help="benchmark the finisher stampede (needs a checkout)")
        p.set_defaults(run=_bench_needs_a_checkout)
        return
    add_bench_parser(sub)


def _bench_needs_a_checkout(args: argparse.Namespace) -> int:
    err_console.print(
        "[red]error:[/red] `covworker bench` runs from a checkout of the covworker repository "
        "(its benchmarks/ directory is not installed): clone it, `pip install -e .` there and "
        "run the command from its root.",
        highlight=False,
    )
    return 2


def _database_error(exc: sa.exc.OperationalError) -> tuple[str, int]:
    reason = str(exc.orig or exc).strip().splitlines()[0]
    if "role" in reason and "does not exist" in reason:
        return (
            f"DATABASE_URL names a PostgreSQL user that does not exist ({reason}): "
            "fix the user name in DATABASE_URL or create the role",
            exits.EXIT_USAGE,
        )
    if "database" in reason and "does not exist" in reason:
        return (
            f"database unavailable (DATABASE_URL): {reason} (run `covworker db upgrade`)",
            exits.EXIT_UNAVAILABLE,
        )
    return f"database unavailable (DATABASE_URL): {reason}", exits.EXIT_UNAVAILABLE


#: Dramatiq's logger of "Message ... was skipped." (a deferred or skipped message).
SKIPPED_MESSAGES_LOGGER = "dramatiq.worker.WorkerThread"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # Commands that run the pipeline in this process (demo, run-local, serve
        # --embedded) would print Dramatiq's warning for every message the gate
        # defers or skips, which is the gate working, not a problem (-v shows them).
        logging.getLogger(SKIPPED_MESSAGES_LOGGER).setLevel(logging.ERROR)
    run: Callable[[argparse.Namespace], int] = args.run
    message, code = "", exits.EXIT_OK
    try:
        return run(args)
    except pydantic.ValidationError as exc:
        message, code = describe_validation_error(exc), exits.EXIT_USAGE
    except CommitNotFound as exc:
        message, code = str(exc), exits.EXIT_FAILED
    except ServiceUnavailable as exc:
        message, code = str(exc), exits.EXIT_UNAVAILABLE
    except (AmbiguousCommit, CovworkerError) as exc:
        message, code = str(exc), exits.EXIT_USAGE
    except redis.exceptions.ConnectionError as exc:
        message, code = f"cannot reach Redis (REDIS_URL): {exc}", exits.EXIT_UNAVAILABLE
    except sa.exc.OperationalError as exc:
        message, code = _database_error(exc)
    except KeyboardInterrupt:
        return 130
    err_console.print(f"[red]error:[/red] {message}", highlight=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
