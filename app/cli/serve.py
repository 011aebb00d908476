"""``covworker serve``: the HTTP ingestion service under uvicorn."""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path

from app.errors import ConfigurationError

#: Seconds uvicorn waits for a server process to start or answer its
#: supervisor's ping before killing it (its default of 5 kills processes
#: still importing, or busy, on a loaded 2-core machine).
WORKER_HEALTHCHECK_S = 60
#: uvicorn's HTTP protocol with TCP_NODELAY on every connection (app/api/nodelay.py);
#: a string, so this module does not import the app.
NODELAY_HTTP = "app.api.nodelay:NoDelayHTTPProtocol"


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve HTTP ingestion for the Codecov uploaders")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free one)")
    p.add_argument("--workers", type=int, default=1, help="server processes (default 1)")
    p.add_argument(
        "--embedded",
        action="store_true",
        help="the whole stack in this process: SQLite file, fakeredis, in-process worker",
    )
    p.add_argument(
        "--db",
        type=Path,
        default=Path("covworker.db"),
        help="SQLite file of --embedded (default ./covworker.db)",
    )
    p.set_defaults(run=serve)


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.cli.render import console
    from app.settings import Settings

    if args.workers < 1:
        raise ConfigurationError("--workers must be at least 1")
    if args.embedded:
        return _serve_embedded(args)
    settings = Settings()  # fail here, once, on bad configuration
    if args.workers > 1 and not settings.upload_url_secret:
        # Every server process must sign and check upload URLs with the same
        # secret: one made now, handed to the processes this command starts.
        os.environ["COVWORKER_UPLOAD_URL_SECRET"] = secrets.token_hex(32)
        console.print(
            f"COVWORKER_UPLOAD_URL_SECRET is not set: the {args.workers} server processes share "
            "a secret made for this run (set one to keep upload URLs valid across restarts "
            "and hosts)",
            highlight=False,
        )
    uvicorn.run(
        "app.api:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=NODELAY_HTTP,
        log_level="info",
        access_log=False,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
    )
    return 0


def _serve_embedded(args: argparse.Namespace) -> int:
    import uvicorn

    from app.api import create_app
    from app.cli.render import console
    from app.embedded import embedded

    if args.workers != 1:
        raise ConfigurationError("--embedded runs one process: drop --workers")
    database = args.db.resolve()
    with embedded(database_path=database) as runtime:
        console.print(
            f"embedded: SQLite {database}, fakeredis, in-process worker; add a repository "
            f"with: DATABASE_URL=sqlite:///{database} covworker repo add OWNER/NAME"
        )
        config = uvicorn.Config(
            create_app(covworker=runtime.app),
            host=args.host,
            port=args.port,
            http=NODELAY_HTTP,
            log_level="info",
            access_log=False,
        )
        uvicorn.Server(config).run()
    return 0
