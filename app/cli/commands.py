"""What each ``covworker`` subcommand does. Each reads ``Settings`` once.

Exit codes: 0 done; 1 the commit is unknown, an upload failed or coverage is
under ``--fail-under``; 2 bad arguments or configuration; 3 Redis or
PostgreSQL unreachable; 4 ``--wait`` timed out before the commit settled.
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from app.cli.exits import EXIT_FAILED, EXIT_OK
from app.cli.render import (
    DEFAULT_MAX_FILES,
    commits_table,
    console,
    err_console,
    flags_table,
    plain,
    print_failures,
    print_json,
    report_table,
    status_table,
    uploads_table,
)
from app.cli.upload import ServiceUnavailable, submit, upload
from app.db.migrate import upgrade
from app.db.models import is_settled
from app.embedded import embedded
from app.errors import ConfigurationError
from app.ingest.accept import (
    validate_full_sha,
    validate_repo,
)
from app.queries import (
    commit_report,
    commit_status,
    repository_commits,
)
from app.runtime.brokers import queue_inspector
from app.runtime.health import SWEEPER_BEAT, WORKER_MAX_AGE_S, check_sweeper, check_workers, touch
from app.runtime.metrics import StateCollector
from app.runtime.services import Services
from app.runtime.worker import CovworkerApp, build_app
from app.settings import Settings

__all__ = ["ServiceUnavailable", "submit", "upload"]

#: Seconds between two attempts of ``db upgrade --wait-for-database``.
DB_RETRY_S = 1.0
#: Default age (seconds) past which ``health sweeper`` calls the sweeper dead.
SWEEPER_MAX_AGE_S = 900.0


def status(args: argparse.Namespace) -> int:
    services = Services.from_settings(Settings())
    try:
        found = commit_status(services, args.repo, args.commit)
    finally:
        services.close()
    if args.json:
        print_json(found)
        return EXIT_OK
    console.print(status_table(found, counters=args.counters))
    console.print(uploads_table(found["upload_list"]))
    if found["flags"]:
        console.print(flags_table(found["flags"], found.get("rounding")))
    return EXIT_OK


def report(args: argparse.Namespace) -> int:
    services = Services.from_settings(Settings())
    try:
        found = commit_report(services, args.repo, args.commit, flag=args.flag)
    finally:
        services.close()
    if args.flag is not None and args.flag not in found["flags"] and not found["errors"]:
        known = ", ".join(found["flags"]) or "none"
        err_console.print(
            f"[red]error:[/red] no merged upload of this commit has flag {plain(repr(args.flag))} "
            f"(flags: {plain(known)})",
            highlight=False,
        )
        return EXIT_FAILED
    states = found["uploads"]
    all_failed = states["error"] > 0 and states["merged"] == 0 and is_settled(states)
    if args.json:
        print_json(found)
    elif not all_failed:
        console.print(report_table(found, max_files=None if args.all else DEFAULT_MAX_FILES))
        if found["flags"] and args.flag is None:
            console.print(flags_table(found["flags"], found.get("rounding")))
    pending = states["uploaded"] + states["processing"] + states["processed"]
    if pending:
        err_console.print(f"note: {pending} upload(s) still pending; this report is not final")
    if all_failed:
        err_console.print(
            f"[red]every upload of this commit failed ({states['error']}); "
            "there is no coverage to report[/red]",
            highlight=False,
        )
    print_failures(found["errors"])
    return EXIT_FAILED if all_failed else EXIT_OK


def commits(args: argparse.Namespace) -> int:
    services = Services.from_settings(Settings())
    try:
        listing = repository_commits(services, args.repository, limit=args.limit)
    finally:
        services.close()
    print_json(listing) if args.json else console.print(commits_table(listing))
    return EXIT_OK


def db_upgrade(args: argparse.Namespace) -> int:
    """Migrate; with ``--wait-for-database S``, retry while the server refuses
    connections (a container starting next to its database)."""
    url = Settings().database_url
    deadline = time.monotonic() + args.wait_for_database
    said = False
    while True:
        try:
            created = upgrade(url)
            break
        except sa.exc.OperationalError as exc:
            if time.monotonic() >= deadline:
                raise
            if not said:
                reason = str(exc.orig or exc).strip().splitlines()[0]
                err_console.print(
                    f"database not accepting connections yet ({reason}); retrying for up to "
                    f"{args.wait_for_database:g} s",
                    highlight=False,
                )
                said = True
            time.sleep(DB_RETRY_S)
    console.print(f"database {'created and ' if created else ''}migrated to the latest schema")
    return EXIT_OK


def health(args: argparse.Namespace) -> int:
    """Exit 0 if the worker processes (or the sweeper) of this container are alive."""
    directory = Settings().health_dir
    if not directory:
        raise ConfigurationError("COVWORKER_HEALTH_DIR is not set: nothing writes health beats")
    if args.what == "worker":
        ok, why = check_workers(Path(directory), args.max_age or WORKER_MAX_AGE_S)
    else:
        ok, why = check_sweeper(Path(directory), args.max_age or SWEEPER_MAX_AGE_S)
    (console if ok else err_console).print(why, highlight=False)
    return EXIT_OK if ok else EXIT_FAILED


def sweep_once(args: argparse.Namespace) -> int:
    """Sweep once, or every ``--every`` seconds until interrupted."""
    app = build_app(Settings())
    from app import actors  # declared on the app just built

    stop = threading.Event()
    if app.settings.metrics and args.every is not None:
        serve_sweeper_metrics(app)
    try:
        while True:
            result = actors.sweep_uploads(older_than_s=args.older_than)
            if app.settings.health_dir:
                touch(Path(app.settings.health_dir) / SWEEPER_BEAT)
            console.print(
                f"re-drove {len(result.reprocessed)} upload(s) to processing, "
                f"{len(result.refinished)} to the finisher, "
                f"{len(result.renotified)} commit(s) to notify; "
                f"dropped the raw report of {result.raw_dropped} old merged or failed upload(s)",
                soft_wrap=True,
            )
            if args.every is None or stop.wait(args.every):
                return EXIT_OK
    finally:
        app.close()


def serve_sweeper_metrics(app: CovworkerApp) -> None:
    """Serve the sweeper's metrics: its re-drives, queue depths, pending uploads."""
    import prometheus_client

    metrics = app.services.metrics
    metrics.make()
    metrics.registry.register(
        StateCollector(
            app.services,
            queue_inspector(app.settings, app.services.redis),
            list(app.settings.queue_names),
        )
    )
    server, _ = prometheus_client.start_http_server(
        app.settings.sweeper_metrics_port,
        addr=app.settings.sweeper_metrics_host,
        registry=metrics.registry,
    )
    console.print(
        f"serving metrics on {app.settings.sweeper_metrics_host}:{server.server_port}",
        soft_wrap=True,
    )


