"""``covworker bench`` end to end at tiny sizes, so the benchmark cannot rot.

Real CLI, real ``dramatiq benchmarks.stampede.worker`` processes, real Redis and
PostgreSQL, every strategy. It checks that the figures are all there and
consistent with each other, not how fast anything is: speed is judged by the
full run (``benchmarks/RESULTS-bench.md``), never by a test on a shared machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from benchmarks.stampede.config import STRATEGIES
from benchmarks.stampede.metrics import FIELDS
from benchmarks.stampede.report import markdown_report
from tests.support.faults.harness import FULL
from tests.support.processes import covworker, service_env
from tests.support.services import pg_admin_url, redis_test_url, require_redis, service_missing

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

UPLOADS, COMMITS, LIMIT = 6, 2, 3


def require_postgres() -> None:
    engine = sa.create_engine(pg_admin_url())
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        service_missing("PostgreSQL", exc)
    finally:
        engine.dispose()


def run_bench(
    tmp_path: Path,
    scenario: str,
    *extra: str,
    uploads: int = UPLOADS,
    commits: int = COMMITS,
    settings: dict[str, str] | None = None,
) -> tuple[dict[str, Any], str]:
    require_redis()
    require_postgres()
    out = tmp_path / "bench.json"
    env = service_env(redis_test_url(), pg_admin_url(), "unused-by-bench", **(settings or {}))
    done = covworker(
        env,
        "bench",
        "--scenario",
        scenario,
        "--uploads",
        str(uploads),
        "--commits",
        str(commits),
        "--processes",
        "1",
        "--threads",
        "4",
        "--limit",
        str(LIMIT),
        "--time-scale",
        "0.05",
        "--spread-s",
        "0.5",
        "--deadline-s",
        "60",
        "--json",
        str(out),
        "--log-dir",
        str(tmp_path / "logs"),
        *extra,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout


@pytest.mark.timeout(120)
# every scenario at COVWORKER_TEST_SCALE=full; the burst (its targets) by default, for CI's time
@pytest.mark.parametrize("scenario", ["burst", "trickle", "fleet"] if FULL else ["burst"])
def test_every_strategy_reports_every_figure_and_covworker_loses_nothing(
    tmp_path: Path, scenario: str
) -> None:
    document, stdout = run_bench(tmp_path, scenario)
    uploads = UPLOADS * COMMITS
    results = document["strategies"]
    assert list(results) == list(STRATEGIES)
    for strategy, figures in results.items():
        missing = [f for f in FIELDS if f not in figures]
        assert not missing, f"{strategy} lacks {missing}"
        assert figures["uploads"] == uploads and figures["commits"] == COMMITS
        # Every upload sent a finisher message: delivered at least once, or, for
        # covworker, dropped at enqueue under a pending finisher of its commit
        # (coalescing at enqueue), which leaves at least one per commit.
        if strategy.startswith("covworker"):
            assert figures["deliveries"] >= COMMITS, strategy
        else:
            assert figures["deliveries"] >= uploads, strategy
        assert figures["deliveries_rejected"] <= figures["deliveries"], strategy
        assert figures["uploads_merged"] + figures["lost_uploads"] == uploads, strategy
        assert figures["worker_seconds"] > 0 and figures["settle_s"] > 0, strategy
        # Process CPU holds the deliveries' thread CPU, which holds the finishers'.
        assert (
            figures["worker_cpu_seconds"]
            >= figures["worker_cpu_in_deliveries_seconds"]
            >= figures["finisher_cpu_seconds"]
            > 0
        ), strategy
        assert figures["redis_commands_per_upload"] > 0, strategy
        # A pass that merged something made a new report version, and only such a pass did.
        assert figures["report_versions"] <= figures["merge_passes"], strategy
        if figures["rejected_p50_ms"] is not None:
            assert figures["rejected_p50_ms"] <= figures["rejected_p99_ms"], strategy
        assert strategy in stdout
    lock_wait = results["lock-wait"]
    assert lock_wait["merge_passes"] == lock_wait["uploads_merged"], "one upload per pass"
    # Every pass holds the lock; a finisher delivered again (at-least-once: a
    # redelivery, a processor that finds its upload already merged and sends
    # the finisher once more) takes the lock and finds nothing left to merge.
    assert lock_wait["lock_acquisitions"] >= lock_wait["merge_passes"], "a pass per lock at most"

    cw = results["covworker"]
    assert not cw["timed_out"]
    assert cw["lost_uploads"] == 0 and cw["double_merged"] == 0
    assert cw["notifications_min"] == cw["notifications_max"] == 1
    assert cw["notifications"] == 1
    assert 1 <= cw["max_running_per_commit"] <= LIMIT
    assert cw["merge_passes"] >= COMMITS and cw["lock_acquisitions"] >= COMMITS
    targets = {t["target"]: t["met"] for t in document["targets"]}
    assert targets["no upload lost or merged twice"] is True
    if scenario == "burst":
        assert document["reference_merge_pass_s"] > 0
        assert any(name.startswith("worker-seconds <=") for name in targets)
        assert any(name.startswith("worker CPU <=") for name in targets)
        assert document["reference_merge_pass_cpu_s"] > 0
        # One round, one reference pass (``--repeat N`` measures one per round).
        assert document["reference_merge_pass_cpu_per_pass_s"] == [
            document["reference_merge_pass_cpu_s"]
        ]
        assert document["dramatiq_cpu_per_message_ms"] > 0, "the floor is measured in the run"
    # RESULTS-bench.md is rendered from this document (benchmarks/render_bench.py).
    markdown = markdown_report(document)
    assert "| measure | " + " | ".join(STRATEGIES) + " |" in markdown
    assert all(f"\n| {field} | " in markdown for field in FIELDS)


@pytest.mark.timeout(150)
# ``burst`` arrival is ``waves`` with one wave (every delay 0): not run here, for the suite's time.
@pytest.mark.parametrize("arrival", ["trickle", "waves"] if FULL else ["trickle"])
def test_the_monorepo_scenario_runs_tiny_reports_in_every_arrival_pattern(
    tmp_path: Path, arrival: str
) -> None:
    extra = ["--arrival", arrival, "--files", "30", "--lines", "20"]
    # A baseline beside covworker in one pattern; covworker alone in the others (the
    # suite's time: every strategy runs in the burst, trickle and fleet tests above).
    strategies = ("covworker", "lock-wait") if arrival == "waves" else ("covworker",)
    extra += [arg for s in strategies for arg in ("--strategy", s)]
    settings = {}
    if arrival == "trickle":  # a process of its own for the merge passes
        extra += ["--processes", "2", "--finisher-processes", "1"]
        # Every upload sends its finisher to the finisher queue, as a big one
        # does (a small one's waits behind its commit's uploads on the shared queue).
        settings["COVWORKER_FINISHER_AHEAD_MIN_BYTES"] = "1"
    document, stdout = run_bench(
        tmp_path, "monorepo", *extra, uploads=8, commits=1, settings=settings
    )
    assert (document["files"], document["lines_per_file"], document["arrival"]) == (
        30,
        20,
        arrival,
    )
    assert document["reference_merge_pass_cpu_s"] > 0, "the monorepo runs a reference pass"
    assert document["merged_report_mib"] > 0, "and measures the merged report it made"
    results = document["strategies"]
    assert list(results) == list(strategies)
    for strategy, figures in results.items():
        assert not [f for f in FIELDS if f not in figures], strategy
        assert figures["worker_cpu_seconds"] > 0, strategy
        assert figures["worker_peak_rss_mib"] > 0, strategy
    cw = results["covworker"]
    assert cw["lost_uploads"] == 0 and cw["double_merged"] == 0
    assert cw["notifications_min"] == cw["notifications_max"] == 1
    assert cw["uploads_merged"] == 8
    targets = {t["target"] for t in document["targets"]}
    if arrival == "trickle":
        assert "finisher CPU <= 10 x one full pass" in targets
        (rss,) = [t for t in document["targets"] if t["target"].startswith("peak RSS")]
        assert rss["met"] is not None, "judged against the measured merged report"
        # Only the finisher process merged; the other one only parsed.
        assert document["finisher_processes"] == 1
        merging, parsing = cw["worker_peak_rss_merging_mib"], cw["worker_peak_rss_parsing_only_mib"]
        assert merging > 0 and parsing > 0
        assert cw["worker_peak_rss_mib"] == max(merging, parsing)
    else:
        assert cw["worker_peak_rss_parsing_only_mib"] is None, "one process did everything"
    assert f"monorepo: 1 commit(s) x 8 uploads ({arrival}, 30 files x 20 lines each)" in " ".join(
        stdout.split()
    )


@pytest.mark.timeout(150)
def test_the_backlog_scenario_queues_unrelated_uploads_first_and_loses_nothing(
    tmp_path: Path,
) -> None:
    extra = ("--backlog", "24", "--strategy", "covworker")
    document, _ = run_bench(tmp_path, "backlog", *extra, uploads=3, commits=4)
    assert document["backlog"] == 24 and document["commits"] == 4
    for strategy, figures in document["strategies"].items():
        # Only the measured commits count; the backlog's uploads were processed too.
        assert figures["uploads"] == 12, strategy
        assert figures["worker_cpu_seconds"] > 0, strategy
    cw = document["strategies"]["covworker"]
    assert cw["lost_uploads"] == 0 and cw["double_merged"] == 0
    assert cw["notifications_min"] == cw["notifications_max"] == 1
    assert cw["notify_after_last_processed_p95_s"] is not None
    names = {t["target"] for t in document["targets"]}
    assert "at most 2 merge passes per commit on average" in names
