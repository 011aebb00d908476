"""A worker's resident memory while it reads one upload's payload from PostgreSQL.

    python benchmarks/payload_read_memory.py [--files 20000] [--lines 50]

Not a test: it measures, it does not assert. One LCOV upload of FILES x
LINES lines (1,000,000 by default, 11.2 MiB) is stored in a scratch
database (``DATABASE_URL``'s server), once whole (``Upload.raw``) and once
in 4 MiB chunks as a large PUT stores it. Then each way of reading it runs
in a fresh process: the bytes through SQLAlchemy (``bytea`` sent as hex
text) and through :func:`app.db.engine.binary_scalars` (binary format),
the processor's read. Each prints how far the process's resident memory
rose above what it held before the read, at the peak (``VmHWM``, reset
through ``/proc/self/clear_refs``) and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Bytes per chunk, as ``app.api.payload_put`` stores a large payload.
CHUNK = 4 * 1024 * 1024
WAYS = ("text", "binary")


def _status_mib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    raise LookupError(field)


def read_once(url: str, way: str, stored: str) -> str:
    """In this process: read the payload ``stored`` (whole or chunks) one ``way``."""
    import sqlalchemy as sa

    from app.db.engine import binary_scalars, make_engine, make_sessionmaker
    from app.db.models import Upload, UploadChunk

    sessions = make_sessionmaker(make_engine(url))
    whole = sa.select(Upload.raw).where(Upload.raw_size > 0, sa.func.length(Upload.raw) > 0)
    chunks = sa.select(UploadChunk.data).order_by(UploadChunk.seq)
    statement = whole if stored == "whole" else chunks
    with sessions() as session:
        session.execute(sa.select(1))  # connected before the clock
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_mib("VmRSS")
        rows = session.scalars(statement) if way == "text" else binary_scalars(session, statement)
        raw = b"".join(rows)
        peak, after = _status_mib("VmHWM") - before, _status_mib("VmRSS") - before
    return f"| {stored} | {way} | {len(raw) / 2**20:.1f} MiB | +{peak} MiB | +{after} MiB |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--lines", type=int, default=50)
    parser.add_argument(
        "--child", nargs=3, metavar=("URL", "WAY", "STORED"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        print(read_once(*args.child), flush=True)
        return

    from app.db.models import Upload, UploadChunk
    from tests.support.pipeline import Pipeline, real_services
    from tests.support.services import fresh_database, redis_test_url
    from tests.support.synthetic import monorepo_lcov

    payload = monorepo_lcov(1, args.files, args.lines)
    print("| stored | read as | payload | resident at the peak | resident after |")
    print("|---|---|---:|---:|---:|")
    for stored in ("whole", "chunks"):
        with fresh_database(migrated=True) as url:
            namespace = f"payload-read-{os.getpid()}"
            services = real_services(redis_test_url(), url, namespace)
            [upload_id] = Pipeline(services).upload([("job.info", payload)]).upload_ids
            for key in services.redis.scan_iter(f"{namespace}:*"):  # only the database is read
                services.redis.delete(key)
            if stored == "chunks":
                with services.sessions.begin() as session:
                    session.get_one(Upload, upload_id).raw = b""
                    session.add_all(
                        UploadChunk(upload_id=upload_id, seq=i, data=payload[at : at + CHUNK])
                        for i, at in enumerate(range(0, len(payload), CHUNK))
                    )
            services.close()
            for way in WAYS:
                subprocess.run(
                    [sys.executable, __file__, "--child", url, way, stored],
                    check=True,
                    env={**os.environ, "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "1")},
                )


if __name__ == "__main__":
    main()
