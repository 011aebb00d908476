"""A capacity model from sustained-load runs, and its check against another run.

Each component's CPU is taken as a fixed part (what it costs idle) plus a
part per upload; both come from one run of ``benchmarks/sustained_load.py``
(its ``idle_cores``, measured before the load, and ``cores``, measured over
the load and the drain). From them:

- the cores each component needs at a rate of uploads, for a daily volume
  with its peak (``--peak``: the busiest hour's rate over the day's mean);
- the highest rate one machine of ``--cores`` cores sustains, and which
  component saturates it;
- with ``--check OTHER.json``: the cores, Redis commands and PostgreSQL
  transactions per second that the model predicts at the other run's rate,
  against what that run measured (the error, which should be within 25 %).

    python benchmarks/capacity_model.py RUN.json [--check OTHER.json] [--cores 2]
        [--peak 3] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Daily volumes the docs size for.
DAILY = (100_000, 1_000_000)
#: Highest share of a core a component is planned at (headroom for bursts).
PLANNED_LOAD = 0.7
#: A Redis server runs its commands on one thread: a shard is one core at most.
REDIS_SHARD_CORES = 1.0


@dataclass(frozen=True)
class Component:
    name: str
    idle_cores: float
    cpu_s_per_upload: float

    def cores(self, uploads_per_s: float) -> float:
        return self.idle_cores + uploads_per_s * self.cpu_s_per_upload


@dataclass(frozen=True)
class Rate:
    """A count per second: a fixed part (idle) and a part per upload."""

    idle_per_s: float
    per_upload: float

    def at(self, uploads_per_s: float) -> float:
        return self.idle_per_s + uploads_per_s * self.per_upload

    @classmethod
    def of(cls, run: dict[str, Any], per_upload_key: str, idle_key: str) -> Rate:
        uploads, window = max(1, run["uploads_answered"]), run["window_s"]
        idle = run["idle_rates"][idle_key]
        total = run["per_upload"][per_upload_key] * uploads
        return cls(idle, max(0.0, total - idle * window) / uploads)


@dataclass(frozen=True)
class Model:
    components: list[Component]
    redis_commands: Rate
    postgres_transactions: Rate
    mean_raw_kb: float

    @classmethod
    def of(cls, run: dict[str, Any]) -> Model:
        window, uploads = run["window_s"], max(1, run["uploads_answered"])
        components = []
        for name, busy in run["cores"].items():
            idle = run["idle_cores"].get(name, 0.0)  # the load generator is not idle
            spent = max(0.0, (busy - idle) * window)  # per upload, beyond the idle cost
            components.append(Component(name, idle, spent / uploads))
        return cls(
            components,
            Rate.of(run, "redis_commands", "redis_commands_per_s"),
            Rate.of(run, "postgres_transactions", "postgres_transactions_per_s"),
            run["mix"]["mean_raw_kb"],
        )

    def rate_of(self, run: dict[str, Any]) -> float:
        """A run's uploads per second over the window its cores were measured in."""
        return float(run["uploads_answered"]) / float(run["window_s"])

    def saturation(self, cores: float, exclude: tuple[str, ...] = ()) -> tuple[float, str]:
        """The highest upload rate ``cores`` sustain with every component on
        them, and the component that takes the largest share of it."""
        used = [c for c in self.components if c.name not in exclude]
        idle = sum(c.idle_cores for c in used)
        per_upload = sum(c.cpu_s_per_upload for c in used)
        rate = (cores - idle) / per_upload if per_upload else math.inf
        top = max(used, key=lambda c: c.cpu_s_per_upload)
        return rate, top.name

    def plan(self, uploads_per_day: int, peak: float) -> dict[str, Any]:
        rate = uploads_per_day / 86_400 * peak
        cores = {c.name: c.cores(rate) for c in self.components if c.name != "load_generator"}
        redis_cores = cores.get("redis", 0.0)
        return {
            "uploads_per_day": uploads_per_day,
            "peak_uploads_per_s": round(rate, 2),
            "cores": {k: round(v, 2) for k, v in cores.items()},
            "worker_processes": max(1, math.ceil(cores.get("worker", 0.0) / PLANNED_LOAD)),
            "serve_processes": max(1, math.ceil(cores.get("serve", 0.0) / PLANNED_LOAD)),
            "redis_shards": max(1, math.ceil(redis_cores / (REDIS_SHARD_CORES * PLANNED_LOAD))),
            "postgres_cores": max(1, math.ceil(cores.get("postgres", 0.0) / PLANNED_LOAD)),
            "redis_commands_per_s": round(self.redis_commands.at(rate)),
            "postgres_transactions_per_s": round(self.postgres_transactions.at(rate)),
            "raw_mb_per_s": round(rate * self.mean_raw_kb / 1e3, 2),
        }


