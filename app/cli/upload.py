"""``covworker upload``: store reports, queue them, optionally wait and judge.

The payloads go where ``COVWORKER_STORAGE`` says, as an HTTP upload's do:
the database, or objects in the S3 store (``accept_uploads``); a store that
is down stores nothing and exits 3 (unavailable).

``--wait`` waits until the commit is settled (no upload of it pending),
prints the merged coverage and each failed upload's reason, and exits 1 if
one failed or coverage is under ``--fail-under``; 4 if it timed out.
"""

from __future__ import annotations

import argparse
import difflib
import time
from pathlib import Path

import redis
import sqlalchemy as sa

from app.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT
from app.cli.render import console, err_console, print_failures, with_unit
from app.db.models import Repository, is_settled
from app.errors import CovworkerError, InvalidUpload
from app.ingest.accept import (
    accept_uploads,
    validate_flags,
    validate_full_sha,
    validate_repo,
)
from app.queries import commit_report, commit_status, upload_states
from app.runtime.services import Services
from app.runtime.worker import CovworkerApp, build_app
from app.settings import Settings

#: How often ``upload --wait`` looks at the commit, in seconds.
WAIT_POLL_S = 0.25


class ServiceUnavailable(CovworkerError):
    """Redis or PostgreSQL cannot be reached; the message says what was stored."""


def read_reports(files: list[Path], max_bytes: int) -> list[tuple[str, bytes]]:
    """Read the files, refusing missing, unreadable or oversized ones up front."""
    reports = []
    for path in files:
        if path.is_dir():
            raise InvalidUpload(f"{path}: is a directory; give the report files inside it")
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


#: Most names ``upload`` suggests for a repository it does not know.
CLOSE_NAMES = 3


def known_repository(app: CovworkerApp, name: str) -> None:
    """Refuse a repository nobody added, naming the close ones: a typo in
    ``--repo`` must not create a second repository that no page links to."""
    with app.services.sessions() as session:
        if session.scalar(sa.select(Repository.id).where(Repository.name == name)) is not None:
            return
        names = session.scalars(sa.select(Repository.name)).all()
    close = difflib.get_close_matches(name, names, n=CLOSE_NAMES, cutoff=0.6)
    meant = f" (did you mean {', '.join(close)}?)" if close else ""
    raise InvalidUpload(
        f"no repository {name}{meant}: `covworker repo add {name}` creates it with an upload "
        "token, or `covworker upload --create` creates it without one"
    )


def submit(
    app: CovworkerApp,
    repo: str,
    sha: str,
    files: list[Path],
    flags: list[str],
    *,
    create: bool = True,
) -> list[int]:
    """Read the files and accept them as uploads, each sent to the processor
    (``accept_uploads`` validates repo, SHA and flags).

    A repository nobody added is refused unless ``create``. Redis is asked
    first, so an unreachable Redis stores nothing. If it goes
    away after the rows were stored, ``ServiceUnavailable`` says they are
    stored and will be processed: re-uploading would count them twice.
    """
    repo = validate_repo(repo)  # arguments first, then the files
    validate_full_sha(sha)
    validate_flags(flags)
    reports = read_reports(files, app.settings.max_upload_bytes)
    if not create:
        known_repository(app, repo)
    try:
        app.services.redis.ping()
    except redis.exceptions.RedisError as exc:
        raise ServiceUnavailable(
            f"cannot reach Redis (REDIS_URL): {exc}; nothing was stored, upload again later"
        ) from exc
    from app import actors  # declared on ``app``, the app built last

    try:
        accepted = accept_uploads(
            app.services, repo, sha, reports, flags, send_processor=actors.send_processor
        )
    except redis.exceptions.RedisError as exc:
        raise ServiceUnavailable(
            f"{len(reports)} report(s) were stored but Redis became unreachable before "
            f"they were queued ({exc}); the sweep (`covworker sweep`) will process them once "
            "Redis is back: do not upload them again"
        ) from exc
    return accepted.upload_ids


def upload(args: argparse.Namespace) -> int:
    settings = Settings()
    wait = args.wait or args.fail_under is not None
    app = build_app(settings)
    try:
        ids = submit(app, args.repo, args.commit, args.files, args.flag, create=args.create)
        console.print(f"accepted {len(ids)} upload(s): {', '.join(map(str, ids))}", soft_wrap=True)
        if not wait:
            return EXIT_OK
        return _wait_and_judge(app.services, args)
    finally:
        app.close()


def _pending_words(states: dict[str, int]) -> str:
    """Why the commit is not settled yet, in words, with what to do."""
    pending = [(state, n) for state, n in states.items() if state not in ("merged", "error") and n]
    said = ", ".join(f"{n} {state}" for state, n in pending) or "none"
    hint = "`covworker status` shows where they are"
    if [state for state, _ in pending] == ["uploaded"] and not states.get("merged"):
        hint = (
            "no worker has picked any up: is one running? Start it with "
            "`dramatiq app.actors` (same REDIS_URL and DATABASE_URL)"
        )
    return f"the commit is not settled yet (pending uploads: {said}); {hint}"


def _wait_and_judge(services: Services, args: argparse.Namespace) -> int:
    """Wait until no upload of the commit is pending, then print the totals and
    every failed upload; non-zero if one failed or coverage is too low."""
    commitid = int(commit_status(services, args.repo, args.commit)["commitid"])
    deadline = time.monotonic() + args.timeout
    while not is_settled(states := upload_states(services, commitid)):
        if time.monotonic() >= deadline:
            err_console.print(
                f"[red]timed out[/red] after {args.timeout:g} s: {_pending_words(states)}",
                highlight=False,
            )
            return EXIT_TIMEOUT
        time.sleep(WAIT_POLL_S)
    found = commit_report(services, args.repo, args.commit)
    totals = found["totals"]
    coverage = totals["coverage"]
    shown = totals["coverage_display"]  # as the pages show it (app/figures.py)
    console.print(
        f"{found['repository']} @ {found['commit'][:12]}: "
        f"{states['merged']} upload(s) merged, {states['error']} failed; coverage "
        f"{with_unit(shown)} "
        f"({totals['hits']} of {totals['lines']} lines hit, {totals['partials']} partial)",
        highlight=False,
        soft_wrap=True,
    )
    print_failures(found["errors"])
    if found["errors"]:
        return EXIT_FAILED
    if args.fail_under is not None and (coverage or 0.0) < args.fail_under:
        err_console.print(
            f"[red]coverage {with_unit(shown)} is under --fail-under {args.fail_under:g}%[/red]",
            highlight=False,
        )
        return EXIT_FAILED
    return EXIT_OK
