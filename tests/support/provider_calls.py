"""Provider calls per upload, against a real ``covworker serve``, real workers
and the fake GitHub behind Prism: the e2e test of the shared rate limit
(tests/e2e/test_provider_budget.py) and ``benchmarks/provider_calls.py``.

:func:`feedback_stack` starts everything (optionally another source tree's
serve and workers, a benchmark's baseline); :class:`Stack` uploads as
codecov-cli does (commit, report, upload, ``PUT`` of the payload) and waits
for each commit's feedback to be done: every delivery row sent, skipped,
failed, or deferred for the repository's budget.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.db.models import Commit, PullDelivery
from tests.support.brokers import pipeline_settled
from tests.support.fake_github import GITHUB_SPEC, FakeGitHub, PrismProxy, free_port, prism_proxy
from tests.support.processes import (
    Served,
    add_repo,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
)
from tests.support.synthetic import lcov

CLI_VERSION = "10.4.0"
#: One small report: a file of ten lines, six hit.
PAYLOAD = lcov({"src/app.py": {n: (1 if n <= 6 else 0) for n in range(1, 11)}})
#: The reason a deferred row carries (app/providers/budget.py).
OVER_BUDGET = "spent its budget"


def many_flags_yaml(flags: int) -> str:
    """A ``codecov.yml`` asking for a project status per flag, for ``flags`` flags."""
    rows = "".join(f"    - name: f{i:03d}\n      paths: [src/f{i:03d}/]\n" for i in range(flags))
    return (
        "flag_management:\n  default_rules:\n    statuses:\n"
        "      - type: project\n        name_prefix: flag-\n"
        "  individual_flags:\n" + rows
    )


@dataclass
class Stack:
    fake: FakeGitHub
    proxy: PrismProxy
    served: Served
    env: dict[str, str]
    engine: sa.Engine
    database_url: str

    def add_repo(self, slug: str) -> str:
        return add_repo(self.env, slug)

    def upload(
        self, repo: str, token: str, sha: str, *, branch: str = "main", pull: int | None = None
    ) -> None:
        """One upload of :data:`PAYLOAD` to ``sha`` through codecov-cli's protocol."""
        owner, _, name = repo.partition("/")
        base = f"/upload/github/{owner}::::{name}/commits"
        commit: dict[str, Any] = {"branch": branch, "commitid": sha, "parent_commit_id": None,
                  "pullid": str(pull) if pull else None, "version": CLI_VERSION,
                  "cli_args": {}}  # fmt: skip
        self._post(base, token, commit)
        report = {"code": "default", "version": CLI_VERSION, "cli_args": {}}
        self._post(f"{base}/{sha}/reports", token, report)
        create = {"ci_service": "github-actions", "ci_url": f"https://ci.example/{sha}",
                  "cli_args": {}, "env": {}, "flags": [], "job_code": "1", "name": "unit",
                  "version": CLI_VERSION, "file_not_found": False,
                  "report_payload_bytes": len(PAYLOAD)}  # fmt: skip
        created = self._post(f"{base}/{sha}/reports/default/uploads", token, create)
        request = urllib.request.Request(created["raw_upload_location"], data=PAYLOAD, method="PUT")
        with urllib.request.urlopen(request, timeout=30) as reply:
            assert reply.status in (200, 201), reply.status

    def _post(self, path: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.served.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"token {token}",
                "Content-Type": "application/json",
                "User-Agent": f"codecov-cli/{CLI_VERSION}",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            answer: dict[str, Any] = json.loads(reply.read() or b"{}")
            return answer

    def deliveries(self, sha: str) -> list[tuple[int, str, str, str | None]]:
        """(version, target, state, error) of the commit's delivery rows."""
        with self.engine.connect() as conn:
            return [
                (int(v), str(t), str(s), e)
                for v, t, s, e in conn.execute(
                    sa.select(
                        PullDelivery.report_version,
                        PullDelivery.target,
                        PullDelivery.state,
                        PullDelivery.error,
                    )
                    .join(Commit)
                    .where(Commit.sha == sha)
                    .order_by(PullDelivery.id)
                )
            ]

    def feedback_done(self, sha: str, version: int, timeout_s: float = 120.0) -> None:
        """Wait until the version's prepare ran and each of its rows is done
        (or deferred: pending with the budget's reason). Not the broker's queues
        empty: a deferred row's message waits there until its budget allows."""
        deadline = time.monotonic() + timeout_s

        def done() -> bool:
            if not pipeline_settled(self.database_url):
                return False
            rows = [r for r in self.deliveries(sha) if r[0] == version]
            prepared = any(t == "prepare" and s != "pending" for _, t, s, _ in rows)
            return prepared and all(
                s != "pending" or OVER_BUDGET in (e or "") for _, t, s, e in rows if t != "pending"
            )

        while not done():
            assert time.monotonic() < deadline, f"feedback of {sha[:7]} v{version} not done"
            time.sleep(0.1)

    def calls(self, repo: str, since: int = 0) -> list[str]:
        """The requests naming ``repo`` the fake got, from the ``since``-th on."""
        with self.fake.lock:
            requests = self.fake.state.requests[since:]
        return [f"{r.method} {r.path}" for r in requests if r.path.startswith(f"/repos/{repo}")]

    def mark(self) -> int:
        with self.fake.lock:
            return len(self.fake.state.requests)


@contextmanager
def feedback_stack(
    tmp: Path, namespace: str, tree: Path | None = None, **settings: str
) -> Iterator[Stack]:
    """Fake GitHub behind Prism, a fresh database, ``covworker serve`` and one
    worker process (of ``tree``, if given) with these settings."""
    with (
        FakeGitHub() as fake,
        prism_proxy(GITHUB_SPEC, fake.url, tmp / f"prism-{namespace}.log") as proxy,
    ):
        port = free_port()
        with migrated_database(
            namespace,
            COVWORKER_UPLOAD_URL_SECRET="e2e-secret",
            COVWORKER_GITHUB_TOKEN="ghp_e2e",
            COVWORKER_GITHUB_API_URL=proxy.url,
            COVWORKER_PUBLIC_URL=f"http://127.0.0.1:{port}",
            **settings,
        ) as (db_url, env):
            engine = sa.create_engine(db_url)
            try:
                with (
                    dramatiq_workers(
                        env, tmp / f"worker-{namespace}.log", processes=1, threads=4, cwd=tree
                    ),
                    covworker_serve(
                        env,
                        tmp / f"api-{namespace}.log",
                        extra=("--port", str(port)),
                        cwd=tree,
                    ) as served,
                ):
                    yield Stack(fake, proxy, served, env, engine, db_url)
            finally:
                engine.dispose()
