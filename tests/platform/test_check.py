"""``setpoint check``: the memcached reference operator and a deliberately poor one, from
their manifests and running on the embedded cluster (nodes, scheduler, kubelets), checked
by a real ``setpoint`` process.

The expected verdicts are what each operator actually implements. Memcached
(``operators/memcached``): a structural schema with CEL rules, ``spec.resources``,
``spec.nodeSelector`` and ``spec.tolerations`` given to every container and pod
(``objects.py``), owner references on all it creates (``ctx.apply``), generated
least-privilege RBAC, conditions Available/Progressing/Degraded with observedGeneration,
``ConfigurationChanged`` events, a ``metrics`` port in its generated Deployment, pods watched
by label, one version v1, printer columns and a scale subresource; no KubePlus annotations.
The poor operator: a schema-less CRD, no status, cluster-admin, a Deployment made without
an owner reference and without the resources its instance asks for, nothing watched but
its own kind.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from operators.memcached.operator import manager
from operators.memcached.resource import Memcached, MemcachedSpec
from operators.memcached.tests.test_operator import serving
from setpoint.client import Client, Kind
from setpoint.resources.models.core_v1 import ResourceRequirements, Toleration
from setpoint.runtime import Context, Controller, Result
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0
# long enough for any operator that watches its pods to have written its status after one
# was deleted; only the poor operator's test waits it out, to show it never does
QUIET_PERIOD_TO_PROVE_NO_REACTION = 5.0

POOR = Kind("poor.example.com/v1", "Poor")
POOR_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "poors.poor.example.com"},
    "spec": {"group": "poor.example.com", "scope": "Namespaced",
             "names": {"kind": "Poor", "plural": "poors", "singular": "poor"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}


def poor_deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"{name}-app", "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app",
                                                           "image": "nginx:1.27"}]}}}}


poor = Controller.for_(POOR, name="poor-operator")


@poor.reconcile
async def reconcile_poor(ctx: Context[Any], obj: Any) -> Result:
    # no owner reference, spec.resources ignored, no status, no event
    await ctx.apply(poor_deployment(ctx.raw["metadata"]["name"]), owner=False)
    return Result()


POOR_OPERATOR_MANIFESTS = [
    POOR_CRD,
    {"apiVersion": "v1", "kind": "ServiceAccount",
     "metadata": {"name": "poor-operator", "namespace": "poor"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "poor-operator"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "cluster-admin"},
     "subjects": [{"kind": "ServiceAccount", "name": "poor-operator", "namespace": "poor"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "cluster-admin"},
     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
               {"nonResourceURLs": ["*"], "verbs": ["*"]}]},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "poor-operator", "namespace": "poor"},
     "spec": {"selector": {"matchLabels": {"app": "poor"}},
              "template": {"metadata": {"labels": {"app": "poor"}},
                           "spec": {"serviceAccountName": "poor-operator",
                                    "containers": [{"name": "op", "image": "poor:1"}]}}}},
]


async def run_check(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    # the embedded server answers on this test's event loop: wait for the process without
    # blocking it
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "check", *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=ROOT)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


def evidence(report: dict[str, Any], check_id: str) -> str:
    return "\n".join(next(c for c in report["checks"] if c["id"] == check_id)["evidence"])


async def generate(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "generate", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


# what a reference operator implements, checked from its manifests alone: the running
# instance's checks (passing down, owner references, events, pod restarts) are skipped
REFERENCE_FROM_MANIFESTS = {
    "crd-schema": "pass", "relationship-annotations": "fail",
    "resources": "skip", "node-selector": "skip", "tolerations": "skip",
    "owner-references": "skip", "service-account": "pass",
    "rbac-least-privilege": "pass", "status-conditions": "pass",
    "observed-generation": "pass", "events": "skip", "metrics-endpoint": "pass",
    "pod-restarts": "skip", "crd-versioning": "pass", "printer-columns": "pass",
    "scale-subresource": "pass"}


async def check_generated(tmp_path: Path, operator: str,
                          resources: str = "resource") -> dict[str, Any]:
    """``setpoint check`` of an operator in ``operators/`` from its generated CRDs (module
    ``operators.<operator>.<resources>``) and manifests (exit status 0: it passes)."""
    (tmp_path / "crds.yaml").write_text(await generate(
        "crds", f"operators.{operator}.{resources}"))
    (tmp_path / "operator.yaml").write_text(await generate(
        "manifests", f"operators.{operator}.operator:manager", "--image", f"{operator}:0.1",
        "--namespace", f"{operator}-operator"))
    code, out, err = await run_check(str(tmp_path), "-o", "json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    assert report["operator"] == f"{operator}-operator"
    assert report["passed"] is True
    return report


async def test_memcached_from_its_generated_manifests(tmp_path: Path) -> None:
    report = await check_generated(tmp_path, "memcached")
    assert statuses(report) == REFERENCE_FROM_MANIFESTS
    assert "exposed as spec.resources" in evidence(report, "resources")
    assert "no resource/composition annotation" in evidence(report, "relationship-annotations")
    assert "container operator port metrics (8081)" in evidence(report, "metrics-endpoint")
    assert report["capabilityLevel"] == {"level": 2, "name": "II Seamless Upgrades",
                                         "next": "III Full Lifecycle",
                                         "missing": ["owner-references", "pod-restarts"]}


async def test_the_poor_operator_from_its_manifests_fails_what_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / "poor.yaml"
    path.write_text(yaml.safe_dump_all(POOR_OPERATOR_MANIFESTS))

    code, out, err = await run_check(str(path), "-o", "json")

    assert code == 1, err
    report = json.loads(out)
    assert statuses(report) == {
        "crd-schema": "fail", "relationship-annotations": "fail",
        "resources": "fail", "node-selector": "fail", "tolerations": "fail",
        "owner-references": "skip", "service-account": "pass",
        "rbac-least-privilege": "fail", "status-conditions": "fail",
        "observed-generation": "fail", "events": "skip", "metrics-endpoint": "fail",
        "pod-restarts": "skip", "crd-versioning": "pass", "printer-columns": "fail",
        "scale-subresource": "fail"}
    rbac = evidence(report, "rbac-least-privilege")
    assert "bound to ClusterRole/cluster-admin" in rbac
    assert "wildcard verbs" in rbac and "wildcard nonResourceURLs" in rbac
    assert "Poor v1: spec has no declared properties" in evidence(report, "crd-schema")
    assert report["capabilityLevel"]["level"] == 0
    assert not report["passed"]


async def test_pretty_output_and_manifests_on_standard_input() -> None:
    code, out, _ = await run_check("-", stdin=yaml.safe_dump_all(POOR_OPERATOR_MANIFESTS)
                                   .encode())

    assert code == 1
    assert "FAIL  crd-schema" in out
    assert "Capability level: none (not even I Basic Install)" in out
    assert "Required checks failed: crd-schema, resources, rbac-least-privilege, " \
           "status-conditions, observed-generation" in out


async def test_manifests_and_cluster_together_are_a_usage_error() -> None:
    code, _, err = await run_check("x.yaml", "--cluster", "op")
    assert code == 2
    assert "either MANIFESTS or --cluster" in err


# -- on the embedded cluster --------------------------------------------------------------------


async def test_memcached_running_on_the_cluster_with_an_instance(
        setpoint_cluster: SetpointCluster, setpoint_workloads: Any, k8s: Client,
        run_manager: ManagerLauncher, wait_for: Waiter) -> None:
    await setpoint_cluster.install(Memcached)
    # its own service account with exactly its generated RBAC
    await run_manager(manager, leader_election=False, http_port=None, rbac=True)
    resources = ResourceRequirements(requests={"cpu": "100m", "memory": "64Mi"},
                                     limits={"cpu": "100m", "memory": "64Mi"})
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(
        replicas=2, resources=resources, node_selector={"kubernetes.io/os": "linux"},
        tolerations=[Toleration(key="dedicated", operator="Equal", value="cache",
                                effect="NoSchedule")])))
    await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)

    # without --instance: every instance is read, nothing is touched
    code, pretty, err = await run_check(
        "--cluster", "memcached-operator", "-n", setpoint_cluster.namespace,
        "--kubeconfig", str(setpoint_cluster.kubeconfig))
    assert code == 0, err
    assert "PASS  owner-references" in pretty and "SKIP  pod-restarts" in pretty
    assert "Capability level: II Seamless Upgrades" in pretty

    code, out, err = await run_check(
        "--cluster", "memcached-operator", "-n", setpoint_cluster.namespace,
        "--instance", "memcached/m", "--kubeconfig", str(setpoint_cluster.kubeconfig),
        "-o", "json")

    assert code == 0, err
    report = json.loads(out)
    assert statuses(report) == {
        "crd-schema": "pass", "relationship-annotations": "fail",
        "resources": "pass", "node-selector": "pass", "tolerations": "pass",
        "owner-references": "pass", "service-account": "pass",
        "rbac-least-privilege": "pass", "status-conditions": "pass",
        "observed-generation": "pass", "events": "pass",
        # run in the test's process: no Deployment whose ports could be seen
        "metrics-endpoint": "skip",
        "pod-restarts": "pass", "crd-versioning": "pass", "printer-columns": "pass",
        "scale-subresource": "pass"}
    # 2 memcached pods and the proxy's
    assert "sets spec.resources: checked on 3 pods" in evidence(report, "resources")
    owned = evidence(report, "owner-references")
    assert "StatefulSet/m-memcached" in owned and "Deployment/m-mcrouter" in owned
    assert "ConfigurationChanged" in evidence(report, "events")
    restarts = evidence(report, "pod-restarts")
    assert "deleted Pod" in restarts and "m-memcached-" in restarts
    assert "the operator rewrote status" in restarts
    assert report["capabilityLevel"] == {"level": 3, "name": "III Full Lifecycle",
                                         "next": "IV Deep Insights",
                                         "missing": ["metrics-endpoint"]}


async def test_the_poor_operator_running_on_the_cluster(
        setpoint_cluster: SetpointCluster, setpoint_workloads: Any, k8s: Client,
        run_manager: ManagerLauncher, wait_for: Waiter) -> None:
    namespace = setpoint_cluster.namespace
    await k8s.create(POOR_CRD)
    await wait_for(lambda: _established(k8s), timeout=TIMEOUT)
    await k8s.create({"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": "poor-operator", "namespace": namespace}})
    await k8s.create({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"poor-operator-{namespace}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "poor-operator",
                      "namespace": namespace}]})
    await run_manager([poor], name="poor-operator", leader_election=False, http_port=None)
    await k8s.create({"apiVersion": "poor.example.com/v1", "kind": "Poor",
                      "metadata": {"name": "p1", "namespace": namespace},
                      "spec": {"resources": {"limits": {"cpu": "200m"}}}})

    async def pod_running() -> bool:
        pods = (await k8s.list(Kind("v1", "Pod"), namespace=namespace,
                               label_selector="app=p1")).items
        return any((p.get("status") or {}).get("phase") == "Running" for p in pods)

    await wait_for(pod_running, timeout=TIMEOUT)

    code, out, err = await run_check(
        "--cluster", "poor-operator", "-n", namespace, "--instance", "Poor/p1",
        "--reaction-period", str(QUIET_PERIOD_TO_PROVE_NO_REACTION),
        "--kubeconfig", str(setpoint_cluster.kubeconfig), "-o", "json")

    assert code == 1, err
    report = json.loads(out)
    assert statuses(report) == {
        "crd-schema": "fail", "relationship-annotations": "fail",
        "resources": "fail", "node-selector": "fail", "tolerations": "fail",
        "owner-references": "fail", "service-account": "pass",
        "rbac-least-privilege": "fail", "status-conditions": "fail",
        "observed-generation": "fail", "events": "fail", "metrics-endpoint": "skip",
        "pod-restarts": "fail", "crd-versioning": "pass", "printer-columns": "fail",
        "scale-subresource": "fail"}
    assert f"Deployment/{namespace}/p1-app has no ownerReference" in evidence(
        report, "owner-references")
    resources = evidence(report, "resources")
    assert "no schema, but Poor/" in resources
    assert "limits.cpu is unset, the instance asks 200m" in resources
    assert "bound to ClusterRole/cluster-admin" in evidence(report, "rbac-least-privilege")
    assert "no status.conditions" in evidence(report, "status-conditions")
    assert "no status write and no event" in evidence(report, "pod-restarts")


async def _established(k8s: Client) -> bool:
    crd = await k8s.get(Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                        "poors.poor.example.com")
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or ())


async def test_etcd_from_its_generated_manifests(tmp_path: Path) -> None:
    """The etcd operator (operators/etcd) from its manifests: a structural schema with CEL
    rules (sizes, version transitions), spec.resources/nodeSelector/tolerations on
    EtcdCluster (passed to every member pod: verified only on a running instance), generated
    least-privilege RBAC, conditions with observedGeneration, a metrics port, one served
    version, printer columns and a scale subresource: level II; III and IV need a running
    instance (operators/etcd/tests/test_check.py). It declares KubePlus's relationship
    annotations: what an EtcdCluster and an EtcdRestore make, the members by label, the
    kinds they name by spec property, and an EtcdBackup its snapshot pod."""
    report = await check_generated(tmp_path, "etcd")
    assert statuses(report) == {**REFERENCE_FROM_MANIFESTS,
                                "relationship-annotations": "pass"}
    assert "EtcdCluster: exposed as spec.resources" in evidence(report, "resources")
    relationships = evidence(report, "relationship-annotations")
    assert "EtcdCluster: resource/composition: Pod, PersistentVolumeClaim, Service, Secret, " \
        "EtcdBackup" in relationships
    assert "on:Pod, key:app.kubernetes.io/instance, value:INSTANCE.metadata.name" \
        in relationships
    assert "EtcdRestore: resource/composition: EtcdCluster" in relationships
    assert "on:INSTANCE.spec.clusterName, value:EtcdCluster.metadata.name" in relationships
    assert "EtcdBackup: resource/composition: Pod" in relationships
    assert report["capabilityLevel"] == {"level": 2, "name": "II Seamless Upgrades",
                                         "next": "III Full Lifecycle",
                                         "missing": ["owner-references", "pod-restarts"]}


async def test_monitoring_from_its_generated_manifests(tmp_path: Path) -> None:
    """The monitoring operator (operators/monitoring) from its manifests: every CRD declares
    conditions and observedGeneration in its status, ServiceMonitor and PrometheusRule
    included (their ``bindings`` status, as the prometheus-operator's ConfigResourceStatus),
    so levels I and II pass; III and IV need a running instance
    (operators/monitoring/tests/test_check.py). No tolerations field and no printer columns
    on the configuration kinds: those recommended checks fail."""
    report = await check_generated(tmp_path, "monitoring", "resources")
    assert statuses(report) == REFERENCE_FROM_MANIFESTS | {
        "tolerations": "fail", "printer-columns": "fail"}
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert f"{kind}: conditions declared in the status schema; status subresource on" \
            in evidence(report, "status-conditions")
        assert f"{kind}: observedGeneration declared" in evidence(report, "observed-generation")
    assert report["capabilityLevel"] == {"level": 2, "name": "II Seamless Upgrades",
                                         "next": "III Full Lifecycle",
                                         "missing": ["owner-references", "pod-restarts"]}
