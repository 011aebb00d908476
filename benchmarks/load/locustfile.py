"""Locust users that upload as CI jobs do, through codecov-cli's protocol.

Each task is one commit: ``POST .../commits`` (with the pull request's number
for a pull's head), ``POST .../reports``, then the matrix's jobs: at once (up
to ``COVWORKER_LOAD_PARALLEL_JOBS`` in flight), or, with
``COVWORKER_LOAD_SPREAD`` seconds, each job at a uniform random time within
them, as the jobs of a CI matrix end on runners of different speeds. Each
job's ``POST
.../uploads`` (or ``/upload/test_results/v1``) and the ``PUT`` of its payload
to the ``raw_upload_location`` the answer names, exactly as codecov-cli 11
sends them. A line per commit goes to ``COVWORKER_LOAD_LOG`` (JSON): the
repository, SHA, the uploads whose PUT was answered 2xx and when the last
was, so the run can check what became of each one.

Configured by the orchestrator (``benchmarks/sustained_load.py``) through
the environment: ``COVWORKER_LOAD_MIX`` (``mix.json``), ``COVWORKER_LOAD_PLAN``
(repositories, tokens, pull requests), ``COVWORKER_LOAD_RATE`` (commits per
second per user). Run alone::

    locust -f benchmarks/load/locustfile.py --headless -u 10 -r 10 -t 60s --host URL
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import gevent
from gevent.pool import Pool
from locust import HttpUser, constant_throughput, task

MIX = json.loads(Path(os.environ["COVWORKER_LOAD_MIX"]).read_text())
PLAN = json.loads(Path(os.environ["COVWORKER_LOAD_PLAN"]).read_text())
RATE = float(os.environ.get("COVWORKER_LOAD_RATE", "0.1"))
PARALLEL_JOBS = int(os.environ.get("COVWORKER_LOAD_PARALLEL_JOBS", "20"))
#: Seconds over which a matrix's jobs end (0: all at once).
SPREAD_S = float(os.environ.get("COVWORKER_LOAD_SPREAD", "0"))
LOG = Path(os.environ["COVWORKER_LOAD_LOG"])
CLI_VERSION = "11.3.1"

_COVERAGE = [p for p in MIX["payloads"] if p["kind"] == "coverage"]
_TESTS = [p for p in MIX["payloads"] if p["kind"] == "test_results"]
_BODIES: dict[str, bytes] = {}
_PULLS = iter(PLAN["pulls"])
_LOCK = threading.Lock()
_SENT = 0


def _body(path: str) -> bytes:
    if path not in _BODIES:
        _BODIES[path] = Path(path).read_bytes()
    return _BODIES[path]


def _slug(name: str) -> str:
    owner, _, repo = name.rpartition("/")
    return f"{owner.replace('/', ':::')}::::{repo}"


class CiMatrix(HttpUser):
    """One CI pipeline: a commit and its matrix of uploads, every ``1/RATE`` s."""

    wait_time = constant_throughput(RATE)

    @task
    def commit(self) -> None:
        global _SENT
        with _LOCK:  # the n-th commit of every run draws the same: runs compare
            _SENT += 1
            rng = random.Random(_SENT)
        repo = rng.choice(PLAN["repos"])
        pull: dict[str, Any] | None = None
        if rng.random() < MIX["pull_share"]:
            with _LOCK:
                pull = next(_PULLS, None)
        if pull:  # its head is uploaded to the repository the fake GitHub has it in
            repo = next(r for r in PLAN["repos"] if r["name"] == pull["repo"])
        sha = pull["sha"] if pull else f"{rng.getrandbits(160):040x}"
        sizes, weights = zip(*MIX["matrix"], strict=True)
        jobs = rng.choices(sizes, weights)[0]
        headers = {
            "Authorization": f"token {repo['token']}",
            "User-Agent": f"codecov-cli/{CLI_VERSION}",
        }
        slug = _slug(repo["name"])
        base = f"/upload/github/{slug}/commits"
        body = {"branch": "feature" if pull else "main", "commitid": sha,
                "parent_commit_id": None, "pullid": str(pull["number"]) if pull else None,
                "version": CLI_VERSION, "cli_args": {}}  # fmt: skip
        started = time.time()
        if not self._ok(self.client.post(base, json=body, headers=headers, name="commit")):
            return
        reports = f"{base}/{sha}/reports"
        report = {"code": "default", "version": CLI_VERSION, "cli_args": {}}
        if not self._ok(self.client.post(reports, json=report, headers=headers, name="report")):
            return
        outcome: list[float] = []
        pool = Pool(PARALLEL_JOBS if not SPREAD_S else None)
        ends = sorted(rng.uniform(0, SPREAD_S) for _ in range(jobs)) if jobs > 1 else [0.0]
        for job, end in enumerate(ends):
            pool.spawn(self._job, rng, repo, sha, job, headers, outcome, started + end)
        pool.join()
        line = {"repo": repo["name"], "sha": sha, "jobs": jobs, "uploaded": len(outcome),
                "started": started, "last_put": max(outcome, default=None),
                "pull": pull["number"] if pull else None}  # fmt: skip
        with _LOCK, LOG.open("a") as out:
            out.write(json.dumps(line) + "\n")

    def _job(
        self,
        rng: random.Random,
        repo: dict[str, str],
        sha: str,
        job: int,
        headers: dict[str, str],
        outcome: list[float],
        at: float,
    ) -> None:
        gevent.sleep(max(0.0, at - time.time()))  # the job ends then
        tests = bool(_TESTS) and rng.random() < MIX["test_results_share"]
        if tests:
            chosen = rng.choice(_TESTS)
            url = "/upload/test_results/v1"
            extra = {"slug": _slug(repo["name"]), "commit": sha, "service": "github",
                     "branch": "main"}  # fmt: skip
        else:
            chosen = rng.choices(_COVERAGE, [p["weight"] for p in _COVERAGE])[0]
            url = f"/upload/github/{_slug(repo['name'])}/commits/{sha}/reports/default/uploads"
            extra = {}
        payload = _body(chosen["path"])
        create = {"ci_service": "github-actions", "ci_url": f"https://ci.example/{sha}/{job}",
                  "cli_args": {}, "env": {}, "flags": [f"job{job % 5}"], "job_code": str(job),
                  "name": f"job-{job}", "version": CLI_VERSION, "file_not_found": False,
                  "report_payload_bytes": len(payload), **extra}  # fmt: skip
        name = "test results" if tests else "upload"
        created = self.client.post(url, json=create, headers=headers, name=name)
        if not self._ok(created):
            return
        location = created.json()["raw_upload_location"]
        put = self.client.put(
            location,
            data=payload,
            headers={"User-Agent": f"codecov-cli/{CLI_VERSION}"},
            name=f"PUT {chosen['report_format']}",
        )
        if self._ok(put):
            outcome.append(time.time())

    @staticmethod
    def _ok(response: Any) -> bool:
        return response is not None and 200 <= response.status_code < 400
