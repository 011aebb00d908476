"""The bench's output: a rich table with ratios to ``covworker``, the targets, JSON."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from benchmarks.stampede.metrics import FIELDS

#: Extra rows shown under the headline fields.
DETAIL_ROWS = (
    "notify_after_last_processed_s",
    "notify_after_last_processed_p95_s",
    "notify_sent_s",
    "notify_queued_s",
    "notify_ran_s",
    "merge_passes_per_commit",
    "worker_peak_rss_mib",
    "worker_peak_rss_merging_mib",
    "worker_peak_rss_parsing_only_mib",
    "finisher_cpu_seconds",
    "deliveries_rejected",
    "dead_lettered",
    "max_running_per_commit",
    "timed_out",
)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def _ratio(value: Any, base: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    if not isinstance(base, int | float) or isinstance(base, bool) or base == 0:
        return ""
    return f" ({value / base:.1f}x)"


def run_title(document: dict[str, Any]) -> str:
    """What one ``--json`` document measured, in a line (the tables' title)."""
    d, repeat = document, document.get("repeat", 1)
    shape = ""
    if d.get("scenario") == "monorepo":
        shape = f" ({d['arrival']}, {d['files']:,} files x {d['lines_per_file']} lines each)"
    if d.get("scenario") == "backlog":
        shape = f" behind {d['backlog']:,} unrelated processor messages"
    return (
        f"{d['scenario']}: {d['commits']} commit(s) x {d['uploads']} uploads{shape}, "
        f"{d['processes']} x {d['threads']} worker threads"
        + (
            f" ({d['finisher_processes']} process(es) for the finisher queue only)"
            if d.get("finisher_processes")
            else ""
        )
        + f", time scale {d['time_scale']:g}, "
        f"limit {d['limit']}, max retries {d['max_retries']}"
        + (f", median of {repeat} runs" if repeat > 1 else "")
    )


def _result_rows(results: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(measure, a cell per strategy); baselines show ``(N.Nx covworker)``."""
    base = results.get("covworker", {})
    rows = []
    for field in (*FIELDS, *DETAIL_ROWS):
        cells = []
        for strategy, figures in results.items():
            value = figures.get(field)
            ratio = "" if strategy == "covworker" else _ratio(value, base.get(field))
            cells.append(_fmt(value) + ratio)
        rows.append((field, cells))
    return rows


def results_table(title: str, results: dict[str, dict[str, Any]]) -> Table:
    """Rows are the measures, columns the strategies."""
    table = Table(title=title)
    table.add_column("measure")
    for strategy in results:
        table.add_column(strategy, justify="right")
    for field, cells in _result_rows(results):
        table.add_row(field, *cells)
    return table


def _target(name: str, met: bool | None, measured: str) -> dict[str, Any]:
    return {"target": name, "met": met, "measured": measured}


def _at_most(
    name: str, value: float | None, bound: float, shown: str, missing: str
) -> dict[str, Any]:
    """A bound on a figure a run may not have (no delivery rejected, nothing
    notified): unknown then, ``missing`` as the measurement; otherwise met
    when ``value <= bound``, measured as ``shown`` (a format of ``value`` and
    ``bound``)."""
    if value is None:
        return _target(name, None, missing)
    return _target(name, value <= bound, shown.format(value=value, bound=bound))


def check_targets(
    scenario: str,
    results: dict[str, dict[str, Any]],
    *,
    limit: int,
    reference_pass_s: float | None,
    reference_pass_cpu_s: float | None = None,
    merged_report_bytes: int | None = None,
    dramatiq_cpu_per_message_s: float | None = None,
    arrival: str | None = None,
) -> list[dict[str, Any]]:
    """The issue's targets for ``covworker``, judged on this run's figures."""
    cw = results.get("covworker")
    if cw is None:
        return []
    out = [
        _target(
            "no upload lost or merged twice",
            cw["lost_uploads"] == 0 and cw["double_merged"] == 0,
            f"lost {cw['lost_uploads']}, double {cw['double_merged']}",
        ),
        _target(
            "exactly 1 notification per commit",
            cw["notifications_min"] == 1 and cw["notifications_max"] == 1,
            f"min {cw['notifications_min']}, max {cw['notifications_max']} per commit",
        ),
        _target(
            f"at most {limit} finishers run per commit (recorded intervals)",
            cw["max_running_per_commit"] <= limit,
            f"max {cw['max_running_per_commit']} running at once",
        ),
    ]
    if scenario == "burst":
        out += _burst_targets(
            cw, results, reference_pass_s, reference_pass_cpu_s, dramatiq_cpu_per_message_s
        )
    if scenario == "monorepo":
        out += _monorepo_targets(cw, arrival, reference_pass_cpu_s, merged_report_bytes)
    if scenario == "backlog":
        out += _backlog_targets(cw)
    others = [f["settle_s"] for s, f in results.items() if s != "covworker"]
    if scenario == "fleet" and others:
        best = min(others)
        out.append(
            _target(
                "settles at least as fast as the best other strategy",
                cw["settle_s"] <= best,
                f"{cw['settle_s']:.2f} s vs best other {best:.2f} s",
            )
        )
    return out


def _burst_targets(
    cw: dict[str, Any],
    results: dict[str, dict[str, Any]],
    reference_pass_s: float | None,
    reference_pass_cpu_s: float | None,
    floor_s: float | None,
) -> list[dict[str, Any]]:
    passes, locks = cw["merge_passes_max_per_commit"], cw["lock_acquisitions_max_per_commit"]
    out = [
        _target("at most 3 merge passes per commit", passes <= 3, str(passes)),
        _target("at most 3 lock acquisitions per commit", locks <= 3, str(locks)),
        _target(
            "finisher messages delivered at most 10 (coalescing at enqueue)",
            cw["deliveries"] <= 10,
            f"{cw['deliveries']} delivered for {cw.get('uploads', '?')} finisher sends",
        ),
    ]
    out.append(
        _at_most(
            "rejected-delivery p50 at most 5 ms",
            cw["rejected_p50_ms"],
            5.0,
            "{value:.2f} ms",
            "no rejected delivery",
        )
    )
    if reference_pass_cpu_s is not None and floor_s is not None:
        cpu_bound = 1.5 * reference_pass_cpu_s * cw["commits"] + floor_s * cw["deliveries"]
        out.append(
            _target(
                "worker CPU <= 1.5 x one merge pass + Dramatiq's CPU per delivery",
                cw["worker_cpu_seconds"] <= cpu_bound,
                f"{cw['worker_cpu_seconds']:.3f} s vs bound {cpu_bound:.3f} s "
                f"(pass {reference_pass_cpu_s:.3f} s CPU, "
                f"Dramatiq's {floor_s * 1000:.3f} ms x {cw['deliveries']} deliveries, "
                "measured in this run)",
            )
        )
    if reference_pass_s is not None:
        bound = 1.5 * reference_pass_s * cw["commits"] + 0.005 * cw["deliveries"]
        out.append(
            _target(
                "worker-seconds <= 1.5 x one merge pass + 5 ms per delivery",
                cw["worker_seconds"] <= bound,
                f"{cw['worker_seconds']:.3f} s vs bound {bound:.3f} s "
                f"(pass {reference_pass_s:.3f} s x {cw['commits']} commit(s), "
                f"{cw['deliveries']} deliveries)",
            )
        )
        out.append(
            _at_most(
                "notified within one merge pass + 0.5 s",
                cw["notify_latency_s"],
                reference_pass_s + 0.5,
                "{value:.3f} s vs bound {bound:.3f} s",
                "not notified",
            )
        )
    for strategy, other in results.items():
        if strategy.startswith("covworker") or not cw["worker_cpu_seconds"]:
            continue
        ratio = other["worker_cpu_seconds"] / cw["worker_cpu_seconds"]
        out.append(
            _target(f"at least 10x less worker CPU than {strategy}", ratio >= 10, f"{ratio:.1f}x")
        )
    lock_wait = results.get("lock-wait")
    if lock_wait is not None and cw["worker_seconds"] > 0:
        ratio = lock_wait["worker_seconds"] / cw["worker_seconds"]
        out.append(
            _target(
                "at least 20x fewer worker-seconds than lock-wait", ratio >= 20, f"{ratio:.1f}x"
            )
        )
    return out


def _monorepo_targets(
    cw: dict[str, Any],
    arrival: str | None,
    reference_pass_cpu_s: float | None,
    merged_report_bytes: int | None,
) -> list[dict[str, Any]]:
    out = []
    cpu = cw["finisher_cpu_seconds"]
    passes = cw["merge_passes_max_per_commit"]
    if arrival == "trickle" and reference_pass_cpu_s:
        out.append(
            _target(
                "finisher CPU <= 10 x one full pass",
                cpu <= 10 * reference_pass_cpu_s,
                f"{cpu:.2f} s vs {reference_pass_cpu_s:.2f} s ({cpu / reference_pass_cpu_s:.1f}x)",
            )
        )
    if arrival == "trickle":
        out.append(
            _at_most(
                "notified at most 2 s after the last upload is processed",
                cw["notify_after_last_processed_s"],
                2.0,
                "{value:.3f} s",
                "not notified",
            )
        )
        rss, merged = cw["worker_peak_rss_mib"], (merged_report_bytes or 0) / 2**20
        out.append(
            _target(
                "peak RSS of a worker <= 4 x the merged report in memory",
                rss <= 4 * merged if merged else None,
                f"{rss:.0f} MiB peak vs {merged:.1f} MiB ({rss / merged:.1f}x)"
                if merged
                else f"{rss:.0f} MiB peak (no reference pass: the merged report is not measured)",
            )
        )
    if arrival == "burst":
        out.append(_target("at most 3 merge passes", passes <= 3, str(passes)))
        if reference_pass_cpu_s:
            out.append(
                _target(
                    "CPU of the passes <= 1.5 x one full pass",
                    cpu <= 1.5 * reference_pass_cpu_s,
                    f"{cpu:.2f} s vs {reference_pass_cpu_s:.2f} s "
                    f"({cpu / reference_pass_cpu_s:.1f}x; finisher threads' CPU)",
                )
            )
    return out


def _backlog_targets(cw: dict[str, Any]) -> list[dict[str, Any]]:
    passes = cw["merge_passes_per_commit"]
    return [
        _at_most(
            "notification p95 at most 1 s after the commit's last upload is processed",
            cw["notify_after_last_processed_p95_s"],
            1.0,
            "{value:.3f} s",
            "not notified",
        ),
        _target("at most 2 merge passes per commit on average", passes <= 2, f"{passes:.2f}"),
    ]


def check_scaling(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worker-seconds of the largest size over the smallest, per strategy.

    The target (``covworker`` only): at most 1.2 x the growth of the upload
    count (1,000 uploads cost at most 12 x the worker-seconds of 100).
    """
    if len(documents) < 2:
        return []
    small = min(documents, key=lambda d: d["uploads"])
    large = max(documents, key=lambda d: d["uploads"])
    growth = large["uploads"] / small["uploads"]
    out = []
    for strategy, figures in large["strategies"].items():
        before = small["strategies"].get(strategy)
        if before is None or not before["worker_seconds"]:
            continue
        ratio = figures["worker_seconds"] / before["worker_seconds"]
        measured = (
            f"{ratio:.1f}x ({before['worker_seconds']:.3f} s at {small['uploads']} uploads, "
            f"{figures['worker_seconds']:.3f} s at {large['uploads']})"
        )
        if strategy == "covworker":
            name = f"covworker: worker-seconds grow <= {1.2 * growth:.0f}x for {growth:g}x uploads"
            out.append(_target(name, ratio <= 1.2 * growth, measured))
        else:
            out.append(_target(f"{strategy}: worker-seconds growth (reported)", None, measured))
    return out


def targets_table(targets: list[dict[str, Any]], title: str = "targets for covworker") -> Table:
    table = Table(title=title)
    table.add_column("target")
    table.add_column("met")
    table.add_column("measured", justify="right")
    for t in targets:
        met = {True: "[green]met[/green]", False: "[red]MISSED[/red]", None: "n/a"}[t["met"]]
        table.add_row(t["target"], met, t["measured"])
    return table


def markdown_report(document: dict[str, Any]) -> str:
    """One ``--json`` document (one size, or several with their scaling) as Markdown:
    the same tables the terminal shows, plus each strategy's per-run figures."""
    if "runs" in document:
        parts = [markdown_report(size) for size in document["runs"]]
        if document.get("scaling"):
            parts.append(_markdown_targets(document["scaling"], "growth with the upload count"))
        return "\n\n".join(parts)
    d = document
    repeat = d.get("repeat", 1)
    lines = [f"**{run_title(d)}**"]
    if d.get("reference_merge_pass_s") is not None:
        cpu = d.get("reference_merge_pass_cpu_s")
        lines.append(
            f"\nOne merge pass of all {d['uploads']} uploads (reference, in-process): "
            f"{d['reference_merge_pass_s']:.3f} s"
            + (f", {cpu:.3f} s CPU" if cpu is not None else "")
            + (
                " (median of "
                + ", ".join(f"{c:.3f}" for c in d["reference_merge_pass_cpu_per_pass_s"])
                + ", one per round)"
                if len(d.get("reference_merge_pass_cpu_per_pass_s") or ()) > 1
                else ""
            )
            + (
                f"; the merged report decoded: {d['merged_report_mib']:.1f} MiB in memory"
                if d.get("merged_report_mib")
                else ""
            )
        )
    if d.get("dramatiq_cpu_per_message_ms") is not None:
        lines.append(
            "\nDramatiq's own CPU per delivered message (a do-nothing actor on the app's "
            f"broker, measured in this run): {d['dramatiq_cpu_per_message_ms']:.3f} ms"
        )
    results: dict[str, dict[str, Any]] = d["strategies"]
    lines += ["", "| measure | " + " | ".join(results) + " |"]
    lines.append("|---|" + "---:|" * len(results))
    lines += [f"| {field} | " + " | ".join(cells) + " |" for field, cells in _result_rows(results)]
    if d.get("targets"):
        lines += ["", _markdown_targets(d["targets"], "target (covworker)")]
    if repeat > 1:
        shown = (
            "worker_cpu_seconds",
            "worker_seconds",
            "settle_s",
            "notify_latency_s",
            "lost_uploads",
            "notifications",
        )
        lines += ["", "Per run (in order):", "", "| strategy | " + " | ".join(shown) + " |"]
        lines.append("|---|" + "---|" * len(shown))
        for strategy, figures in results.items():
            per_run = figures.get("per_run", {})
            cells = [", ".join(_fmt(v) for v in per_run.get(name, [])) for name in shown]
            lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _markdown_targets(targets: list[dict[str, Any]], heading: str) -> str:
    verdict = {True: "met", False: "**MISSED**", None: "n/a"}
    rows = [f"| {heading} | met | measured |", "|---|---|---|"]
    rows += [f"| {t['target']} | {verdict[t['met']]} | {t['measured']} |" for t in targets]
    return "\n".join(rows)
