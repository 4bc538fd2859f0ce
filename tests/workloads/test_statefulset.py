"""StatefulSets: ordinal pods, ordered creation and deletion, claims, rolling updates."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from setpoint.client import Client, Kind
from setpoint.workloads.controllers import statefulset
from tests.conftest import kubectl_path
from tests.waiting import wait_for
from tests.workloads.podsim import workload_cluster

STS = Kind("apps/v1", "StatefulSet")
POD = Kind("v1", "Pod")
PVC = Kind("v1", "PersistentVolumeClaim")
REVISION = Kind("apps/v1", "ControllerRevision")
NS = "default"


def stateful_set(name: str = "web", replicas: int = 3, image: str = "nginx:1",
                 **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}},
                     **spec}}


async def pods_of(client: Client, name: str = "web") -> dict[str, dict[str, Any]]:
    items = (await client.list(POD, namespace=NS, label_selector=f"app={name}")).items
    return {p["metadata"]["name"]: p for p in items}


async def status_of(client: Client, name: str = "web") -> dict[str, Any]:
    sts = await client.get(STS, name, namespace=NS)
    return dict(sts.get("status") or {})


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


async def test_ordered_ready_creates_pods_one_by_one_in_ordinal_order() -> None:
    order: list[str] = []
    gate: set[str] = set()

    def may_be_ready(pod: dict[str, Any]) -> bool:
        order.append(pod["metadata"]["name"])
        return pod["metadata"]["name"] in gate

    async with workload_cluster([statefulset.install], ready=may_be_ready) as env:
        await env.client.create(stateful_set(volumeClaimTemplates=[{
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}]))
        await wait_for(lambda: _has(env.client, "web-0"))
        await wait_for(lambda: "web-0" in order)  # running, and refused readiness
        pods = await pods_of(env.client)
        assert list(pods) == ["web-0"]  # web-1 waits for web-0 to be Running and Ready
        gate.update({"web-0", "web-1", "web-2"})
        await env.pods.make_ready(pods["web-0"])
        await wait_for(lambda: _count(env.client, 3))
        await wait_for(lambda: _status_is(env.client, readyReplicas=3, availableReplicas=3))
        assert order[:3] == ["web-0", "web-1", "web-2"]

        pod = (await pods_of(env.client))["web-1"]
        labels = pod["metadata"]["labels"]
        status = await status_of(env.client)
        assert labels["statefulset.kubernetes.io/pod-name"] == "web-1"
        assert labels["apps.kubernetes.io/pod-index"] == "1"
        assert labels["controller-revision-hash"] == status["updateRevision"]
        assert pod["spec"]["hostname"] == "web-1" and pod["spec"]["subdomain"] == "web"
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["data"] == {
            "name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}}
        claims = (await env.client.list(PVC, namespace=NS)).items
        assert sorted(c["metadata"]["name"] for c in claims) == [
            "data-web-0", "data-web-1", "data-web-2"]
        assert claims[0]["metadata"]["labels"] == {"app": "web"}
        assert status["replicas"] == 3 and status["currentReplicas"] == 3
        assert status["updatedReplicas"] == 3 and status["collisionCount"] == 0
        assert status["currentRevision"] == status["updateRevision"]
        revisions = (await env.client.list(REVISION, namespace=NS)).items
        assert [r["metadata"]["name"] for r in revisions] == [status["updateRevision"]]
        assert revisions[0]["revision"] == 1

        await env.client.patch(STS, "web", {"spec": {"replicas": 1}}, namespace=NS)
        await wait_for(lambda: _count(env.client, 1))
        assert list(await pods_of(env.client)) == ["web-0"]
        claims = (await env.client.list(PVC, namespace=NS)).items
        assert len(claims) == 3  # claims are retained on scale down by default


async def test_rolling_update_goes_from_the_highest_ordinal_and_honours_the_partition(
        ) -> None:
    async with workload_cluster([statefulset.install]) as env:
        await env.client.create(stateful_set(replicas=3))
        await wait_for(lambda: _status_is(env.client, readyReplicas=3))
        first = (await status_of(env.client))["updateRevision"]
        await env.client.patch(STS, "web", {"spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
            "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}},
            namespace=NS)
        await wait_for(lambda: _status_is(env.client, updatedReplicas=2, readyReplicas=3))
        status = await status_of(env.client)
        second = status["updateRevision"]
        assert second != first and status["currentRevision"] == first
        pods = await pods_of(env.client)
        revisions = {n: p["metadata"]["labels"]["controller-revision-hash"]
                     for n, p in pods.items()}
        assert revisions == {"web-0": first, "web-1": second, "web-2": second}
        await env.client.patch(STS, "web", {"spec": {"updateStrategy": {
            "rollingUpdate": {"partition": 0}}}}, namespace=NS)
        await wait_for(lambda: _status_is(env.client, updatedReplicas=3, currentRevision=second,
                                          currentReplicas=3))


async def test_parallel_pods_are_created_at_once_and_failed_pods_recreated() -> None:
    # no kubelet: pods stay Pending, which Parallel management does not wait for
    async with workload_cluster([statefulset.install], simulate=False) as env:
        await env.client.create(stateful_set(replicas=3, podManagementPolicy="Parallel"))
        await wait_for(lambda: _count(env.client, 3))
        pod = (await pods_of(env.client))["web-2"]
        uid = pod["metadata"]["uid"]
        await env.client.patch_status(POD, "web-2", {"status": {"phase": "Failed"}},
                                      namespace=NS)

        async def replaced() -> bool:
            pods = await pods_of(env.client)
            return "web-2" in pods and pods["web-2"]["metadata"]["uid"] != uid

        await wait_for(replaced)


async def _has(client: Client, name: str) -> bool:
    return name in await pods_of(client)


async def _count(client: Client, n: int) -> bool:
    pods = await pods_of(client)
    return len([p for p in pods.values() if not p["metadata"].get("deletionTimestamp")]) == n \
        and len(pods) == n


async def _status_is(client: Client, **wanted: Any) -> bool:
    status = await status_of(client)
    return all(status.get(k) == v for k, v in wanted.items())


async def test_scale_down_removes_the_highest_ordinals_and_retention_policy_deletes_claims(
        ) -> None:
    async with workload_cluster([statefulset.install]) as env:
        await env.client.create(stateful_set(
            replicas=3, persistentVolumeClaimRetentionPolicy={
                "whenDeleted": "Retain", "whenScaled": "Delete"},
            volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}]))
        await wait_for(lambda: _status_is(env.client, readyReplicas=3))
        # The watch starts from the resourceVersion of a list taken before the scale-down,
        # so no deletion can fall before it opens; it ends when both deletions are seen.
        before = await env.client.list(POD, namespace=NS)
        gone: list[str] = []

        async def watch_deletions() -> None:
            async with env.client.watch(POD, namespace=NS,
                                        resource_version=before.resource_version) as watch:
                async for event_type, pod in watch:
                    if event_type == "DELETED":
                        gone.append(pod["metadata"]["name"])
                        if len(gone) == 2:
                            return

        watcher = asyncio.create_task(watch_deletions())
        await env.client.patch(STS, "web", {"spec": {"replicas": 1}}, namespace=NS)
        await asyncio.wait_for(watcher, 30)
        assert gone == ["web-2", "web-1"]
        await wait_for(lambda: _count(env.client, 1))

        async def condemned_claims_owned_by_pods() -> bool:
            claims = {c["metadata"]["name"]: c for c in
                      (await env.client.list(PVC, namespace=NS)).items}
            refs = {n: [r["kind"] for r in c["metadata"].get("ownerReferences") or []]
                    for n, c in claims.items()}
            return refs == {"data-web-0": [], "data-web-1": ["Pod"], "data-web-2": ["Pod"]} \
                or sorted(refs) == ["data-web-0"]

        await wait_for(condemned_claims_owned_by_pods)


async def test_kubectl_rollout_status_history_and_scale(tmp_path: Path) -> None:
    from tests.workloads.test_deployment_kubectl import Kubectl

    kubectl_path()
    async with workload_cluster([statefulset.install], ready_after=0.05) as env:
        kubectl = Kubectl(env, tmp_path)
        await env.client.create(stateful_set(replicas=2))
        out = await kubectl.ok("rollout", "status", "statefulset/web", "--timeout=30s")
        assert "partitioned roll out complete: 2 new pods have been updated" in out
        await env.client.patch(STS, "web", {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx:2"}]}}}}, namespace=NS)
        out = await kubectl.ok("rollout", "status", "statefulset/web", "--timeout=30s")
        assert "partitioned roll out complete: 2 new pods have been updated" in out
        history = await kubectl.ok("rollout", "history", "statefulset/web")
        assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == \
            ["1", "2"]
        await kubectl.ok("rollout", "undo", "statefulset/web")
        await kubectl.ok("rollout", "status", "statefulset/web", "--timeout=30s")
        pods = await pods_of(env.client)
        assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"nginx:1"}
        await kubectl.ok("scale", "statefulset/web", "--replicas=3")
        await wait_for(lambda: _status_is(env.client, readyReplicas=3))
