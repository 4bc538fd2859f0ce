"""``kubectl delete --cascade=foreground|orphan`` on a Deployment run by the simulated
controllers: what the API server (store.go deletionFinalizersForGarbageCollection) and
kube-controller-manager's garbage collector (pkg/controller/garbagecollector/
garbagecollector.go) make of it, in the order a real cluster shows it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.workloads.podsim import DEPLOYMENT, POD, REPLICA_SET, WorkloadEnv, workload_cluster
from tests.workloads.test_deployment import (
    CONTROLLERS,
    make_deployment,
    replica_sets,
    wait_rolled_out,
)
from tests.workloads.test_deployment_kubectl import Kubectl

Obj = dict[str, Any]


async def _history(env: WorkloadEnv, kind: Any, since: str, last: set[str],
                   label_selector: str | None = None,
                   field_selector: str | None = None) -> list[tuple[str, Obj]]:
    """The watch events of ``kind`` since ``since`` until each name in ``last`` is DELETED."""
    seen: list[tuple[str, Obj]] = []
    pending = set(last)

    async def collect() -> None:
        watch = env.client.watch(kind, namespace="default", resource_version=since,
                                 label_selector=label_selector, field_selector=field_selector,
                                 timeout_seconds=60)
        async with watch:
            async for event_type, obj in watch:
                seen.append((event_type, obj))
                if event_type == "DELETED":
                    pending.discard(obj["metadata"]["name"])
                    if not pending:
                        return

    await asyncio.wait_for(collect(), 60)
    return seen


def _deleted_at(events: list[tuple[str, Obj]]) -> dict[str, int]:
    return {obj["metadata"]["name"]: int(obj["metadata"]["resourceVersion"])
            for event_type, obj in events if event_type == "DELETED"}


async def test_kubectl_cascade_foreground_and_orphan_on_a_deployment(tmp_path: Path) -> None:
    """--cascade=foreground: the Deployment gets deletionTimestamp and the foregroundDeletion
    finalizer and stays until its ReplicaSet is gone; the ReplicaSet, a dependent with
    blockOwnerDeletion and dependents of its own, is deleted in the foreground too
    (attemptToDeleteItem: an owner waiting for its dependents), and goes after its Pods.
    --cascade=orphan: the orphan finalizer, then attemptToOrphan strips the Deployment from
    the ReplicaSet's ownerReferences; the ReplicaSet and its Pods stay."""
    async with workload_cluster(CONTROLLERS) as env:
        kubectl = Kubectl(env, tmp_path)
        for name in ("fg", "or"):
            await env.client.create(make_deployment(name, replicas=2))
        for name in ("fg", "or"):
            await wait_rolled_out(env.client, name)
        since = (await env.client.list(POD, namespace="default")).resource_version
        assert since is not None
        (rs,) = await replica_sets(env.client, "fg")
        pods = {p["metadata"]["name"] for p in (await env.client.list(
            POD, namespace="default", label_selector="app=fg")).items}
        assert len(pods) == 2

        out = await kubectl.ok("delete", "deployment", "fg", "--cascade=foreground")
        assert out.strip() == 'deployment.apps "fg" deleted'
        deployment_events = await _history(env, DEPLOYMENT, since, {"fg"},
                                             field_selector="metadata.name=fg")
        rs_events = await _history(env, REPLICA_SET, since, {rs["metadata"]["name"]}, "app=fg")
        pod_events = await _history(env, POD, since, pods, "app=fg")
        marked = [obj for t, obj in deployment_events if t == "MODIFIED"
                  and obj["metadata"].get("deletionTimestamp")]
        assert marked and marked[0]["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert any(obj["metadata"].get("deletionTimestamp")
                   and obj["metadata"].get("finalizers") == ["foregroundDeletion"]
                   for t, obj in rs_events if t == "MODIFIED")
        assert rs["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
        pods_gone = _deleted_at(pod_events)
        rs_gone = _deleted_at(rs_events)[rs["metadata"]["name"]]
        assert max(pods_gone.values()) < rs_gone < _deleted_at(deployment_events)["fg"]

        (orphan_rs,) = await replica_sets(env.client, "or")
        out = await kubectl.ok("delete", "deployment", "or", "--cascade=orphan")
        assert out.strip() == 'deployment.apps "or" deleted'
        deployment_events = await _history(env, DEPLOYMENT, since, {"or"},
                                             field_selector="metadata.name=or")
        marked = [obj for t, obj in deployment_events if t == "MODIFIED"
                  and obj["metadata"].get("deletionTimestamp")]
        assert marked and marked[0]["metadata"]["finalizers"] == ["orphan"]
        kept = await env.client.get(REPLICA_SET, orphan_rs["metadata"]["name"],
                                    namespace="default")
        assert "ownerReferences" not in kept["metadata"]
        assert kept["metadata"]["uid"] == orphan_rs["metadata"]["uid"]
        owned = (await env.client.list(POD, namespace="default", label_selector="app=or")).items
        assert len(owned) == 2
        assert all(p["metadata"]["ownerReferences"][0]["uid"] == kept["metadata"]["uid"]
                   for p in owned)
