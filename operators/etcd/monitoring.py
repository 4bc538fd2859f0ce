"""Monitoring etcd clusters and their operator with the monitoring operator
(``operators/monitoring``): ``python -m operators.etcd.monitoring --namespace NS --label
team=ops | kubectl apply -f -`` prints

- a ServiceMonitor over every EtcdCluster's client Service (port ``metrics``: each
  member's own ``/metrics``), job ``etcd`` (the Service's ``app.kubernetes.io/name``);
- a Service over the operator's ``metrics`` port and a ServiceMonitor for it, job
  ``etcd-operator`` (:mod:`operators.etcd.metrics`);
- a PrometheusRule with the etcd project's alerts (etcd-io/etcd
  ``contrib/mixin/alerts/alerts.libsonnet``: etcdMembersDown, etcdInsufficientMembers,
  etcdNoLeader, etcdHighNumberOfLeaderChanges; its default selector ``job=~".*etcd.*"``,
  and ``instance, pod`` as the per-member labels summed away, since targets found through
  a ServiceMonitor also carry ``pod``), and the operator's own: etcdBackupFailed,
  etcdClusterMembersUnhealthy.

``tests/test_alerts.py`` runs the rules under ``promtool test rules``.
"""

from __future__ import annotations

from typing import Any

from operators.etcd.objects import MANAGED_BY, NAME, OPERATOR, SERVICE
from operators.monitoring import selfmonitoring
from operators.monitoring.resources.prometheusrule import PrometheusRule, PrometheusRuleSpec
from operators.monitoring.resources.servicemonitor import (
    Endpoint,
    ServiceMonitor,
    ServiceMonitorSpec,
)
from setpoint.resources.models.core_v1 import Service
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta

MEMBERS_JOB = "etcd"
"""The members' ``job``: the client Services' ``app.kubernetes.io/name``."""
OPERATOR_JOB = OPERATOR
OPERATOR_METRICS_PORT = 8081
ETCD_SELECTOR = 'job=~".*etcd.*"'
"""The etcd mixin's ``etcd_selector`` (``config.libsonnet``)."""
INSTANCE_LABELS = "instance, pod"
"""The mixin's ``etcd_instance_labels``: what tells one member's series from another's."""


def _alert(name: str, expr: str, for_: str, severity: str, summary: str,
           description: str) -> dict[str, Any]:
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": severity},
            "annotations": {"description": description, "summary": summary}}


def member_alerts() -> dict[str, Any]:
    """The etcd mixin's membership and leadership alerts, read from the members' own
    metrics; ``cluster`` in their descriptions is the ``service`` label
    (``<cluster>-client``)."""
    sel, inst = ETCD_SELECTOR, INSTANCE_LABELS
    where = 'etcd cluster "{{ $labels.namespace }}/{{ $labels.service }}"'
    return {"name": "etcd", "rules": [
        _alert("etcdMembersDown",
               f"max without (endpoint) (\n  sum without ({inst}) (up{{{sel}}} == bool 0)\n"
               f"or\n  count without (To) (\n    sum without ({inst}) (rate("
               f"etcd_network_peer_sent_failures_total{{{sel}}}[120s])) > 0.01\n  )\n)\n> 0",
               "10m", "critical", "etcd cluster members are down.",
               f"{where}: members are down ({{{{ $value }}}})."),
        _alert("etcdInsufficientMembers",
               f"sum(up{{{sel}}} == bool 1) without ({inst}) < ((count(up{{{sel}}}) "
               f"without ({inst}) + 1) / 2)",
               "3m", "critical", "etcd cluster has insufficient number of members.",
               f"{where}: insufficient members ({{{{ $value }}}})."),
        _alert("etcdNoLeader", f"etcd_server_has_leader{{{sel}}} == 0", "1m", "critical",
               "etcd cluster has no leader.",
               f"{where}: member {{{{ $labels.instance }}}} has no leader."),
        _alert("etcdHighNumberOfLeaderChanges",
               f"increase((max without ({inst}) (etcd_server_leader_changes_seen_total"
               f"{{{sel}}}) or 0*absent(etcd_server_leader_changes_seen_total{{{sel}}}))"
               "[15m:1m]) >= 4",
               "5m", "warning", "etcd cluster has high number of leader changes.",
               f"{where}: {{{{ $value }}}} leader changes within the last 15 minutes. "
               "Frequent elections may be a sign of insufficient resources, high network "
               "latency, or disruptions by other components and should be investigated."),
    ]}


def operator_alerts() -> dict[str, Any]:
    """Alerts on the operator's own metrics (:mod:`operators.etcd.metrics`)."""
    where = 'EtcdCluster "{{ $labels.namespace }}/{{ $labels.cluster }}"'
    return {"name": "etcd-operator", "rules": [
        # a stream cut is retried at once: only failures with no snapshot since are news
        _alert("etcdBackupFailed",
               "increase(etcd_operator_backups_failed_total[15m]) > 0 unless on (namespace, "
               "cluster) increase(etcd_operator_backups_taken_total[15m]) > 0",
               "0m", "warning", "etcd backups are failing.",
               f"{where}: snapshot attempts failed in the last 15 minutes and none "
               "succeeded (see its EtcdBackups' Complete condition)."),
        _alert("etcdClusterMembersUnhealthy",
               "etcd_operator_cluster_members_healthy < etcd_operator_cluster_desired_size",
               "10m", "warning", "etcd cluster has fewer healthy members than it should.",
               f"{where}: {{{{ $value }}}} healthy voting members, fewer than spec.size, "
               "for 10 minutes (see its Degraded condition)."),
    ]}


def groups() -> list[dict[str, Any]]:
    return [member_alerts(), operator_alerts()]


def members_service_monitor(labels: dict[str, str]) -> ServiceMonitor:
    """``labels``: what the Prometheus' ``serviceMonitorSelector`` matches."""
    return ServiceMonitor(
        metadata=ObjectMeta(name="etcd-members", labels={MANAGED_BY: OPERATOR, **labels}),
        spec=ServiceMonitorSpec(
            selector=LabelSelector(match_labels={NAME: MEMBERS_JOB, MANAGED_BY: OPERATOR,
                                                 SERVICE: "client"}),
            job_label=NAME, endpoints=[Endpoint(port="metrics", interval="30s")]))


def operator_service() -> Service:
    return selfmonitoring.service(OPERATOR_JOB, OPERATOR_METRICS_PORT)


def operator_service_monitor(labels: dict[str, str]) -> ServiceMonitor:
    return selfmonitoring.service_monitor(labels, OPERATOR_JOB)


def prometheus_rule(labels: dict[str, str]) -> PrometheusRule:
    """``labels``: what the Prometheus' ``ruleSelector`` matches."""
    return PrometheusRule(metadata=ObjectMeta(name="etcd", labels={MANAGED_BY: OPERATOR,
                                                                   **labels}),
                          spec=PrometheusRuleSpec.model_validate({"groups": groups()}))


def main(argv: list[str] | None = None) -> None:
    selfmonitoring.print_manifests(
        __doc__.split("\n\n")[0], "etcd-operator",
        lambda labels: [members_service_monitor(labels), operator_service(),
                        operator_service_monitor(labels), prometheus_rule(labels)], argv)

if __name__ == "__main__":
    main()
