"""``setpoint check`` of the monitoring operator running on the embedded cluster with a
Prometheus instance: capability level IV (Deep Insights).

The operator runs in the test's process as its own ServiceAccount with exactly its
generated RBAC; its Deployment, as ``setpoint generate manifests`` writes it, is applied
with 0 replicas, so that the check reads the operator's ports from it (the ``metrics``
port its manager serves, which test_real.py scrapes with a real Prometheus) without a
second copy of the operator running. The rest is evidence from the running instance:
owner references on what the Prometheus owns, its ConfigurationChanged events, its status
rewritten after the check deletes one of its pods, and the status of every instance of
every kind it serves (ServiceMonitor and PrometheusRule with their bindings).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from operators.monitoring.resources import Prometheus, PrometheusRule, ServiceMonitor
from operators.monitoring.tests.test_operator import (
    TEAM,
    nginx,
    prometheus,
    reconciled,
    service_monitor,
)
from setpoint.client import Client
from setpoint.testing import OperatorRunner, SetpointCluster
from setpoint.testing.plugin import Waiter
from tests.platform.test_check import evidence, generate, run_check, statuses

TIMEOUT = 30.0


async def test_the_operator_reaches_level_iv_with_a_running_prometheus(
        cluster: SetpointCluster, k8s: Client, operator: OperatorRunner,
        wait_for: Waiter) -> None:
    ns = cluster.namespace
    manifests = yaml.safe_load_all(await generate(
        "manifests", "operators.monitoring.operator:manager", "--image", "monitoring:0.1",
        "--namespace", ns))
    deployment: dict[str, Any] = next(m for m in manifests if m["kind"] == "Deployment")
    deployment["spec"]["replicas"] = 0
    await k8s.create(deployment)
    for obj in nginx():
        await k8s.create(obj)
    # named unlike the nginx objects the test makes itself: the check takes an unowned
    # object named after an instance for one the operator made for it
    monitor = service_monitor()
    monitor.metadata.name = "scrape-nginx"
    await k8s.create(monitor)
    await k8s.create(PrometheusRule.model_validate({
        "metadata": {"name": "r", "labels": TEAM},
        "spec": {"groups": [{"name": "g", "rules": [{"record": "one",
                                                     "expr": "vector(1)"}]}]}}))
    await k8s.create(prometheus())
    await wait_for(Prometheus, "main", reconciled("ConfigurationAccepted"), timeout=TIMEOUT)
    for kind, name in ((ServiceMonitor, "scrape-nginx"), (PrometheusRule, "r")):
        await wait_for(kind, name, reconciled("Bound"), timeout=TIMEOUT)
    await wait_for(Prometheus, "main", lambda p: p.status.available_replicas == 1,
                   timeout=TIMEOUT)

    # every instance of every kind it serves, nothing touched
    code, out, err = await run_check("--cluster", "monitoring-operator", "-n", ns,
                                     "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    report = json.loads(out)
    assert code == 0, [(c["id"], c["evidence"]) for c in report["checks"]
                       if c["status"] == "fail" and c["required"]]
    for check in ("status-conditions", "observed-generation"):
        assert statuses(report)[check] == "pass", evidence(report, check)
        for ref in (f"ServiceMonitor/{ns}/scrape-nginx", f"PrometheusRule/{ns}/r",
                    f"Prometheus/{ns}/main"):
            assert f"{ref}: " in evidence(report, check)

    code, out, err = await run_check(
        "--cluster", "monitoring-operator", "-n", ns, "--instance", "Prometheus/main",
        "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["capabilityLevel"]["level"] >= 4, report["capabilityLevel"]
    found = statuses(report)
    for check in ("crd-schema", "status-conditions", "crd-versioning", "observed-generation",
                  "owner-references", "pod-restarts", "metrics-endpoint", "events"):
        assert found[check] == "pass", (check, evidence(report, check))
    assert "StatefulSet/prometheus-main" in evidence(report, "owner-references")
    assert "ConfigurationChanged" in evidence(report, "events")
    assert "port metrics (8081)" in evidence(report, "metrics-endpoint")
    assert "the operator rewrote status" in evidence(report, "pod-restarts")
