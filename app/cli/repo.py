"""``covworker repo``: repositories, their upload tokens and webhooks."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.hosts import SERVICES

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

# The commands import what they use when they run: building the parser
# (``covworker --help``) imports none of it.


def add_repo_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("repo", help="repositories and their upload tokens")
    repo_sub = p.add_subparsers(dest="repo_command", required=True, metavar="ACTION")

    add = repo_sub.add_parser("add", help="create a repository; prints its upload token")
    add.add_argument("name", metavar="OWNER/NAME")
    add.add_argument("--service", default="github", choices=SERVICES, help="git host")
    add.add_argument(
        "--private", action="store_true", help="pages need a read token (printed before)"
    )
    add.set_defaults(run=repo_add)

    token = repo_sub.add_parser("token", help="issue a new upload token (--rotate)")
    token.add_argument("name", metavar="OWNER/NAME")
    token.add_argument("--rotate", action="store_true", help="replace the token")
    token.set_defaults(run=repo_token)

    listing = repo_sub.add_parser("list", help="the repositories")
    listing.set_defaults(run=repo_list)

    change = repo_sub.add_parser("set", help="change a repository's settings")
    change.add_argument("name", metavar="OWNER/NAME")
    change.add_argument("--webhook", required=True, metavar="URL", help="'' removes it")
    change.set_defaults(run=repo_set)


def _sessions() -> sessionmaker[Session]:
    from app.db.engine import make_engine, make_sessionmaker
    from app.settings import Settings

    return make_sessionmaker(make_engine(Settings().database_url))


def repo_add(args: argparse.Namespace) -> int:
    from app.cli.render import console
    from app.pipeline.uploads import validate_repo
    from app.repos import add_repository
    from app.web.access import make_private

    name = validate_repo(args.name)
    with _sessions().begin() as session:
        issued = add_repository(session, name, args.service)
        read_token = make_private(session, name) if args.private else None
    if read_token is not None:
        console.print(f"private: its pages need this read token:\n{read_token}", highlight=False)
    console.print(f"{'created' if issued.created else 'token issued for'} {name}; upload token:")
    print(issued.token)  # the last line of stdout, alone, for scripts
    return 0


def repo_token(args: argparse.Namespace) -> int:
    from app.cli.render import console
    from app.errors import InvalidUpload
    from app.pipeline.uploads import validate_repo
    from app.repos import rotate_token

    name = validate_repo(args.name)
    if not args.rotate:
        raise InvalidUpload(
            "tokens are stored hashed and cannot be shown again; --rotate issues a new one "
            "(the old one stops working)"
        )
    with _sessions().begin() as session:
        issued = rotate_token(session, name)
    console.print(f"new upload token of {name} (the old one no longer works):")
    print(issued.token)
    return 0


def repo_list(args: argparse.Namespace) -> int:
    import sqlalchemy as sa
    from rich.table import Table

    from app.cli.render import console
    from app.db.models import Repository
    from app.pipeline.webhooks import redact

    with _sessions()() as session:
        repos = session.scalars(sa.select(Repository).order_by(Repository.name)).all()
    table = Table("repository", "service", "token", "webhook")
    for r in repos:
        table.add_row(
            r.name, r.service, "set" if r.upload_token_hash else "-", redact(r.webhook_url or "-")
        )
    console.print(table)
    return 0


def repo_set(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from app.cli.render import console
    from app.db.models import Repository
    from app.errors import InvalidUpload
    from app.pipeline.uploads import validate_repo
    from app.pipeline.webhooks import SIGNATURE_HEADER, new_webhook_secret, redact

    name = validate_repo(args.name)
    url = args.webhook.strip() or None
    if url and not url.startswith(("http://", "https://")):
        raise InvalidUpload(f"webhook {url!r} is not an http(s) URL")
    with _sessions().begin() as session:
        repo = session.scalar(sa.select(Repository).where(Repository.name == name))
        if repo is None:
            raise InvalidUpload(f"no repository {name}; `covworker repo add {name}` creates it")
        repo.webhook_url = url
        if url and not repo.webhook_secret:
            repo.webhook_secret = new_webhook_secret()
        secret = repo.webhook_secret
    console.print(f"{name}: webhook {'set to ' + redact(url) if url else 'removed'}")
    if url:
        console.print(
            f"bodies are signed: {SIGNATURE_HEADER}: sha256=HMAC-SHA256(secret, body); secret:",
            highlight=False,
        )
        print(secret)  # the last line of stdout, alone, for scripts
    return 0
