"""``covworker bench``: every strategy on the same scenario, side by side, in one run."""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from app.cli.render import console as terminal
from app.settings import Settings
from benchmarks.stampede.config import (
    ARRIVALS,
    CHOICES,
    DEFAULT_LOCK_WAIT_S,
    SCENARIOS,
    STRATEGIES,
)
from benchmarks.stampede.metrics import combine, figures
from benchmarks.stampede.report import (
    check_scaling,
    check_targets,
    results_table,
    run_title,
    targets_table,
)
from benchmarks.stampede.runner import (
    ReferencePass,
    RunPlan,
    dramatiq_floor,
    median_reference,
    reference_merge_pass,
    run_strategy,
)
from benchmarks.stampede.scenarios import MONOREPO_FILES, MONOREPO_LINES, Shape

#: Width of the tables when the output is not a terminal (a file, a test).
REPORT_WIDTH = 150

#: Wall-clock cap of one strategy's run, seconds: a strategy that never
#: settles (lost uploads, endless retries) is stopped and reported as it is.
DEFAULT_DEADLINE_S = 300.0
#: ``trickle``: processor messages of a commit are spread over this long.
DEFAULT_SPREAD_S = 5.0
#: Per scenario where it differs: uploads per commit, commits, spread (seconds).
SCENARIO_DEFAULTS: dict[str, dict[str, Any]] = {
    "monorepo": {"uploads": [200], "commits": 1, "spread_s": 60.0},
    "backlog": {"uploads": [20], "commits": 50, "spread_s": DEFAULT_SPREAD_S},
}
#: RabbitMQ of ``--broker rabbitmq``, by default.
DEFAULT_RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
#: ``backlog``: unrelated processor messages queued first, by default.
DEFAULT_BACKLOG = 2000


def _default(name: str) -> Any:
    """A setting's built-in default (the environment is read when the bench runs)."""
    return Settings.model_fields[name].default


