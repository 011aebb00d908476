"""``covworker``: upload reports, inspect commits, run the embedded pipeline."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import redis
import sqlalchemy as sa

from app.cli import commands
from app.cli.render import err_console
from app.cli.repo import add_repo_parser
from app.cli.serve import add_serve_parser
from app.errors import CovworkerError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="covworker", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def commit_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--repo", required=True, help="repository, OWNER/NAME")
        p.add_argument("--commit", required=True, help="commit SHA (hex)")

    p = sub.add_parser("upload", help="upload coverage reports of a commit")
    commit_args(p)
    p.add_argument("--flag", action="append", default=[], help="flag (repeatable)")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(run=commands.upload)

    p = sub.add_parser("status", help="where a commit's uploads are")
    commit_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=commands.status)

    p = sub.add_parser("report", help="a commit's merged coverage")
    commit_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=commands.report)

    p = sub.add_parser("db", help="database administration")
    db_sub = p.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = db_sub.add_parser("upgrade", help="create the database if missing and migrate it")
    up.set_defaults(run=commands.db_upgrade)

    p = sub.add_parser("sweep", help="re-drive stuck uploads once")
    p.add_argument(
        "--older-than",
        type=float,
        default=None,
        metavar="SECONDS",
        help="age of a stuck upload (default: COVWORKER_SWEEP_AFTER_S)",
    )
    p.add_argument(
        "--every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="keep sweeping at this interval (a scheduler for the sweep)",
    )
    p.set_defaults(run=commands.sweep_once)

    p = sub.add_parser(
        "run-local", help="merge reports in-process (fakeredis + SQLite), no servers"
    )
    commit_args(p)
    p.add_argument("--flag", action="append", default=[], help="flag (repeatable)")
    p.add_argument("--json", action="store_true", help="print the merged report as JSON")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(run=commands.run_local)

    p = sub.add_parser("demo", help="an embedded CI-matrix stampede on one commit")
    p.add_argument("--uploads", type=int, default=167, help="uploads of the commit (default 167)")
    p.add_argument("--threads", type=int, default=8, help="worker threads (default 8)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(run=commands.demo)

    add_serve_parser(sub)
    add_repo_parser(sub)
    _add_bench(sub)
    return parser


def _add_bench(sub: argparse._SubParsersAction) -> None:
    try:
        from app.bench.cli import add_bench_parser
    except ImportError:  # the benchmark package is optional in a slim install
        return
    add_bench_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except CovworkerError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        return 2
    except redis.exceptions.ConnectionError as exc:
        err_console.print(
            f"[red]error:[/red] cannot reach Redis (REDIS_URL): {exc}", highlight=False
        )
        return 3
    except sa.exc.OperationalError as exc:
        reason = str(exc.orig or exc).strip().splitlines()[0]
        hint = " (run `covworker db upgrade`)" if "does not exist" in reason else ""
        err_console.print(
            f"[red]error:[/red] database unavailable (DATABASE_URL): {reason}{hint}",
            highlight=False,
        )
        return 3
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
