"""Benchmark: PostgreSQL backend CPU to store an upload payload, by storage mode.

Not a test. On the PostgreSQL at ``DATABASE_URL`` (a temporary table per
case, dropped after), inserts a 1 MB payload shaped like the uploaders'
(base64 of zlib output, which does not compress) ``--inserts`` times into a
``bytea`` column stored ``EXTENDED`` with pglz, ``EXTENDED`` with lz4, and
``EXTERNAL`` (no compression attempt), ``--rounds`` times in turn, and
prints the backend's CPU per insert (from ``/proc``: the server must run on
this machine).

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/payload_storage.py [--inserts 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
import zlib
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.settings import Settings

CASES = (("pglz", "EXTENDED", "pglz"), ("lz4", "EXTENDED", "lz4"), ("external", "EXTERNAL", "pglz"))


def backend_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inserts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    url = Settings().database_url.replace("postgresql+psycopg://", "postgresql://")
    payload = base64.b64encode(zlib.compress(os.urandom(750_000)))
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        pid = row[0]
        results: dict[str, list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            for name, storage, method in CASES:
                table = f"covworker_bench_storage_{name}"
                conn.execute(f"CREATE TEMP TABLE {table} (id serial, raw bytea)")
                conn.execute(f"ALTER TABLE {table} ALTER COLUMN raw SET STORAGE {storage}")
                conn.execute(f"SET default_toast_compression = {method}")
                cpu, started = backend_cpu_s(pid), time.perf_counter()
                for _ in range(args.inserts):
                    conn.execute(f"INSERT INTO {table} (raw) VALUES (%s)", (payload,))
                cpu, wall = backend_cpu_s(pid) - cpu, time.perf_counter() - started
                results.setdefault(name, []).append((cpu, wall))
                conn.execute(f"DROP TABLE {table}")
    print(f"{len(payload)} bytes per payload, {args.inserts} inserts per round")
    for name, rounds in results.items():
        figures = ", ".join(
            f"{1000 * cpu / args.inserts:.1f} ms CPU ({1000 * wall / args.inserts:.1f} ms wall)"
            for cpu, wall in rounds
        )
        print(f"{name:9s} backend per insert: {figures}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
