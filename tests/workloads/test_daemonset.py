"""DaemonSets: one pod per eligible node, pinned by node affinity, rolled out node by node."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

from setpoint.client import Client, ConflictError, Kind, NotFoundError
from setpoint.workloads import nodelifecycle
from setpoint.workloads.controllers import daemonset
from tests.workloads.podsim import WorkloadEnv, running_status, wait_for, workload_cluster

DS = Kind("apps/v1", "DaemonSet")
POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
NS = "default"


@contextlib.asynccontextmanager
async def env_() -> AsyncIterator[WorkloadEnv]:
    """The DaemonSet controller, and a stand-in scheduler and kubelet that bind each pod to
    the node its affinity names and make it Running and Ready.

    The node lifecycle controller runs too: every node is created with not-ready:NoSchedule
    (TaintNodesByCondition, plugin/pkg/admission/nodetaint/admission.go), which daemon pods
    do not tolerate (pkg/controller/daemon/util/daemonset_util.go
    AddOrUpdateDaemonPodTolerations tolerates not-ready NoExecute only), until
    doNoScheduleTaintingPass lifts it."""
    async with workload_cluster([daemonset.install, nodelifecycle.install],
                                simulate=False) as env:
        task = asyncio.create_task(_kubelet(env.client))
        try:
            yield env
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _kubelet(client: Client) -> None:
    ips = (f"10.244.2.{i}" for i in itertools.count(1))
    async with client.watch(POD, namespace=NS) as watch:
        async for event_type, pod in watch:
            if event_type not in ("ADDED", "MODIFIED"):
                continue
            m, spec = pod["metadata"], pod.get("spec") or {}
            with contextlib.suppress(NotFoundError, ConflictError):
                if m.get("deletionTimestamp"):
                    await client.delete(POD, m["name"], namespace=NS, grace_period_seconds=0)
                elif not spec.get("nodeName"):
                    await client.request(
                        "POST", f"/api/v1/namespaces/{NS}/pods/{m['name']}/binding",
                        body={"apiVersion": "v1", "kind": "Binding",
                              "metadata": {"name": m["name"]},
                              "target": {"kind": "Node", "name": daemonset.node_of(pod)}})
                elif (pod.get("status") or {}).get("phase") == "Pending":
                    await client.patch_status(POD, m["name"], {
                        "status": running_status(pod, next(ips))}, namespace=NS)


def node(name: str, labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": {
                                "kubernetes.io/hostname": name, **(labels or {})}}}
    if taints:
        body["spec"] = {"taints": taints}
    return body


def daemon_set(image: str = "agent:1", **pod_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "a", "image": image}],
                                           **pod_spec}}}}


async def pods_by_node(client: Client) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in (await client.list(POD, namespace=NS, label_selector="app=agent")).items:
        if not pod["metadata"].get("deletionTimestamp"):
            out.setdefault(daemonset.node_of(pod), []).append(pod)
    return out


async def ds_status(client: Client) -> dict[str, Any]:
    return dict((await client.get(DS, "agent", namespace=NS)).get("status") or {})


async def status_is(client: Client, **wanted: Any) -> dict[str, Any] | None:
    status = await ds_status(client)
    return status if all(status.get(k) == v for k, v in wanted.items()) else None


async def test_one_pod_per_eligible_node_pinned_by_affinity_with_daemon_tolerations() -> None:
    async with env_() as env:
        await env.client.create(node("n1", {"disk": "ssd"}))
        await env.client.create(node("n2", {"disk": "ssd"}, taints=[
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]))
        await env.client.create(node("n3", {"disk": "hdd"}))
        await env.client.create(node("n4", {"disk": "ssd"}, taints=[
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]))
        await env.client.create(daemon_set(nodeSelector={"disk": "ssd"}))
        status = await wait_for(lambda: status_is(env.client, numberReady=2,
                                                  numberAvailable=2))
        assert status["desiredNumberScheduled"] == 2
        assert status["currentNumberScheduled"] == 2
        assert status["updatedNumberScheduled"] == 2
        assert status["numberMisscheduled"] == 0
        assert "numberUnavailable" not in status
        pods = await pods_by_node(env.client)
        assert sorted(pods) == ["n1", "n2"]
        pod = pods["n1"][0]
        assert pod["spec"]["nodeName"] == "n1"
        assert pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In",
                                  "values": ["n1"]}]}]}
        tolerations = {(t.get("key"), t.get("effect")) for t in pod["spec"]["tolerations"]}
        assert {("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule")} <= tolerations
        labels = pod["metadata"]["labels"]
        assert labels["pod-template-generation"] == "1" and labels["controller-revision-hash"]

        await env.client.create(node("n5", {"disk": "ssd"}))
        await wait_for(lambda: status_is(env.client, numberReady=3, desiredNumberScheduled=3))
        await env.client.patch(NODE, "n1", {"metadata": {"labels": {"disk": "hdd"}}})

        async def moved() -> bool:
            return sorted(await pods_by_node(env.client)) == ["n2", "n5"]

        await wait_for(moved)


async def test_rolling_update_replaces_pods_one_node_at_a_time() -> None:
    async with env_() as env:
        for name in ("n1", "n2", "n3"):
            await env.client.create(node(name))
        await env.client.create(daemon_set())
        await wait_for(lambda: status_is(env.client, numberReady=3))
        before = (await pods_by_node(env.client))["n1"][0]["metadata"]["labels"][
            "controller-revision-hash"]
        seen_unavailable: list[int] = []

        async def updated() -> dict[str, Any] | None:
            status = await ds_status(env.client)
            seen_unavailable.append(status.get("numberUnavailable", 0))
            return status if status.get("observedGeneration") == 2 and status.get(
                "updatedNumberScheduled") == 3 and status.get("numberAvailable") == 3 else None

        await env.client.patch(DS, "agent", {"spec": {"template": {"spec": {
            "containers": [{"name": "a", "image": "agent:2"}]}}}}, namespace=NS)
        await wait_for(updated)
        assert max(seen_unavailable) <= 1
        hashes = {p[0]["metadata"]["labels"]["controller-revision-hash"]
                  for p in (await pods_by_node(env.client)).values()}
        assert len(hashes) == 1 and before not in hashes


def test_node_eligibility_follows_affinity_and_taints() -> None:
    pod = daemonset.daemon_pod_spec(daemon_set())
    assert daemonset.node_should_run(pod, node("a")) == (True, True)
    tainted = node("b", taints=[{"key": "x", "effect": "NoSchedule"}])
    assert daemonset.node_should_run(pod, tainted) == (False, True)
    evicting = node("c", taints=[{"key": "x", "effect": "NoExecute"}])
    assert daemonset.node_should_run(pod, evicting) == (False, False)
    not_ready = node("d", taints=[{"key": "node.kubernetes.io/not-ready",
                                   "effect": "NoExecute"}])
    assert daemonset.node_should_run(pod, not_ready) == (True, True)
    # the admission's taint on a node not yet seen Ready is not tolerated
    registering = node("e", taints=[{"key": "node.kubernetes.io/not-ready",
                                     "effect": "NoSchedule"}])
    assert daemonset.node_should_run(pod, registering) == (False, True)
