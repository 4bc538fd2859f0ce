"""The operator's own alerts (operators/monitoring/selfmonitoring.py) under ``promtool test
rules``: synthetic series of its metrics for a healthy operator, one Prometheus cannot
scrape, one never scraped, and one whose reconciles keep failing. Skipped where promtool
is missing (``apt-get install -y prometheus``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from operators.monitoring.selfmonitoring import alert_group, prometheus_rule
from operators.monitoring.tests.promtool import AlertCheck, needs_promtool, promtool_test_rules

pytestmark = needs_promtool
UP = 'up{job="monitoring-operator",instance="10.0.0.1:8081"}'
ERRORS = 'controller_runtime_reconcile_errors_total{job="monitoring-operator",' \
         'instance="10.0.0.1:8081",controller="prometheus"}'


def promtool(tmp_path: Path, series: list[tuple[str, str]], checks: list[AlertCheck]) -> None:
    promtool_test_rules(tmp_path, [alert_group()], series, checks)


def fired(alert: str, severity: str, **labels: str) -> dict[str, Any]:
    """The alert as promtool reports it: its labels and its annotations, templated."""
    (rule,) = [r for r in alert_group()["rules"] if r["alert"] == alert]
    annotations = {k: v.replace("{{ $labels.controller }}", labels.get("controller", ""))
                   for k, v in rule["annotations"].items()}
    return {"exp_labels": {"severity": severity, **labels}, "exp_annotations": annotations}


def test_a_healthy_operator_raises_nothing(tmp_path: Path) -> None:
    promtool(tmp_path, [(UP, "1x60"), (ERRORS, "0x60")], [
        ("59m", "MonitoringOperatorDown", []),
        ("59m", "MonitoringOperatorReconcileErrors", [])])


def test_an_operator_down_or_never_scraped_pages(tmp_path: Path) -> None:
    down = [fired("MonitoringOperatorDown", "critical", job="monitoring-operator")]
    promtool(tmp_path, [(UP, "1x10 0x20")], [
        ("14m", "MonitoringOperatorDown", []),  # down for 4m: not yet
        ("17m", "MonitoringOperatorDown", down)])
    promtool(tmp_path, [('up{job="something-else"}', "1x20")], [
        ("4m", "MonitoringOperatorDown", []),
        ("10m", "MonitoringOperatorDown", down)])


def test_reconciles_failing_for_a_quarter_hour_warn(tmp_path: Path) -> None:
    promtool(tmp_path, [(UP, "1x60"), (ERRORS, "0x10 1+1x50")], [
        ("20m", "MonitoringOperatorReconcileErrors", []),
        ("30m", "MonitoringOperatorReconcileErrors",
         [fired("MonitoringOperatorReconcileErrors", "warning", controller="prometheus")])])


def test_the_rule_is_a_valid_prometheus_rule_file(tmp_path: Path) -> None:
    rule = prometheus_rule({"team": "web"})
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(rule.spec.model_dump(by_alias=True, exclude_none=True,
                                                        mode="json")))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                            text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
