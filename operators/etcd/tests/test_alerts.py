"""The etcd PrometheusRule (operators/etcd/monitoring.py) under ``promtool test rules``:
synthetic series of a 3-member cluster's own metrics (as the members serve them, scraped
through the client Service's ``metrics`` port) and of the operator's, for a healthy
cluster and for each failure an alert is for. The member alerts are the etcd project's
(etcd-io/etcd ``contrib/mixin/alerts/alerts.libsonnet``, whose own ``test.yaml`` checks
etcdInsufficientMembers the same way). Skipped where promtool is missing
(``apt-get install -y prometheus``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from operators.etcd.monitoring import groups, prometheus_rule
from operators.monitoring.tests.promtool import AlertCheck, needs_promtool, promtool_test_rules

pytestmark = needs_promtool
CLUSTER = {"job": "etcd", "namespace": "ns", "service": "e-client", "endpoint": "metrics"}
OPERATOR = {"job": "etcd-operator", "instance": "10.0.0.9:8081", "namespace": "ns",
            "cluster": "e"}


def series(name: str, **labels: str) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def member(name: str, ordinal: int) -> str:
    return series(name, **CLUSTER, instance=f"10.0.0.{ordinal + 1}:2381", pod=f"e-{ordinal}")


def promtool(tmp_path: Path, inputs: list[tuple[str, str]], checks: list[AlertCheck]) -> None:
    promtool_test_rules(tmp_path, groups(), inputs, checks)


def fired(alert: str, value: str, **labels: str) -> dict[str, Any]:
    """The alert as promtool reports it: its labels, and its annotations templated with
    ``labels`` and ``value``."""
    (rule,) = [r for g in groups() for r in g["rules"] if r["alert"] == alert]

    def template(text: str) -> str:
        text = text.replace("{{ $value }}", value)
        return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m[1], ""), text)

    return {"exp_labels": {**labels, **rule["labels"]},
            "exp_annotations": {k: template(v) for k, v in rule["annotations"].items()}}


def healthy_members(minutes: int) -> list[tuple[str, str]]:
    return [(member(name, i), f"{value}x{minutes}") for i in range(3) for name, value in (
        ("up", "1"), ("etcd_server_has_leader", "1"),
        ("etcd_server_leader_changes_seen_total", "1"),
        ("etcd_network_peer_sent_failures_total", "0"))]


def test_a_healthy_cluster_and_operator_raise_nothing(tmp_path: Path) -> None:
    operator = [(series("etcd_operator_backups_taken_total", **OPERATOR), "0+1x60"),
                (series("etcd_operator_backups_failed_total", **OPERATOR), "0x60"),
                (series("etcd_operator_cluster_members_healthy", **OPERATOR), "3x60"),
                (series("etcd_operator_cluster_desired_size", **OPERATOR), "3x60")]
    promtool(tmp_path, healthy_members(60) + operator, [
        ("59m", name, []) for name in ("etcdMembersDown", "etcdInsufficientMembers",
                                       "etcdNoLeader", "etcdHighNumberOfLeaderChanges",
                                       "etcdBackupFailed", "etcdClusterMembersUnhealthy")])


def test_a_member_down_for_ten_minutes_pages(tmp_path: Path) -> None:
    inputs = [s for s in healthy_members(40) if not s[0].startswith("up{") or "e-2" not in s[0]]
    inputs.append((member("up", 2), "1x10 0x30"))
    down = {k: v for k, v in CLUSTER.items() if k != "endpoint"}
    promtool(tmp_path, inputs, [
        ("15m", "etcdMembersDown", []),  # down for 5m: not yet
        ("25m", "etcdMembersDown", [fired("etcdMembersDown", "1", **down)]),
        ("25m", "etcdInsufficientMembers", [])])  # 2 of 3 answer: a quorum


def test_two_of_three_members_down_is_no_quorum(tmp_path: Path) -> None:
    inputs = [s for s in healthy_members(20) if not s[0].startswith("up{")
              or "e-0" in s[0]]
    inputs += [(member("up", 1), "1x5 0x15"), (member("up", 2), "1x5 0x15")]
    promtool(tmp_path, inputs, [
        ("6m", "etcdInsufficientMembers", []),
        ("10m", "etcdInsufficientMembers", [fired("etcdInsufficientMembers", "1",
                                                  **CLUSTER)])])


def test_a_member_without_a_leader_pages_after_a_minute(tmp_path: Path) -> None:
    inputs = [s for s in healthy_members(10)
              if "etcd_server_has_leader" not in s[0] or "e-1" not in s[0]]
    inputs.append((member("etcd_server_has_leader", 1), "1x3 0x7"))
    labels = {**CLUSTER, "instance": "10.0.0.2:2381", "pod": "e-1"}
    promtool(tmp_path, inputs, [
        ("4m", "etcdNoLeader", []),
        ("6m", "etcdNoLeader", [fired("etcdNoLeader", "0", **labels)])])


def test_four_leader_changes_in_a_quarter_hour_warn(tmp_path: Path) -> None:
    inputs = [s for s in healthy_members(30) if "leader_changes" not in s[0]]
    inputs += [(member("etcd_server_leader_changes_seen_total", i), "1x5 2 3 4 5 6x25")
               for i in range(3)]
    labels = {**CLUSTER}
    promtool(tmp_path, inputs, [
        ("7m", "etcdHighNumberOfLeaderChanges", []),
        ("15m", "etcdHighNumberOfLeaderChanges",
         [fired("etcdHighNumberOfLeaderChanges", "5", **labels)])])


def test_failing_backups_warn_unless_one_succeeded_since(tmp_path: Path) -> None:
    failed = series("etcd_operator_backups_failed_total", **OPERATOR)
    taken = series("etcd_operator_backups_taken_total", **OPERATOR)
    promtool(tmp_path, [(failed, "0x5 1 2 3x20"), (taken, "0x30")], [
        ("4m", "etcdBackupFailed", []),
        ("10m", "etcdBackupFailed", [fired("etcdBackupFailed", "3", **OPERATOR)])])
    # a stream cut, retried at once with success: no alert
    promtool(tmp_path, [(failed, "0x5 1x25"), (taken, "0x5 1x25")], [
        ("10m", "etcdBackupFailed", [])])


def test_fewer_healthy_members_than_the_spec_for_ten_minutes_warn(tmp_path: Path) -> None:
    promtool(tmp_path, [(series("etcd_operator_cluster_members_healthy", **OPERATOR),
                         "3x5 2x30"),
                        (series("etcd_operator_cluster_desired_size", **OPERATOR), "3x35")], [
        ("10m", "etcdClusterMembersUnhealthy", []),
        ("20m", "etcdClusterMembersUnhealthy",
         [fired("etcdClusterMembersUnhealthy", "2", **OPERATOR)])])


def test_the_rule_is_a_valid_prometheus_rule_file(tmp_path: Path) -> None:
    rule = prometheus_rule({"team": "db"})
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(rule.spec.model_dump(by_alias=True, exclude_none=True,
                                                        mode="json")))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                            text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
