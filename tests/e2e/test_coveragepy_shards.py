"""24 CI shards of one coverage.py run, each uploaded by the real ``codecovcli``
to a real ``covworker serve``, merge to what ``coverage combine`` says, on
either broker.

The oracle is coverage.py itself: the shards' data files combined by
``coverage combine`` and read from ``coverage json``'s totals (statements,
missing lines, lines with a branch partly taken), never covworker's parser.
Shard k calls f(k) with k and f(k+1) with k, so each shard takes one side of
each branch it reaches and only the combination takes both: the merge has
real work to do.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db.models import Commit, CommitReport, Repository, Upload, UploadState
from tests.support.brokers import BROKERS, broker_env, settle
from tests.support.processes import add_repo, covworker_serve, dramatiq_workers, migrated_database
from tests.support.uploaders import codecovcli, first_commit, uploader_env

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(400)]

SHARDS = 24
#: codecovcli processes at once, as a CI matrix's jobs finish close together.
AT_ONCE = 6


def program() -> str:
    """A module of ``SHARDS`` functions, each with a two-way branch."""
    parts = ["import sys\n", "def never():\n    return 0\n"]
    for k in range(SHARDS):
        parts.append(f"def f{k}(x):\n    if x % 2:\n        return {k} + x\n    return {k} - x\n")
    parts.append(
        "if __name__ == '__main__':\n"
        "    shard = int(sys.argv[1])\n"
        f"    globals()[f'f{{shard}}'](shard)\n"
        f"    globals()[f'f{{(shard + 1) % {SHARDS}}}'](shard)\n"
    )
    return "\n".join(parts)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, int]]:
    """A git checkout holding the program and one Cobertura report per
    shard; its HEAD; and ``coverage combine``'s totals of all shards."""
    repo = tmp_path_factory.mktemp("shards")
    (repo / "prog.py").write_text(program())

    def run(*args: str) -> None:
        subprocess.run(args, cwd=repo, check=True, capture_output=True, timeout=60)

    coverage = (sys.executable, "-m", "coverage")
    for k in range(SHARDS):
        data = f"--data-file=.cov-{k}"
        run(*coverage, "run", "--branch", data, "prog.py", str(k))
        run(*coverage, "xml", "-q", data, "-o", f"shard-{k}.xml")
    run(*coverage, "combine", "-q", "--keep", "--data-file=.cov-all",
        *(f".cov-{k}" for k in range(SHARDS)))  # fmt: skip
    run(*coverage, "json", "-q", "--data-file=.cov-all", "-o", "combined.json")
    totals = json.loads((repo / "combined.json").read_text())["totals"]
    sha = first_commit(repo, ["prog.py"], "the program")
    oracle = {
        "lines": totals["num_statements"],
        "misses": totals["missing_lines"],
        "partials": totals["num_partial_branches"],
        # coverage.py counts a line with a branch partly taken as covered;
        # Codecov's totals count it as partial, not hit.
        "hits": totals["covered_lines"] - totals["num_partial_branches"],
    }
    return repo, sha, oracle


@pytest.mark.parametrize("broker", BROKERS)
def test_twenty_four_coveragepy_shards_uploaded_by_codecovcli_merge_to_coverage_combine(
    broker: str,
    shards: tuple[Path, str, dict[str, int]],
    tmp_path: Path,
    namespace: str,
) -> None:
    checkout, sha, oracle = shards
    # combined, the branches the shards split are whole; ``never`` stays missed
    assert oracle["misses"] >= 1 and oracle["partials"] < SHARDS
    with (
        broker_env(broker, namespace) as chosen,
        migrated_database(namespace, **chosen) as (db_url, env),
    ):
        token = add_repo(env, "acme/shards")
        clients = uploader_env(env)
        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=4),
            covworker_serve(env, tmp_path / "api.log", workers=2) as served,
        ):

            def upload(k: int) -> subprocess.CompletedProcess[str]:
                return codecovcli(
                    clients, checkout, served.url, "upload-coverage",
                    "-r", "acme/shards", "-C", sha, "-B", "main", "-t", token,
                    "-n", f"shard-{k}", "-f", f"shard-{k}.xml",
                )  # fmt: skip

            with ThreadPoolExecutor(AT_ONCE) as pool:
                done = list(pool.map(upload, range(SHARDS)))
            failed = [d.stdout + d.stderr for d in done if d.returncode != 0]
            assert not failed, failed[0]
            settle(env, timeout_s=300)

        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            commit = (
                sa.select(Commit.id)
                .join(Repository)
                .where(Repository.name == "acme/shards", Commit.sha == sha)
                .scalar_subquery()
            )
            states = list(conn.scalars(sa.select(Upload.state).where(Upload.commit_id == commit)))
            totals = conn.scalar(
                sa.select(CommitReport.totals).where(CommitReport.commit_id == commit)
            )
        engine.dispose()
    assert states == [UploadState.MERGED] * SHARDS
    assert {k: totals[k] for k in oracle} == oracle
