"""The Grafana dashboard, the Prometheus scrape example, and the metrics a
running worker and sweeper really export."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from grafana_foundation_sdk.cog import plugins
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard

from tests.support.paths import ROOT
from tests.support.private_services import free_port
from tests.support.processes import covworker, dramatiq_workers, migrated_database

DASHBOARD = ROOT / "deploy" / "grafana" / "covworker.json"
METRIC = re.compile(r"\b((?:covworker|dramatiq)_[a-z_]+)\b")
pytestmark = pytest.mark.timeout(180)


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def lost_in_grafanas_model(data: dict[str, Any]) -> list[str]:
    """Paths of the dashboard that Grafana's typed dashboard model (the
    grafana-foundation-sdk) does not keep: unknown keys, wrong shapes."""
    plugins.register_default_plugins()
    back = json.loads(json.dumps(Dashboard.from_json(data), cls=JSONEncoder))

    def diff(mine: Any, theirs: Any, path: str) -> list[str]:
        if isinstance(mine, dict):
            if not isinstance(theirs, dict):
                return [path]
            return [
                p
                for key, value in mine.items()
                for p in (
                    diff(value, theirs[key], f"{path}.{key}")
                    if key in theirs
                    else [f"{path}.{key}"]
                )
            ]
        if isinstance(mine, list):
            if not isinstance(theirs, list) or len(mine) != len(theirs):
                return [path]
            return [
                p
                for i, pair in enumerate(zip(mine, theirs, strict=True))
                for p in diff(*pair, f"{path}[{i}]")
            ]
        return [] if mine == theirs else [path]

    return diff(data, back, "")


def charted_metrics() -> set[str]:
    names = set()
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            for name in METRIC.findall(target["expr"]):
                names.add(re.sub(r"_(bucket|sum|count)$", "", name))
    return names


def test_the_dashboard_is_kept_whole_by_grafanas_dashboard_model() -> None:
    assert lost_in_grafanas_model(dashboard()) == []


def test_the_model_check_catches_a_misspelt_key_and_a_wrong_shape() -> None:
    bad = copy.deepcopy(dashboard())
    bad["panels"][0]["gridpos"] = bad["panels"][0].pop("gridPos")
    bad["panels"][1]["fieldConfig"]["defaults"]["unitt"] = "s"
    assert {".panels[0].gridpos", ".panels[1].fieldConfig.defaults.unitt"} <= set(
        lost_in_grafanas_model(bad)
    )


def test_every_panel_queries_the_provisioned_prometheus_and_has_a_unique_place() -> None:
    data = dashboard()
    source = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text()
    )["datasources"][0]
    (variable,) = data["templating"]["list"]
    assert variable["current"]["value"] == source["uid"] and source["type"] == "prometheus"
    places = set()
    for panel in data["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"] and all(t["expr"] for t in panel["targets"])
        place = (panel["gridPos"]["x"], panel["gridPos"]["y"])
        assert place not in places
        places.add(place)


def test_the_prometheus_example_scrapes_the_ports_compose_publishes() -> None:
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    targets = {
        t for job in config["scrape_configs"] for s in job["static_configs"] for t in s["targets"]
    }
    assert targets == {"worker:9191", "sweeper:9192"}
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert compose["prometheus"]["profiles"] == ["monitoring"]
    assert compose["grafana"]["profiles"] == ["monitoring"]


def scrape(port: int) -> dict[str, float]:
    """Every sample of a metrics endpoint: ``name{labels}`` -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def wait_for_series(
    port: int, series: str, proc: subprocess.Popen[Any], log: Path
) -> dict[str, float]:
    """Scrape until ``series`` is exported (the worker process has booted)."""
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            samples = scrape(port)
            if series in samples:
                return samples
        except OSError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


def names(samples: dict[str, float]) -> set[str]:
    found = {key.partition("{")[0] for key in samples}
    return found | {re.sub(r"_(bucket|sum|count|total)$", "", n) for n in found}


def value(samples: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in samples.items() if k.startswith(prefix))


@pytest.mark.integration
@pytest.mark.e2e
def test_a_running_worker_and_sweeper_export_every_metric_the_dashboard_charts(
    tmp_path: Path, namespace: str
) -> None:
    worker_port = free_port()
    with migrated_database(
        namespace,
        COVWORKER_METRICS="true",
        COVWORKER_SWEEPER_METRICS_PORT="0",
        dramatiq_prom_host="127.0.0.1",
        dramatiq_prom_port=str(worker_port),
        dramatiq_prom_db=str(tmp_path / "prom"),
    ) as (_, env):
        log = tmp_path / "worker.log"
        sweeper = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "sweep", "--every", "1"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert sweeper.stdout is not None
            first = sweeper.stdout.readline()
            assert "serving metrics on 127.0.0.1:" in first, first
            sweeper_port = int(first.rsplit(":", 1)[1])
            with dramatiq_workers(env, log, processes=1, threads=2) as proc:
                lcov_ok = 'covworker_uploads_processed_total{format="lcov",outcome="processed"}'
                at_start = wait_for_series(worker_port, lcov_ok, proc, log)
                # Series exist from start-up, at zero, before any upload.
                assert (
                    at_start['covworker_uploads_processed_total{format="lcov",outcome="processed"}']
                    == 0
                )
                assert at_start['covworker_webhook_deliveries_total{outcome="failed"}'] == 0

                report = tmp_path / "a.info"
                report.write_text("SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n")
                done = covworker(
                    env,
                    "upload",
                    "--create",
                    "--repo",
                    "acme/web",
                    "--commit",
                    "a" * 40,
                    "--wait",
                    "--timeout",
                    "60",
                    str(report),
                )
                assert done.returncode == 0, done.stdout + done.stderr

                worker = scrape(worker_port)
                assert (
                    worker['covworker_uploads_processed_total{format="lcov",outcome="processed"}']
                    == 1
                )
                assert worker["covworker_uploads_merged_total"] == 1
                assert value(worker, "covworker_notify_lag_seconds_count") == 1
                sweeper_samples = scrape(sweeper_port)
                assert 'covworker_queue_depth{queue="covworker",state="dead"}' in sweeper_samples
                assert sweeper_samples['covworker_uploads_pending{state="uploaded"}'] == 0

                missing = charted_metrics() - names(worker) - names(sweeper_samples)
                assert not missing, f"charted but not exported: {sorted(missing)}"
        finally:
            sweeper.terminate()
            sweeper.wait(timeout=30)
