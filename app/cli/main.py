"""covworker: upload coverage reports, see what became of them, run the
whole pipeline in one process.

Building the parser imports nothing but the standard library: ``covworker
--help``, ``--version`` and a bad argument answer at once. A command's
function is named as ``"module:function"`` and imported when it runs, so
each command imports what it uses (pydantic, SQLAlchemy, Redis, rich...).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import math
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli import exits
from app.cli.repo import add_repo_parser
from app.cli.serve import add_serve_parser

if TYPE_CHECKING:
    import sqlalchemy as sa

DESCRIPTION = """covworker stores the coverage reports your CI jobs upload, merges every
upload of a commit into one report and notifies once the commit is settled.

The worker processes what `covworker upload` and `covworker serve` accept: run
it beside them as `dramatiq app.actors`, with the same REDIS_URL and
DATABASE_URL. `covworker run-local` and `covworker demo` need no worker and no
servers."""
#: Every format covworker reads (app.coverage.detect.FORMAT_NAMES; a test keeps them in step).
FORMAT_LIST = """report formats (recognised from the content, whatever the file name):
  Cobertura XML          coverage.py `coverage xml`, gcovr --xml, most JS/Java tools
  JaCoCo XML             jacoco.xml
  Clover XML             clover.xml (PHPUnit, OpenClover, Istanbul's clover reporter)
  OpenCover XML          OpenCover, coverlet --format opencover
  dotCover XML           dotCover --ReportType=DetailedXML
  scoverage XML          scoverage.xml (sbt-scoverage, scoverage-maven)
  LCOV                   lcov.info, coverage.info (gcov/lcov, c8, nyc, llvm-cov export -format=lcov)
  coverage.py JSON       `coverage json`
  Istanbul JSON          coverage-final.json (nyc, c8, Jest, Vitest)
  llvm-cov export JSON   `llvm-cov export` (Clang, Rust's cargo-llvm-cov --json)
  llvm-cov show text     `llvm-cov show`, Xcode's *.coverage.txt
  xccoverage plist       Xcode's Action.xccoverage (XML or binary plist)
  luacov                 luacov.report.out
  gcov JSON              `gcov --json-format` (GCC 9+)
  gcov text              *.gcov of `gcov -pb` (codecov-cli's gcov plugin)
  SimpleCov JSON         coverage/.resultset.json, simplecov-json's coverage.json
  Coveralls JSON         a Coveralls job (coveralls-python --output, node-coveralls)
  covr JSON              R's covr::codecov()
  Scala JSON             scct / older sbt-scoverage JSON (fileReports)
  Go coverprofile        `go test -coverprofile` (set, count and atomic modes)
  Flow coverage JSON     flow-coverage-report -t json (flow-coverage.json)
  Codecov v1 JSON        {"coverage": {path: {line: hits}}} (Codecov's own JSON)
  Salesforce Apex JSON   test-result-codecoverage.json (sf apex run test --code-coverage)
  GAP coverage JSON      the profiling package's OutputJsonCoverage
  elm-coverage JSON      .coverage/coverage.json of elm-coverage
  D coverage listing     *.lst of dmd -cov / ldc2 -cov
  Bullseye XML           covxml (BullseyeCoverage)
  Visual Studio coverage XML  dotnet-coverage / CodeCoverage.exe XML, .coveragexml
  Mono coverage XML      monocov's XML"""
FORMATS = f"""{FORMAT_LIST}

exit codes: 0 done; 1 an upload failed or coverage is under --fail-under;
2 bad arguments or configuration; 3 Redis or PostgreSQL unreachable;
4 --wait gave up before the commit settled"""
RUN_LOCAL_EPILOG = f"""{FORMAT_LIST}

exit codes: 0 every report merged; 1 a report could not be merged;
2 bad arguments"""


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


def _seconds_option(
    p: argparse.ArgumentParser, flag: str, *, default: float | None, help: str, zero_ok: bool = True
) -> None:
    """An option that takes a duration: a finite number of seconds, shown as SECONDS."""
    p.add_argument(
        flag, type=_seconds(zero_ok=zero_ok), default=default, metavar="SECONDS", help=help
    )


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("covworker")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


class _Version(argparse.Action):
    """``--version``: the package's metadata is read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"covworker {_package_version()}")
        parser.exit()


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
    parser.add_argument("--version", action=_Version)
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
        "--create",
        action="store_true",
        help="create the repository if nobody added it (without an upload token; "
        "`covworker repo add` gives one)",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait until the commit is settled, print its coverage and every failed upload; "
        "exit 1 if an upload failed",
    )
    _seconds_option(
        p,
        "--timeout",
        default=300.0,
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
    p.set_defaults(run="app.cli.upload:upload")

    p = sub.add_parser("status", help="where a commit's uploads are, and why any failed")
    commit_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--counters",
        action="store_true",
        help="also show the pipeline's internal counters (report version, Redis, finisher)",
    )
    p.set_defaults(run="app.cli.commands:status")

    p = sub.add_parser("report", help="a commit's merged coverage")
    commit_args(p)
    p.add_argument("--flag", default=None, help="only the uploads with this flag")
    p.add_argument("--all", action="store_true", help="list every file (default: the first 50)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run="app.cli.commands:report")

    p = sub.add_parser("commits", help="a repository's latest commits and their coverage")
    p.add_argument("repository", metavar="OWNER/NAME")
    p.add_argument(
        "--limit", type=_positive_int, default=100, help="most commits listed (default 100)"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run="app.cli.commands:commits")

    p = sub.add_parser("db", help="database administration")
    db_sub = p.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = db_sub.add_parser("upgrade", help="create the database if missing and migrate it")
    _seconds_option(
        up,
        "--wait-for-database",
        default=0.0,
        help="retry while the database refuses connections, up to this long (default 0)",
    )
    up.set_defaults(run="app.cli.commands:db_upgrade")

    p = sub.add_parser(
        "health", help="exit 0 if this container's worker processes (or sweeper) are alive"
    )
    p.add_argument("what", choices=("worker", "sweeper"))
    _seconds_option(
        p,
        "--max-age",
        default=None,
        help="oldest acceptable beat (default 30 for workers, 900 for the sweeper)",
        zero_ok=False,
    )
    p.set_defaults(run="app.cli.commands:health")

    p = sub.add_parser("sweep", help="re-drive stuck uploads once, or every few seconds")
    _seconds_option(
        p,
        "--older-than",
        default=None,
        help="age of a stuck upload (default: COVWORKER_SWEEP_AFTER_S)",
    )
    p.add_argument(
        "--every",
        type=_sweep_interval,
        default=None,
        metavar="SECONDS",
        help="keep sweeping at this interval, at least 1 s (a scheduler for the sweep)",
    )
    p.set_defaults(run="app.cli.commands:sweep_once")

    p = sub.add_parser(
        "run-local",
        help="merge reports in this process (no servers needed) and print the result",
        description="Merge reports in this process (no servers needed) and print the result, "
        "with what each parser forgave.",
        epilog=RUN_LOCAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commit_args(p, full=True)
    p.add_argument("--flag", action="append", default=[], help="flag (repeatable)")
    p.add_argument("--json", action="store_true", help="print the merged report as JSON")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(run="app.cli.commands:run_local")

    p = sub.add_parser("demo", help="a CI matrix's uploads of one commit, merged in this process")
    p.add_argument(
        "--uploads", type=_positive_int, default=167, help="uploads of the commit (default 167)"
    )
    p.add_argument("--threads", type=_positive_int, default=8, help="worker threads (default 8)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument(
        "--counters", action="store_true", help="also show the finisher's internal counters"
    )
    p.set_defaults(run="app.cli.commands:demo")

    add_serve_parser(sub)
    add_repo_parser(sub)
    _add_bench(sub)
    return parser


BENCH_HELP = "the finisher stampede on real Redis, PostgreSQL and workers, per strategy"
#: The benchmark, a module of the checkout (not of the wheel) run from its root.
BENCH_MODULE = "benchmarks.stampede"


def _add_bench(sub: argparse._SubParsersAction) -> None:
    """``covworker bench``: ``python -m benchmarks.stampede`` in a subprocess. The
    benchmark lives in the checkout's ``benchmarks/``, not the wheel, so it runs
    from the checkout's root; its own parser reads its options."""
    p = sub.add_parser("bench", help=BENCH_HELP, add_help=False)
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(run=_bench)


#: What the benchmark imports beyond the plain install (the ``dev`` extra).
BENCH_NEEDS = ("pytest",)


def _bench(args: argparse.Namespace) -> int:
    if not (Path.cwd() / "benchmarks" / "stampede" / "__main__.py").is_file():
        return _bench_needs_a_checkout(args)
    missing = [name for name in BENCH_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        from app.cli.render import err_console

        err_console.print(
            f"[red]error:[/red] `covworker bench` needs the development install "
            f"({', '.join(missing)} is missing): run `pip install -e '.\\[dev]'` in the checkout",
            highlight=False,
        )
        return 2
    return subprocess.run([sys.executable, "-m", BENCH_MODULE, *args.bench_args]).returncode


def _bench_needs_a_checkout(args: argparse.Namespace) -> int:
    from app.cli.render import err_console

    err_console.print(
        "[red]error:[/red] `covworker bench` runs from a checkout of the covworker repository "
        "(its benchmarks/ directory is not installed): clone it, `pip install -e .` there and "
        "run the command from its root (or `python -m benchmarks.stampede` there).",
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
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "bench":  # its own parser reads its options (_bench)
        args.bench_args = [*extra, *args.bench_args]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # Commands that run the pipeline in this process (demo, run-local, serve
        # --embedded) would print Dramatiq's warning for every message the gate
        # defers or skips, which is the gate working, not a problem (-v shows them).
        logging.getLogger(SKIPPED_MESSAGES_LOGGER).setLevel(logging.ERROR)
    run = _command(args.run)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        found = _known_error(exc)
        if found is None:
            raise
        message, code = found
    from app.cli.render import err_console

    err_console.print(f"[red]error:[/red] {message}", highlight=False)
    return code


def _command(run: str | Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command's function; ``"module:function"`` is imported now."""
    if not isinstance(run, str):
        return run
    module, _, name = run.partition(":")
    found: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
    return found


def _known_error(exc: Exception) -> tuple[str, int] | None:
    """The message and exit code of an error a command can meet, or None
    (a bug: its traceback is shown). The exception types are imported
    here, once there is an error to classify."""
    import pydantic
    import redis
    import sqlalchemy as sa

    from app.cli.upload import ServiceUnavailable
    from app.errors import AmbiguousCommit, CommitNotFound, CovworkerError
    from app.settings import describe_validation_error
    from app.storage import StorageUnavailable

    if isinstance(exc, pydantic.ValidationError):
        return describe_validation_error(exc), exits.EXIT_USAGE
    if isinstance(exc, CommitNotFound):
        return str(exc), exits.EXIT_FAILED
    if isinstance(exc, ServiceUnavailable | StorageUnavailable):
        return str(exc), exits.EXIT_UNAVAILABLE
    if isinstance(exc, AmbiguousCommit | CovworkerError):
        return str(exc), exits.EXIT_USAGE
    if isinstance(exc, redis.exceptions.ConnectionError):
        return f"cannot reach Redis (REDIS_URL): {exc}", exits.EXIT_UNAVAILABLE
    if isinstance(exc, sa.exc.OperationalError):
        return _database_error(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
