"""The ReplicaSet controller on the embedded cluster, driven over HTTP."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from setpoint.client import Client, Kind
from setpoint.runtime import _cache
from setpoint.workloads.controllers import replicaset
from tests.workloads.podsim import POD, REPLICA_SET, wait_for, workload_cluster

EVENT = Kind("v1", "Event")


def replica_set(name: str, replicas: int = 3, labels: dict[str, str] | None = None,
                **spec: Any) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, **spec,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def pods_of(client: Client, app: str) -> list[dict[str, Any]]:
    return (await client.list(POD, namespace="default", label_selector=f"app={app}")).items


async def rs_status(client: Client, name: str) -> dict[str, Any]:
    rs = await client.get(REPLICA_SET, name, namespace="default")
    status: dict[str, Any] = rs.get("status") or {}
    return status


async def test_replicaset_creates_owned_pods_and_reports_ready_status() -> None:
    async with workload_cluster([replicaset.install]) as env:
        rs = await env.client.create(replica_set("web", replicas=3))

        async def all_available() -> bool:
            status = await rs_status(env.client, "web")
            return status.get("availableReplicas") == 3 and status.get("readyReplicas") == 3
        await wait_for(all_available)
        pods = await pods_of(env.client, "web")
        assert len(pods) == 3
        for pod in pods:
            m = pod["metadata"]
            assert m["generateName"] == "web-"
            assert m["name"].startswith("web-")
            assert m["ownerReferences"] == [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        status = await rs_status(env.client, "web")
        assert status["replicas"] == 3
        assert status["fullyLabeledReplicas"] == 3
        assert status["observedGeneration"] == 1


async def test_replicaset_never_overcreates_while_its_creates_are_in_flight() -> None:
    async with workload_cluster([replicaset.install], simulate=False) as env:
        await env.client.create(replica_set("burst", replicas=20))
        await wait_for(lambda: rs_status(env.client, "burst"))

        async def twenty() -> bool:
            return (await rs_status(env.client, "burst")).get("replicas") == 20
        await wait_for(twenty)
        # pod events keep arriving and re-syncing the ReplicaSet: the count must hold
        for _ in range(5):
            await env.client.patch(REPLICA_SET, "burst", {"metadata": {"labels": {"x": "y"}}},
                                   namespace="default")
        await wait_for(lambda: env.manager.running_controllers[0].queue.processing == 0)
        assert len(await pods_of(env.client, "burst")) == 20


async def test_replicaset_scales_down_unready_pods_first() -> None:
    async with workload_cluster([replicaset.install],
                                ready=lambda pod: pod["metadata"]["name"] not in slow) as env:
        await env.client.create(replica_set("db", replicas=2))

        async def ready_two() -> bool:
            return (await rs_status(env.client, "db")).get("readyReplicas") == 2
        await wait_for(ready_two)
        first_two = {p["metadata"]["name"] for p in await pods_of(env.client, "db")}
        slow.clear()
        await env.client.patch(REPLICA_SET, "db", {"spec": {"replicas": 4}},
                                namespace="default")

        async def four() -> bool:
            pods = await pods_of(env.client, "db")
            return len(pods) == 4 and all(p.get("status", {}).get("phase") == "Running"
                                          for p in pods)
        await wait_for(four)
        newer = [p for p in await pods_of(env.client, "db")
                 if p["metadata"]["name"] not in first_two]
        # the two newest pods stay unready (the simulator refuses them)
        for pod in newer:
            await env.pods.make_ready(pod, ready=False)
        await env.client.patch(REPLICA_SET, "db", {"spec": {"replicas": 2}},
                                namespace="default")

        async def back_to_two() -> bool:
            pods = [p for p in await pods_of(env.client, "db")
                    if not p["metadata"].get("deletionTimestamp")]
            return len(pods) == 2
        await wait_for(back_to_two)
        left = {p["metadata"]["name"] for p in await pods_of(env.client, "db")
                if not p["metadata"].get("deletionTimestamp")}
        assert left == first_two


slow: set[str] = set()


async def test_replicaset_adopts_matching_orphans_and_releases_relabelled_pods() -> None:
    async with workload_cluster([replicaset.install]) as env:
        orphan: dict[str, Any] = await env.client.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "cache"}},
            "spec": {"containers": [{"name": "c", "image": "redis"}]}})
        rs = await env.client.create(replica_set("cache", replicas=2))

        async def adopted() -> bool:
            pod = await env.client.get(POD, "stray", namespace="default")
            refs = pod["metadata"].get("ownerReferences") or []
            return any(r["uid"] == rs["metadata"]["uid"] and r.get("controller") for r in refs)
        await wait_for(adopted)

        async def two() -> bool:
            return (await rs_status(env.client, "cache")).get("availableReplicas") == 2
        await wait_for(two)
        assert len(await pods_of(env.client, "cache")) == 2
        assert orphan["metadata"]["uid"]

        await env.client.patch(POD, "stray", {"metadata": {"labels": {"app": "other"}}},
                               namespace="default")

        async def released() -> bool:
            pod = await env.client.get(POD, "stray", namespace="default")
            return not pod["metadata"].get("ownerReferences")
        await wait_for(released)
        await wait_for(two)
        assert len(await pods_of(env.client, "cache")) == 2


async def test_replicaset_records_events_as_replicaset_controller() -> None:
    async with workload_cluster([replicaset.install]) as env:
        await env.client.create(replica_set("ev", replicas=1))

        async def created_event() -> list[dict[str, Any]]:
            events = (await env.client.list(EVENT, namespace="default")).items
            return [e for e in events if e.get("reason") == "SuccessfulCreate"]
        events = await wait_for(created_event)
        event = events[0]
        assert event["message"].startswith("Created pod: ev-")
        assert event["involvedObject"]["kind"] == "ReplicaSet"
        assert event.get("reportingComponent") == "replicaset-controller"


async def test_failed_pod_creation_sets_replica_failure_and_clears_it_after() -> None:
    async with workload_cluster([replicaset.install]) as env:
        body = replica_set("sa", replicas=2)
        body["spec"]["template"]["spec"]["serviceAccountName"] = "robot"
        await env.client.create(body)

        async def failure() -> dict[str, Any] | None:
            status = await rs_status(env.client, "sa")
            return next((c for c in status.get("conditions", [])
                         if c["type"] == "ReplicaFailure"), None)
        condition = await wait_for(failure)
        assert condition["status"] == "True" and condition["reason"] == "FailedCreate"
        assert 'serviceaccount "robot" not found' in condition["message"]
        await env.client.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": "robot", "namespace": "default"}})

        async def recovered() -> bool:
            status = await rs_status(env.client, "sa")
            return status.get("readyReplicas") == 2 and not status.get("conditions")
        await wait_for(recovered, timeout=20)


class _Written(AssertionError):
    """A reconcile wrote into an object the cache holds."""


writes_into_cache: list[str] = []


def _refuse(*args: object, **kwargs: object) -> NoReturn:
    writes_into_cache.append(repr(args[1:]))
    raise _Written("the cache's object was changed in place")


class _FrozenDict(dict[str, Any]):
    __setitem__ = __delitem__ = setdefault = pop = popitem = update = clear = _refuse


class _FrozenList(list[Any]):
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = sort = _refuse
    __iadd__ = clear = reverse = _refuse


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return _FrozenDict({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return _FrozenList(_frozen(v) for v in value)
    return value


async def test_the_sync_reads_the_cached_replica_set_without_changing_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller reads the ReplicaSet the cache holds in place, without a copy per
    sync, as Go's reads its lister's pointer (pkg/controller/replicaset/replica_set.go
    ``syncReplicaSet`` copies only before ``calculateStatus``, whose status it writes into):
    creating, deleting and the status PUTs must then leave the cache's object as it was,
    or the next sync (and every other reader of the cache) would see what one sync
    wrote."""
    writes_into_cache.clear()
    get = _cache.Store.get

    def frozen_get(self: _cache.Store, key: str) -> Any:
        obj = get(self, key)
        return _frozen(obj) if obj is not None and obj.get("kind") == "ReplicaSet" else obj

    monkeypatch.setattr(_cache.Store, "get", frozen_get)
    async with workload_cluster([replicaset.install]) as env:
        await env.client.create(replica_set("frozen", replicas=3))

        async def available(count: int) -> bool:
            status = await rs_status(env.client, "frozen")
            return status.get("availableReplicas") == count and \
                len(await pods_of(env.client, "frozen")) == count
        await wait_for(lambda: available(3))
        await env.client.patch(REPLICA_SET, "frozen", {"spec": {"replicas": 1}},
                               namespace="default")
        await wait_for(lambda: available(1))
    assert writes_into_cache == []
