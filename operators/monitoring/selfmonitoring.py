"""The monitoring operator, monitored: a Service over its ``metrics`` port, a
ServiceMonitor scraping it and a PrometheusRule alerting on it, for a Prometheus of its own
to select (``python -m operators.monitoring.selfmonitoring --namespace NS | kubectl apply
-f -``; the tests apply the same objects).

The alerts read the metrics the runtime serves under controller-runtime's names
(``setpoint/runtime/_metrics.py``), so they are the ones a controller-runtime operator's
runbooks know:

- ``MonitoringOperatorDown`` (critical): no successful scrape of the operator for 5m, or
  no scrape at all (``absent``): nothing reconciles, configurations go stale;
- ``MonitoringOperatorReconcileErrors`` (warning): a controller's reconciles keep failing
  for 15m (``controller_runtime_reconcile_errors_total`` rising);
- ``MonitoringOperatorWorkqueueBacklog`` (warning): a controller's queue has stayed deeper
  than its workers can drain (depth > 10 for 15m).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from operators.monitoring.podparts import MANAGED_BY, NAME
from operators.monitoring.resources.prometheusrule import PrometheusRule, PrometheusRuleSpec
from operators.monitoring.resources.servicemonitor import (
    Endpoint,
    ServiceMonitor,
    ServiceMonitorSpec,
)
from setpoint.resources.models.core_v1 import Service, ServicePort, ServiceSpec
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta

JOB = "monitoring-operator"
"""The Service's name, hence the series' ``job`` label (as ServiceMonitors label it), and
the ``app.kubernetes.io/name`` that ``setpoint generate manifests`` gives the operator's pods."""
METRICS_PORT = 8081


def alert_group(job: str = JOB) -> dict[str, Any]:
    """The rule group (a PrometheusRule's ``spec.groups`` item)."""
    selector = f'job="{job}"'
    return {"name": "monitoring-operator", "rules": [
        {"alert": "MonitoringOperatorDown",
         # both halves carry the job label, so the alert is the same series either way
         "expr": f"max by (job) (up{{{selector}}}) == 0 or absent(up{{{selector}}})",
         "for": "5m", "labels": {"severity": "critical"},
         "annotations": {"summary": "The monitoring operator is not being scraped",
                         "description": f"No successful scrape of job {job} for 5 minutes: "
                                        "Prometheus and Alertmanager configurations are "
                                        "not being updated."}},
        {"alert": "MonitoringOperatorReconcileErrors",
         "expr": "sum by (controller) (rate(controller_runtime_reconcile_errors_total"
                 f"{{{selector}}}[5m])) > 0",
         "for": "15m", "labels": {"severity": "warning"},
         "annotations": {"summary": "Reconciles of {{ $labels.controller }} keep failing",
                         "description": "The {{ $labels.controller }} controller has failed "
                                        "reconciles for 15 minutes (see its events and "
                                        "the operator's log)."}},
        {"alert": "MonitoringOperatorWorkqueueBacklog",
         "expr": f"max by (controller) (workqueue_depth{{{selector}}}) > 10",
         "for": "15m", "labels": {"severity": "warning"},
         "annotations": {"summary": "The {{ $labels.controller }} queue is not draining",
                         "description": "More than 10 objects have waited in the "
                                        "{{ $labels.controller }} queue for 15 minutes."}},
    ]}


def service(job: str = JOB, port: int = METRICS_PORT) -> Service:
    """The Service in front of an operator's metrics port (its pods are labelled
    ``app.kubernetes.io/name: <job>``), named as its scrape job."""
    app = {NAME: job}
    return Service(metadata=ObjectMeta(name=job, labels={**app, MANAGED_BY: job}),
                   spec=ServiceSpec(selector=app, ports=[ServicePort(
                       name="metrics", port=port, protocol="TCP", target_port="metrics")]))


def service_monitor(labels: dict[str, str], job: str = JOB) -> ServiceMonitor:
    """``labels``: what the Prometheus' ``serviceMonitorSelector`` matches."""
    return ServiceMonitor(
        metadata=ObjectMeta(name=job, labels={MANAGED_BY: job, **labels}),
        spec=ServiceMonitorSpec(selector=LabelSelector(match_labels={NAME: job}),
                                endpoints=[Endpoint(port="metrics", interval="30s")]))


def prometheus_rule(labels: dict[str, str], job: str = JOB) -> PrometheusRule:
    """``labels``: what the Prometheus' ``ruleSelector`` matches."""
    return PrometheusRule(metadata=ObjectMeta(name=JOB, labels={MANAGED_BY: JOB, **labels}),
                          spec=PrometheusRuleSpec.model_validate({"groups": [
                              alert_group(job)]}))


def print_manifests(description: str, namespace: str,
                    objects_for: Callable[[dict[str, str]], Sequence[Any]],
                    argv: list[str] | None = None) -> None:
    """The command line of a monitoring manifest printer: ``--namespace`` and the ``--label``s
    a Prometheus' selectors match in, the objects ``objects_for(labels)`` builds out as YAML."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--namespace", default=namespace)
    parser.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                        help="a label the Prometheus' selectors match (repeatable)")
    args = parser.parse_args(argv)
    labels = dict(item.split("=", 1) for item in args.label)
    docs = []
    for obj in objects_for(labels):
        obj.metadata.namespace = args.namespace
        docs.append(obj.model_dump(by_alias=True, exclude_none=True, mode="json"))
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))


def main(argv: list[str] | None = None) -> None:
    print_manifests(__doc__.split("\n\n")[0], "monitoring-operator",
                    lambda labels: [service(), service_monitor(labels), prometheus_rule(labels)],
                    argv)

if __name__ == "__main__":
    main()
