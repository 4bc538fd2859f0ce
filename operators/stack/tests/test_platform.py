"""The platform tools on the stack example: ``setpoint graph Moodle m1`` finds every object
of the stack and nothing of a second stack beside it, ``setpoint metrics`` totals the
stack's pods, and ``setpoint check`` gives the stack operator its verdicts."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from operators.stack.resources import Moodle, MoodleSpec, MysqlCluster, MysqlClusterSpec
from setpoint.client import Client
from setpoint.resources import AnnotationRelationship, CustomResource, Model
from setpoint.resources.models.core_v1 import Pod, ResourceRequirements
from setpoint.testing import OperatorRunner, SetpointCluster, present
from setpoint.testing.plugin import Waiter

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 30.0
RESOURCES = ResourceRequirements(requests={"cpu": "100m", "memory": "128Mi"},
                                 limits={"cpu": "200m", "memory": "256Mi"})


class IssuerSpec(Model):
    acme: str = ""


class ClusterIssuer(CustomResource, group="cert-manager.io", version="v1", scope="Cluster",
                    relationships=[AnnotationRelationship(
                        "Ingress", "cert-manager.io/cluster-issuer", "metadata.name")]):
    """cert-manager's ClusterIssuer, with the relationship KubePlus's guidelines ask its
    CRD to declare: an Ingress names it by annotation."""

    spec: IssuerSpec = IssuerSpec()


async def setpoint(*args: str) -> tuple[int, str, str]:
    # the embedded server answers on this test's event loop: wait without blocking it
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", *args, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def available(obj: Any) -> bool:
    return bool(obj.status.is_true("Available"))


async def two_stacks(cluster: SetpointCluster, k8s: Client, wait_for: Waiter) -> None:
    await cluster.install(ClusterIssuer)
    await k8s.create(ClusterIssuer(name="letsencrypt"))
    for moodle, db in (("m1", "db"), ("m2", "db2")):
        await k8s.create(MysqlCluster(name=db, spec=MysqlClusterSpec(resources=RESOURCES)))
        await k8s.create(Moodle(name=moodle, spec=MoodleSpec(
            mysql_cluster=db, host=f"{moodle}.example.com", cluster_issuer="letsencrypt",
            resources=RESOURCES)))
        await wait_for(Moodle, moodle, available, timeout=TIMEOUT)


async def test_the_graph_of_a_moodle_is_its_whole_stack_and_nothing_else(
        cluster: SetpointCluster, k8s: Client, operator: OperatorRunner,
        wait_for: Waiter) -> None:
    await two_stacks(cluster, k8s, wait_for)
    ns = cluster.namespace
    code, out, err = await setpoint("graph", "Moodle", "m1", "-n", ns, "-o", "json",
                                    "--kubeconfig", str(cluster.kubeconfig))
    assert code == 0, err
    graph = json.loads(out)
    found = {n["id"] for n in graph["nodes"]}
    pods = {f"Pod/{ns}/{p.metadata.name}" for p in (await k8s.list(Pod)).items
            if present(p.metadata.name).startswith(("m1-", "db-"))}
    group = "stack.setpoint.dev"
    expected = {f"Moodle.{group}/{ns}/m1", f"MysqlCluster.{group}/{ns}/db",
                f"Deployment/{ns}/m1", f"Service/{ns}/m1",
                f"Ingress.networking.k8s.io/{ns}/m1", f"PersistentVolumeClaim/{ns}/m1-moodledata",
                "ClusterIssuer.cert-manager.io/letsencrypt", f"StatefulSet/{ns}/db",
                f"Service/{ns}/db", f"Service/{ns}/db-pods", f"Secret/{ns}/db-credentials",
                f"PersistentVolumeClaim/{ns}/data-db-0", *pods}
    assert expected <= found, (expected - found, found)
    assert not {n for n in found if "m2" in n or "db2" in n}, found
    relations = {(e["source"], e["relation"], e["target"]) for e in graph["edges"]}
    assert (f"Moodle.{group}/{ns}/m1", "specproperty", f"MysqlCluster.{group}/{ns}/db") in {
        (s, r.split(":")[0], t) for s, r, t in relations}, relations


async def test_metrics_total_the_stacks_pods(
        cluster: SetpointCluster, k8s: Client, operator: OperatorRunner,
        wait_for: Waiter) -> None:
    await two_stacks(cluster, k8s, wait_for)
    code, out, err = await setpoint("metrics", "Moodle", "m1", "-n", cluster.namespace,
                                    "-o", "json", "--kubeconfig", str(cluster.kubeconfig))
    assert code == 0, err
    data = json.loads(out)
    names = {p["name"] for p in data["pods"]}
    assert names and all(n.startswith(("m1-", "db-")) for n in names), names
    # every pod of the stack asks for the Moodle's or the database's resources
    assert data["total"]["cpu_requests"] == round(0.1 * len(names), 3)
    assert data["total"]["memory_limits"] == 256 * 2**20 * len(names)


async def test_check_of_the_stack_operator_from_its_manifests(tmp_path: Path) -> None:
    for name, args in (("crds.yaml", ("crds", "operators.stack.resources")),
                       ("operator.yaml", ("manifests", "operators.stack.operator:manager",
                                          "--image", "stack:0.1", "--namespace", "stack"))):
        code, out, err = await setpoint("generate", *args)
        assert code == 0, err
        (tmp_path / name).write_text(out)
    code, out, err = await setpoint("check", str(tmp_path), "-o", "json")
    report = json.loads(out)
    verdicts = {c["id"]: c["status"] for c in report["checks"]}
    assert verdicts["crd-schema"] == "pass"
    assert verdicts["relationship-annotations"] == "pass", report
    assert verdicts["rbac-least-privilege"] == "pass", report
    assert verdicts["status-conditions"] == "pass"
    assert verdicts["metrics-endpoint"] == "pass"
    assert verdicts["printer-columns"] == "pass"