def add_bench_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="the finisher stampede on real Redis, PostgreSQL and workers, per strategy",
        description=__doc__,
    )
    p.add_argument("--scenario", choices=SCENARIOS, default="burst")
    p.add_argument(
        "--strategy",
        action="append",
        choices=CHOICES,
        help="strategy to run (repeatable; default: the first four; covworker-no-debounce "
        "is covworker with COVWORKER_FINISHER_DEBOUNCE_MS=0, covworker-one-queue covworker "
        "with every finisher and notify on the shared queue)",
    )
    p.add_argument(
        "--uploads",
        type=int,
        nargs="+",
        default=None,
        help="uploads per commit (default 167; monorepo 200, backlog 20); several sizes run "
        "one after the other and their worker-seconds are compared",
    )
    p.add_argument("--commits", type=int, help="commits (default 1; backlog 50)")
    p.add_argument(
        "--files",
        type=int,
        help=f"files per report (default 20; monorepo {MONOREPO_FILES:,})",
    )
    p.add_argument(
        "--lines", type=int, help=f"lines per file (default 60; monorepo {MONOREPO_LINES})"
    )
    p.add_argument(
        "--arrival",
        choices=ARRIVALS,
        default="burst",
        help="monorepo: uploads arrive at once, evenly over --spread-s, or in 4 waves",
    )
    p.add_argument(
        "--backlog",
        type=int,
        default=DEFAULT_BACKLOG,
        help=f"backlog: unrelated processor messages queued first (default {DEFAULT_BACKLOG:,})",
    )
    p.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--threads", type=int, default=8, help="threads per process (default 8)")
    p.add_argument(
        "--finisher-processes",
        type=int,
        default=0,
        help="of --processes, how many consume only the finisher queue, the rest every other "
        "queue (default 0: each process consumes every queue)",
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiply every timeout, lease, backoff and delay by this (default 1)",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write the figures as JSON")
    p.add_argument(
        "--lock-timeout-s",
        type=float,
        default=DEFAULT_LOCK_WAIT_S,
        help="blocking lock timeout of the baselines, before scaling "
        f"(default {DEFAULT_LOCK_WAIT_S:g})",
    )
    p.add_argument(
        "--limit",
        "--counter-limit",
        dest="limit",
        type=int,
        default=_default("finisher_concurrency"),
        help="finishers per commit: the gate's and the baselines' limit "
        f"(default {_default('finisher_concurrency')})",
    )
    p.add_argument(
        "--max-retries",
        type=int,
        default=_default("max_retries"),
        help=f"Retries budget of a message (default {_default('max_retries')})",
    )
    p.add_argument(
        "--deadline-s",
        type=float,
        default=DEFAULT_DEADLINE_S,
        help="stop a strategy that has not settled after this long "
        f"(default {DEFAULT_DEADLINE_S:g})",
    )
    p.add_argument(
        "--spread-s",
        type=float,
        default=None,
        help="trickle, monorepo trickle and waves: processors of a commit spread over this "
        f"long (default {DEFAULT_SPREAD_S:g}; monorepo 60)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run every strategy this many times, in rotating order, and report medians "
        "(losses, double merges and limits at their worst)",
    )
    p.add_argument("--log-dir", type=Path, help="keep the worker logs here")
    p.add_argument(
        "--broker",
        action="append",
        choices=("redis", "rabbitmq"),
        help="Dramatiq broker of the workers (repeatable: each strategy runs on each, side "
        "by side; a RabbitMQ run is labelled <strategy>@rabbitmq; default redis)",
    )
    p.add_argument(
        "--rabbitmq-url",
        default=DEFAULT_RABBITMQ_URL,
        help=f"RabbitMQ of --broker rabbitmq (default {DEFAULT_RABBITMQ_URL.replace('%', '%%')}; "
        "every run "
        "declares queues of its own and deletes them after)",
    )
    p.set_defaults(run=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    if not 0 <= args.finisher_processes < args.processes:
        raise SystemExit(
            f"--finisher-processes {args.finisher_processes}: from 0 to --processes - 1 "
            f"({args.processes - 1}); a process must be left for the uploads"
        )
    if args.finisher_processes and "covworker-one-queue" in (args.strategy or ()):
        raise SystemExit("--finisher-processes: covworker-one-queue has no finisher queue")
    settings = Settings()
    console = terminal if terminal.is_terminal else Console(width=REPORT_WIDTH)
    strategies = [
        strategy if broker == "redis" else f"{strategy}@{broker}"
        for strategy in dict.fromkeys(args.strategy or STRATEGIES)
        for broker in dict.fromkeys(args.broker or ["redis"])
    ]
    defaults = SCENARIO_DEFAULTS.get(args.scenario, {})
    sizes = list(dict.fromkeys(args.uploads or defaults.get("uploads", [167])))
    commits = args.commits or defaults.get("commits", 1)
    spread_s = args.spread_s if args.spread_s is not None else defaults.get("spread_s", 5.0)
    monorepo = args.scenario == "monorepo"
    shape = Shape(
        files=args.files or (MONOREPO_FILES if monorepo else Shape.files),
        lines=args.lines or (MONOREPO_LINES if monorepo else Shape.lines),
        monorepo=monorepo,
        arrival=args.arrival,
        backlog=args.backlog if args.scenario == "backlog" else 0,
    )
    documents = []
    with tempfile.TemporaryDirectory(prefix="covworker-bench-") as tmp:
        for uploads in sizes:
            log_dir = (args.log_dir or Path(tmp)) / f"uploads-{uploads}"
            log_dir.mkdir(parents=True, exist_ok=True)
            plan = RunPlan(
                scenario=args.scenario,
                uploads=uploads,
                commits=commits,
                processes=args.processes,
                finisher_processes=args.finisher_processes,
                threads=args.threads,
                time_scale=args.time_scale,
                limit=args.limit,
                max_retries=args.max_retries,
                lock_wait_s=args.lock_timeout_s,
                deadline_s=args.deadline_s,
                spread_s=spread_s,
                settings=settings,
                rabbitmq_url=args.rabbitmq_url,
                log_dir=log_dir,
                shape=shape,
            )
            documents.append(_run_size(plan, strategies, args.repeat, console))
    scaling = check_scaling(documents)
    if scaling:
        console.print(targets_table(scaling, title="cost as the upload count grows"))
    if args.json:
        output: dict[str, Any] = (
            documents[0] if len(documents) == 1 else {"runs": documents, "scaling": scaling}
        )
        args.json.write_text(json.dumps(output, indent=2) + "\n")
    return 0


def _run_size(
    plan: RunPlan, strategies: list[str], repeat: int, console: Console
) -> dict[str, Any]:
    """Every strategy at one size: print the tables, return the JSON document."""
    started = time.time()
    results, reference = _run_all(plan, strategies, repeat, console)
    floor_s = dramatiq_floor(plan) if plan.scenario == "burst" and reference else None
    targets = check_targets(
        plan.scenario,
        results,
        limit=plan.limit,
        reference_pass_s=reference.wall_s if reference else None,
        reference_pass_cpu_s=reference.cpu_s if reference else None,
        merged_report_bytes=reference.merged_report_bytes if reference else None,
        dramatiq_cpu_per_message_s=floor_s,
        arrival=plan.shape.arrival if plan.scenario == "monorepo" else None,
    )
    document: dict[str, Any] = {
        "scenario": plan.scenario,
        "files": plan.shape.files,
        "lines_per_file": plan.shape.lines,
        "arrival": plan.shape.arrival if plan.scenario == "monorepo" else None,
        "backlog": plan.shape.backlog,
        "spread_s": plan.spread_s,
        "uploads": plan.uploads,
        "commits": plan.commits,
        "processes": plan.processes,
        "finisher_processes": plan.finisher_processes,
        "threads": plan.threads,
        "time_scale": plan.time_scale,
        "limit": plan.limit,
        "max_retries": plan.max_retries,
        "lock_timeout_s": plan.lock_wait_s,
        "repeat": repeat,
        "machine": platform.platform(),
        "started_at": started,
        "reference_merge_pass_s": reference.wall_s if reference else None,
        "reference_merge_pass_cpu_s": reference.cpu_s if reference else None,
        "reference_merge_pass_cpu_per_pass_s": list(reference.cpu_per_pass) if reference else [],
        "merged_report_mib": reference.merged_report_bytes / 2**20 if reference else None,
        "dramatiq_cpu_per_message_ms": floor_s * 1000 if floor_s is not None else None,
        "strategies": results,
        "targets": targets,
    }
    console.print(results_table(f"covworker bench --scenario {run_title(document)}", results))
    if reference is not None:
        each = (
            f" (median of {len(reference.cpu_per_pass)}: "
            + ", ".join(f"{cpu:.3f}" for cpu in reference.cpu_per_pass)
            + ")"
            if len(reference.cpu_per_pass) > 1
            else ""
        )
        console.print(
            f"one merge pass of all {plan.uploads} uploads: {reference.wall_s:.3f} s, "
            f"{reference.cpu_s:.3f} s CPU{each}; the merged report decoded: "
            f"{reference.merged_report_bytes / 2**20:.1f} MiB in memory"
        )
    if targets:
        console.print(targets_table(targets))
    return document


def _run_all(
    plan: RunPlan, strategies: list[str], repeat: int, console: Console
) -> tuple[dict[str, dict[str, Any]], ReferencePass | None]:
    total = plan.uploads * plan.commits
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    # The yardstick of the CPU targets. A burst's pass takes some 50 ms of
    # CPU, and one such sample on a shared machine is off by a third either
    # way: the burst measures one per round, next to that round's runs, and
    # uses the medians. A monorepo's (minutes to set up) is measured once.
    measured = plan.scenario in ("burst", "monorepo") and any(
        s.split("@")[0] == "covworker" for s in strategies
    )
    passes = (repeat if plan.scenario == "burst" else 1) if measured else 0
    references: list[ReferencePass] = []
    with Progress(*columns, console=console, transient=False) as bar:
        reference_task = bar.add_task("reference merge pass", total=passes, visible=passes > 0)

        def measure_reference() -> None:
            label = "reference" + (f" {len(references) + 1}/{passes}" if passes > 1 else "")

            def phase(what: str) -> None:
                bar.update(reference_task, description=f"{label}: {what}")

            references.append(reference_merge_pass(plan, phase))
            bar.update(
                reference_task,
                description=f"{label}: {references[-1].cpu_s:.3f} s CPU",
                completed=len(references),
            )

        tasks = {s: bar.add_task(s, total=total * repeat) for s in strategies}
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
        for round_ in range(repeat):
            if len(references) < passes:
                measure_reference()
            # Rotate the order each round, so drift in the machine's load is shared.
            for strategy in strategies[round_:] + strategies[:round_]:
                task = tasks[strategy]
                label = f"{strategy}" + (f" {round_ + 1}/{repeat}" if repeat > 1 else "")

                def phase(what: str, task: Any = task, label: str = label) -> None:
                    bar.update(task, description=f"{label}: {what}")

                def progress(merged: int, task: Any = task, done: int = round_ * total) -> None:
                    bar.update(task, completed=done + merged)

                facts = run_strategy(plan, strategy, phase, progress)
                runs[strategy].append(figures(facts))
                phase("done" + (" (deadline hit)" if facts.timed_out else ""))
    reference = median_reference(references) if references else None
    return {s: combine(runs[s]) for s in strategies}, reference
