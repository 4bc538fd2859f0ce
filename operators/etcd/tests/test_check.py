"""``setpoint check`` of the etcd operator running on the process runtime with a real
etcd cluster: capability level IV (Deep Insights), and the metrics that level stands for.

The operator runs in the test's process as its own ServiceAccount with exactly its
generated RBAC, serving its manager's ``metrics`` port; its Deployment, as ``setpoint
generate manifests`` writes it, is applied with 0 replicas so that the check reads the
operator's ports from it without a second copy running (as the monitoring operator's
check does). The rest is evidence from the running instance: the members' pods, claims and
Services owned by the EtcdCluster, its events (Bootstrapping), its status rewritten
after the check deletes a member pod, and the status of every EtcdCluster, EtcdBackup and
EtcdRestore (conditions and observedGeneration on every kind it serves).
"""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import pytest
import yaml

from operators.etcd import objects
from operators.etcd.operator import manager
from operators.etcd.resource import EtcdBackup, EtcdBackupSpec, EtcdCluster, EtcdClusterSpec
from operators.etcd.tests.test_real import V34, running
from setpoint.client import Client
from setpoint.resources.models.core_v1 import Service
from setpoint.testing import SetpointCluster, present
from setpoint.testing.plugin import ManagerLauncher, Waiter
from setpoint.testing.waiting import wait_for as wait_until
from tests.platform.test_check import evidence, generate, run_check, statuses

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed")]
TIMEOUT = 120.0


async def fetch(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, url
        return await response.text()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of series ``name{labels}`` in a Prometheus text exposition."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if match and ",".join(sorted((match[1] or "").split(","))) == wanted:
            return float(match[2])
    return None


async def test_the_operator_reaches_level_iv_with_a_running_cluster(
        cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, tmp_path: Any) -> None:
    ns = cluster.namespace
    runner = await run_manager(manager, leader_election=False, rbac=True)
    manifests = yaml.safe_load_all(await generate(
        "manifests", "operators.etcd.operator:manager", "--image", "etcd-operator:0.1",
        "--namespace", ns))
    deployment: dict[str, Any] = next(m for m in manifests if m["kind"] == "Deployment")
    deployment["spec"]["replicas"] = 0
    await k8s.create(deployment)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1, version=V34)))
    await wait_for(EtcdCluster, "e", running(1), timeout=TIMEOUT)
    await k8s.create(EtcdBackup(name="b", spec=EtcdBackupSpec(
        cluster_name="e", directory=str(tmp_path / "backups"))))
    await wait_for(EtcdBackup, "b", lambda b: b.status.phase == "Complete"
                   and b.status.observed_generation == b.metadata.generation, timeout=TIMEOUT)

    # the operator's own metrics, on its manager's metrics port
    assert runner.manager is not None and runner.manager.http_port
    served = await fetch(f"http://127.0.0.1:{runner.manager.http_port}/metrics")
    labels = {"namespace": ns, "cluster": "e"}
    assert sample(served, "etcd_operator_cluster_size", **labels) == 1
    assert sample(served, "etcd_operator_cluster_desired_size", **labels) == 1
    assert sample(served, "etcd_operator_cluster_members_healthy", **labels) == 1
    assert sample(served, "etcd_operator_cluster_available", **labels) == 1
    assert sample(served, "etcd_operator_cluster_leader_changes_seen_total", **labels) == 0
    assert sample(served, "etcd_operator_backups_taken_total", **labels) == 1
    assert sample(served, "etcd_operator_backups_failed_total", **labels) == 0
    assert (sample(served, "etcd_operator_last_backup_timestamp_seconds", **labels)
            or 0) > 0
    # the member's own, through the client Service's metrics port (a ServiceMonitor's)
    client = await k8s.get(Service, objects.client_service_name(EtcdCluster(name="e")))
    ip = present(client.spec).cluster_ip
    scraped: list[str] = []

    async def member_scraped() -> bool:
        # the Service proxy follows the member's readiness, a probe period behind the
        # operator: it closes a connection it has no ready endpoint for yet
        try:
            scraped.append(await fetch(f"http://{ip}:{objects.METRICS_PORT}/metrics"))
        except aiohttp.ClientError:
            return False
        return True

    await wait_until(member_scraped, timeout=TIMEOUT)
    assert sample(scraped[-1], "etcd_server_has_leader") == 1

    # every instance of every kind it serves, nothing touched
    code, out, err = await run_check("--cluster", "etcd-operator", "-n", ns,
                                     "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    report = json.loads(out)
    assert code == 0, err
    for check in ("status-conditions", "observed-generation"):
        assert statuses(report)[check] == "pass", evidence(report, check)
        for ref in (f"EtcdCluster/{ns}/e", f"EtcdBackup/{ns}/b"):
            assert f"{ref}: " in evidence(report, check)

    code, out, err = await run_check(
        "--cluster", "etcd-operator", "-n", ns, "--instance", "EtcdCluster/e",
        "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["capabilityLevel"]["level"] >= 4, report["capabilityLevel"]
    found = statuses(report)
    for check in ("crd-schema", "status-conditions", "crd-versioning", "observed-generation",
                  "owner-references", "pod-restarts", "metrics-endpoint", "events",
                  "resources", "service-account", "rbac-least-privilege"):
        assert found[check] in ("pass", "skip"), (check, evidence(report, check))
    for check in ("owner-references", "pod-restarts", "metrics-endpoint", "events"):
        assert found[check] == "pass", (check, evidence(report, check))
    owned = evidence(report, "owner-references")
    for obj in ("Pod/e-0", "PersistentVolumeClaim/e-0", "Service/e-client", "Service/e,"):
        assert obj in owned, owned
    assert "Bootstrapping" in evidence(report, "events")
    assert "port metrics (8081)" in evidence(report, "metrics-endpoint")
    restarts = evidence(report, "pod-restarts")
    assert f"deleted Pod {ns}/e-0" in restarts
    assert "the operator rewrote status" in restarts
