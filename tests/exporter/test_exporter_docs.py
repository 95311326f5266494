"""docs/prometheus/: the Grafana dashboard and the alert rules parse, and use only the metrics
the exporter serves; docs/usage.md lists every one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from specmon.exporter.metrics import BASELINE_STATE, GAUGES, WORKER_UP

DOCS = Path(__file__).resolve().parents[2] / "docs"
SERVED = set(GAUGES) | {
    BASELINE_STATE,
    WORKER_UP,
    "specmon_target_info",
    "specmon_probes_total",
    "specmon_cycle_seconds_bucket",
    "specmon_cycle_seconds_sum",
    "specmon_cycle_seconds_count",
    "specmon_drafting_switches_total",
}
METRIC = re.compile(r"\bspecmon_[a-z_]+")


def _exprs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [e for k, v in node.items() for e in ([v] if k == "expr" else _exprs(v))]
    if isinstance(node, list):
        return [e for item in node for e in _exprs(item)]
    return []


def test_the_grafana_dashboard_uses_served_metrics() -> None:
    dashboard = json.loads((DOCS / "prometheus" / "grafana-dashboard.json").read_text())
    exprs = _exprs(dashboard["panels"])
    assert len(exprs) >= 10
    used = {m for e in exprs for m in METRIC.findall(e)}
    assert used <= SERVED, used - SERVED
    assert {
        "specmon_speedup_ratio",
        "specmon_speedup_ratio_low",
        "specmon_speedup_ratio_high",
        BASELINE_STATE,
        "specmon_cycle_seconds_bucket",
        "specmon_probe_accept_length",
        "specmon_last_probe_success_timestamp_seconds",
    } <= used
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_alert_rules_parse_and_say_what_they_should() -> None:
    rules = yaml.safe_load((DOCS / "prometheus" / "alerts.yml").read_text())
    by_name = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    losing = by_name["SpeculationLosing"]
    # On the interval's high end; the exporter serves it only while the baseline applies.
    assert losing["expr"] == "specmon_speedup_ratio_high < 0" and losing["for"] == "10m"
    assert by_name["SpecmonBaselineStale"]["expr"] == f'{BASELINE_STATE}{{state="stale"}} == 1'
    assert by_name["SpecmonBaselineUnverified"]["expr"] == (
        f'{BASELINE_STATE}{{state="unverified"}} == 1'
    )
    used = {m for r in by_name.values() for m in METRIC.findall(r["expr"])}
    assert used <= SERVED, used - SERVED


def test_usage_lists_every_metric() -> None:
    usage = (DOCS / "usage.md").read_text()
    for name in [
        *GAUGES,
        BASELINE_STATE,
        WORKER_UP,
        "specmon_target_info",
        "specmon_probes_total",
        "specmon_cycle_seconds",
    ]:
        assert f"`{name}" in usage, name
