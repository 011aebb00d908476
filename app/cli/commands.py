"""What each ``covworker`` subcommand does. Each reads ``Settings`` once."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table

from app.cli.render import console, print_json, report_table, status_table
from app.db.migrate import upgrade
from app.embedded import embedded
from app.errors import InvalidUpload
from app.pipeline.sweeper import sweep
from app.pipeline.uploads import accept_uploads, validate_repo, validate_sha
from app.queries import commit_report, commit_status
from app.services import Services
from app.settings import Settings
from app.worker import CovworkerApp, build_app


def read_reports(files: list[Path], max_bytes: int) -> list[tuple[str, bytes]]:
    """Read the files, refusing missing, unreadable or oversized ones up front."""
    reports = []
    for path in files:
        if not path.is_file():
            raise InvalidUpload(f"{path}: no such file")
        size = path.stat().st_size
        if size > max_bytes:
            raise InvalidUpload(f"{path}: {size} bytes is over the limit of {max_bytes} bytes")
        try:
            reports.append((path.name, path.read_bytes()))
        except OSError as exc:
            raise InvalidUpload(f"{path}: cannot read: {exc.strerror}") from exc
    return reports


def submit(
    app: CovworkerApp, repo: str, sha: str, files: list[Path], flags: list[str]
) -> list[int]:
    """Read the files and accept them as uploads (accept_uploads validates
    repo, SHA and flags), then send each to the processor."""
    reports = read_reports(files, app.settings.max_upload_bytes)
    accepted = accept_uploads(app.services, repo, sha, reports, flags)
    for upload_id in accepted.upload_ids:
        app.upload_processor.send(upload_id)
    return accepted.upload_ids


def upload(args: argparse.Namespace) -> int:
    app = build_app(Settings())
    try:
        ids = submit(app, args.repo, args.commit, args.files, args.flag)
    finally:
        app.close()
    console.print(f"accepted {len(ids)} upload(s): {', '.join(map(str, ids))}")
    return 0


def _show_commit(
    args: argparse.Namespace,
    query: Callable[[Services, str, str], dict[str, Any] | None],
    table: Callable[[dict[str, Any]], Table],
) -> int:
    """Print what ``query`` finds for the commit, as JSON or as a table."""
    services = Services.from_settings(Settings())
    try:
        found = query(services, args.repo, args.commit)
    finally:
        services.close()
    if found is None:
        console.print(f"no uploads for {args.repo} @ {args.commit}")
        return 1
    print_json(found) if args.json else console.print(table(found))
    return 0


def status(args: argparse.Namespace) -> int:
    return _show_commit(args, commit_status, status_table)


def report(args: argparse.Namespace) -> int:
    return _show_commit(args, commit_report, report_table)


def db_upgrade(args: argparse.Namespace) -> int:
    url = Settings().database_url
    created = upgrade(url)
    console.print(f"database {'created and ' if created else ''}migrated to the latest schema")
    return 0


def sweep_once(args: argparse.Namespace) -> int:
    """Sweep once, or every ``--every`` seconds until interrupted."""
    app = build_app(Settings())
    stop = threading.Event()
    try:
        while True:
            result = sweep(
                app.services,
                send_processor=app.upload_processor.send,
                send_finisher=app.upload_finisher.send,
                send_notify=app.notify.send,
                send_webhook=app.deliver_webhook.send,
                older_than_s=args.older_than,
            )
            console.print(
                f"re-drove {len(result.reprocessed)} upload(s) to processing, "
                f"{len(result.refinished)} to the finisher, "
                f"{len(result.renotified)} commit(s) to notify"
            )
            if args.every is None or stop.wait(args.every):
                return 0
    finally:
        app.close()


def run_local(args: argparse.Namespace) -> int:
    validate_repo(args.repo)
    validate_sha(args.commit)
    with embedded() as runtime:
        submit(runtime.app, args.repo, args.commit, args.files, args.flag)
        runtime.wait_settled()
        found = commit_report(runtime.app.services, args.repo, args.commit)
        state = commit_status(runtime.app.services, args.repo, args.commit)
    assert found is not None and state is not None
    if args.json:
        print_json({**found, "errors": state["errors"]})
        return 0
    console.print(report_table(found))
    for error in state["errors"]:
        console.print(f"[red]upload {error['upload']} ({error['file']}):[/red] {error['error']}")
    return 0


def demo(args: argparse.Namespace) -> int:
    from app.cli.demo import run_demo

    return run_demo(uploads=args.uploads, threads=args.threads, as_json=args.json)