def run_local(args: argparse.Namespace) -> int:
    validate_repo(args.repo)
    validate_full_sha(args.commit)
    with embedded() as runtime:
        submit(runtime.app, args.repo, args.commit, args.files, args.flag)
        runtime.wait_settled()
        found = commit_report(runtime.app.services, args.repo, args.commit)
        uploads = commit_status(runtime.app.services, args.repo, args.commit)["upload_list"]
    failed = found["errors"]
    # What each parser forgave (negative counts, ...), as `covworker status` shows it.
    warnings = [f"{u['file']}: {w}" for u in uploads for w in u.get("warnings", [])]
    warnings += [f"{u['file']}: {u['skipped']}" for u in uploads if u.get("skipped")]
    if args.json:
        print_json({**found, "warnings": warnings})
    elif found["uploads"]["merged"]:
        console.print(report_table(found, max_files=None))
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/yellow] {plain(warning)}", highlight=False)
    print_failures(failed)
    if failed:
        err_console.print(
            f"[red]{len(failed)} of {len(args.files)} report(s) could not be merged[/red]",
            highlight=False,
        )
        return EXIT_FAILED
    return EXIT_OK


def demo(args: argparse.Namespace) -> int:
    from app.cli.demo import run_demo

    return run_demo(
        uploads=args.uploads, threads=args.threads, as_json=args.json, counters=args.counters
    )
