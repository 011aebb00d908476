"""codecov-cli's gcov plugin end to end: a C project built with ``--coverage``,
its tests run, then ``codecovcli do-upload --plugin gcov`` (which runs
``gcov -pb`` over the build's ``.gcno`` files and uploads the ``*.gcov``
listings) against ``covworker serve`` with real ``dramatiq`` workers, Redis
and PostgreSQL. The merged report equals gcov's own JSON intermediate of the
same run (``gcov --json-format -b``), read with Codecov's rules.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.coverage import Report, codec, parse_report
from app.db.models import Commit, CommitReport, Repository, Upload, UploadState
from tests.support.brokers import broker_env, settle
from tests.support.paths import FIXTURES
from tests.support.processes import add_repo, covworker_serve, dramatiq_workers, migrated_database
from tests.support.uploaders import first_commit, uploader, uploader_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not shutil.which("g++") or not shutil.which("gcov"), reason="needs gcc"),
]

SOURCES = ("calc.c", "calc.h", "test_calc.c", "pick.cc")


def built_and_tested(tmp_path: Path) -> tuple[Path, str]:
    """A git checkout of the fixture program (``src/``), built from its root
    with ``--coverage`` into ``build/`` and its tests run; its HEAD."""
    checkout = tmp_path / "checkout"
    (checkout / "src").mkdir(parents=True)
    for name in SOURCES:
        shutil.copy(FIXTURES / "programs" / "gcov" / name, checkout / "src" / name)
    sha = first_commit(checkout, ["src"], "sources")
    (checkout / "build").mkdir()
    run = {"cwd": checkout, "check": True, "capture_output": True}
    subprocess.run(
        ["gcc", "--coverage", "-O0", "-o", "build/test_calc", "src/calc.c", "src/test_calc.c"],
        **run,
    )
    subprocess.run(["g++", "--coverage", "-O0", "-o", "build/pick", "src/pick.cc"], **run)
    subprocess.run(["build/test_calc"], **run)
    subprocess.run(["build/pick"], **run)
    return checkout, sha


def gcov_json_of(checkout: Path, tmp_path: Path) -> Report:
    """gcov's JSON intermediate of the same run, written outside the checkout
    (so the uploader cannot find it), each document read and merged."""
    oracle = tmp_path / "oracle"
    oracle.mkdir()
    notes = sorted(str(p) for p in (checkout / "build").glob("*.gcno"))
    subprocess.run(
        ["gcov", "--json-format", "-b", *notes], cwd=oracle, check=True, capture_output=True
    )
    report = Report()
    for document in sorted(oracle.glob("*.gcov.json.gz")):
        report.merge(parse_report(document.read_bytes()))
    return report


def test_codecovcli_gcov_plugin_uploads_merge_to_gcovs_own_json_of_the_run(
    tmp_path: Path, namespace: str
) -> None:
    checkout, sha = built_and_tested(tmp_path)
    expected = gcov_json_of(checkout, tmp_path)
    assert set(expected.files) == {f"src/{n}" for n in SOURCES}
    with (
        broker_env("redis", namespace) as chosen,
        migrated_database(namespace, COVWORKER_UPLOAD_URL_SECRET="e2e-secret", **chosen) as (
            db_url,
            env,
        ),
    ):
        token = add_repo(env, "acme/calc")
        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=2),
            covworker_serve(env, tmp_path / "api.log", workers=1) as served,
        ):
            done = subprocess.run(
                [uploader("codecovcli"), "-u", served.url, "do-upload",
                 "--git-service", "github", "--plugin", "gcov", "-r", "acme/calc",
                 "-C", sha, "-B", "main", "-t", token, "-n", "gcc", "-Z"],
                cwd=checkout, env=uploader_env(env), capture_output=True, text=True,
                timeout=300,
            )  # fmt: skip
            output = done.stdout + done.stderr
            assert done.returncode == 0, output
            assert "Running gcov on the following list of files" in output
            settle(env, timeout_s=300)

        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            columns = (Upload.state, Upload.report_format, Upload.error, Upload.skipped_records)
            uploads = list(conn.execute(sa.select(*columns)))
            blob = conn.scalar(
                sa.select(CommitReport.report)
                .join(Commit)
                .join(Repository)
                .where(Repository.name == "acme/calc", Commit.sha == sha)
            )
        engine.dispose()
    assert [(u.state, u.report_format, u.error, u.skipped_records) for u in uploads] == [
        (UploadState.MERGED, "gcov-text", None, None)
    ]
    assert blob is not None
    merged = codec.load(blob)
    # codecov-cli uploaded one listing per source file, named by gcov -p
    # (src#calc.c.gcov, ...), each placed in the repository by its 0:Source: path
    assert set(merged.files) == set(expected.files)
    assert merged == expected
    assert merged.totals() == expected.totals()
    assert merged.totals().branches > 0 and merged.totals().partials > 0