def check(model: Model, other: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's prediction at ``other``'s rate against ``other``'s measurement."""
    rate = model.rate_of(other)
    rows = []
    for component in model.components:
        measured = other["cores"].get(component.name)
        if measured is None:
            continue
        predicted = component.cores(rate)
        rows.append(_row(f"{component.name} cores", predicted, measured))
    uploads = max(1, other["uploads_answered"])
    window = other["window_s"]
    for label, counted, key in (
        ("Redis commands/s", model.redis_commands, "redis_commands"),
        ("PostgreSQL transactions/s", model.postgres_transactions, "postgres_transactions"),
    ):
        measured = other["per_upload"][key] * uploads / window
        rows.append(_row(label, counted.at(rate), measured))
    return rows


def _row(what: str, predicted: float, measured: float) -> dict[str, Any]:
    error = (predicted - measured) / measured if measured else math.inf
    return {
        "what": what,
        "predicted": round(predicted, 3),
        "measured": round(measured, 3),
        "error": round(error, 3),
    }


def markdown(model: Model, plans: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    out = ["| component | idle cores | CPU ms per upload |", "|---|---:|---:|"]
    for c in model.components:
        out.append(f"| {c.name} | {c.idle_cores:.3f} | {c.cpu_s_per_upload * 1000:.1f} |")
    out += ["", "| per day | peak uploads/s | worker processes | serve processes | "
            "Redis shards | PostgreSQL cores | Redis commands/s | PostgreSQL transactions/s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for p in plans:
        out.append(
            f"| {p['uploads_per_day']:,} | {p['peak_uploads_per_s']} | {p['worker_processes']} "
            f"| {p['serve_processes']} | {p['redis_shards']} | {p['postgres_cores']} "
            f"| {p['redis_commands_per_s']:,} | {p['postgres_transactions_per_s']:,} |"
        )
    if rows:
        out += [
            "",
            "| at the second run's rate | predicted | measured | error |",
            "|---|---:|---:|---:|",
        ]
        for r in rows:
            out.append(f"| {r['what']} | {r['predicted']} | {r['measured']} | {r['error']:+.0%} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a sustained_load.py --json result")
    parser.add_argument("--check", type=Path, help="another run to check the prediction against")
    parser.add_argument("--cores", type=float, default=2.0, help="cores of one machine")
    parser.add_argument("--peak", type=float, default=3.0, help="busiest hour over the day's mean")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    run = json.loads(args.run.read_text())
    model = Model.of(run)
    rate, top = model.saturation(args.cores)
    plans = [model.plan(n, args.peak) for n in DAILY]
    rows = check(model, json.loads(args.check.read_text())) if args.check else []
    result = {
        "model_from": str(args.run),
        "components": [c.__dict__ for c in model.components],
        "one_machine": {"cores": args.cores, "max_uploads_per_s": round(rate, 2), "largest": top},
        "plans": plans,
        "check": rows,
    }
    print(markdown(model, plans, rows) if args.markdown else json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
