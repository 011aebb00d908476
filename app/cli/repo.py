"""``covworker repo``: repositories, their upload tokens, webhooks and default branches."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.db.hosts import SERVICES

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
    change.add_argument("--webhook", metavar="URL", help="'' removes it")
    change.add_argument(
        "--yaml",
        metavar="FILE",
        help="store this codecov.yml for the repository (used when the provider has none "
        "at the head commit); '' removes it",
    )
    change.add_argument(
        "--default-branch",
        metavar="NAME",
        help="the repository's default branch, kept over the one the provider names; "
        "'' goes back to the provider's",
    )
    change.set_defaults(run=repo_set)


def _sessions() -> sessionmaker[Session]:
    from app.db.engine import make_engine, make_sessionmaker
    from app.settings import Settings

    return make_sessionmaker(make_engine(Settings().database_url))


def repo_add(args: argparse.Namespace) -> int:
    from app.cli.render import console
    from app.db.repos import add_repository
    from app.ingest.accept import validate_repo
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
    from app.db.repos import rotate_token
    from app.errors import InvalidUpload
    from app.ingest.accept import validate_repo

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
    from app.notify.webhooks import redact

    with _sessions()() as session:
        repos = session.scalars(sa.select(Repository).order_by(Repository.name)).all()
    table = Table("repository", "service", "token", "webhook", "default branch")
    for r in repos:
        branch = (
            f"{r.default_branch} ({r.default_branch_source or 'set'})" if r.default_branch else "-"
        )
        table.add_row(
            r.name,
            r.service,
            "set" if r.upload_token_hash else "-",
            redact(r.webhook_url or "-"),
            branch,
        )
    console.print(table)
    return 0


def repo_set(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from app.cli.render import console
    from app.db.models import Repository
    from app.errors import InvalidUpload
    from app.feedback.default_branch import set_default_branch, validate_branch
    from app.ingest.accept import validate_repo
    from app.notify.webhooks import SIGNATURE_HEADER, new_webhook_secret, redact

    name = validate_repo(args.name)
    if args.webhook is None and args.yaml is None and args.default_branch is None:
        raise InvalidUpload(
            "nothing to set: give --webhook URL, --yaml FILE and/or --default-branch NAME"
        )
    branch = validate_branch(args.default_branch) if args.default_branch is not None else None
    url = (args.webhook or "").strip() or None
    if url and not url.startswith(("http://", "https://")):
        raise InvalidUpload(f"webhook {url!r} is not an http(s) URL")
    yaml_text = _read_codecov_yaml(args.yaml) if args.yaml else None
    with _sessions().begin() as session:
        repo = session.scalar(sa.select(Repository).where(Repository.name == name))
        if repo is None:
            raise InvalidUpload(f"no repository {name}; `covworker repo add {name}` creates it")
        if args.webhook is not None:
            repo.webhook_url = url
            if url and not repo.webhook_secret:
                repo.webhook_secret = new_webhook_secret()
        if args.yaml is not None:
            repo.codecov_yaml = yaml_text
        if branch is not None:
            set_default_branch(session, repo.id, branch)
        secret = repo.webhook_secret
    if args.yaml is not None:
        console.print(f"{name}: codecov.yml {'stored' if yaml_text else 'removed'}")
    if branch is not None:
        console.print(
            f"{name}: default branch {branch}"
            if branch
            else f"{name}: default branch the provider's (else main or master)",
            highlight=False,
        )
    if args.webhook is not None:
        console.print(f"{name}: webhook {'set to ' + redact(url) if url else 'removed'}")
        if url:
            console.print(
                f"bodies are signed: {SIGNATURE_HEADER}: sha256=HMAC-SHA256(secret, body); secret:",
                highlight=False,
            )
            print(secret)  # the last line of stdout, alone, for scripts
    return 0


def _read_codecov_yaml(path: str) -> str:
    """The file's text, refused (with every error, key by key) unless it validates."""
    from pathlib import Path

    from app.errors import InvalidUpload
    from app.pullrequests.config import MAX_YAML_BYTES, parse_codecov_yaml

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidUpload(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_YAML_BYTES:
        raise InvalidUpload(f"{path} is {len(raw)} bytes, over the limit of {MAX_YAML_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUpload(f"{path} is not UTF-8 text: {exc}") from exc
    errors = parse_codecov_yaml(text).errors
    if errors:
        listed = "\n".join(f"  {error}" for error in errors)
        raise InvalidUpload(f"{path} is not a valid codecov.yml; nothing stored:\n{listed}")
    return text
