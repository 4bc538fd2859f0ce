"""The Deployment controller on the embedded cluster: ReplicaSets, rollouts, status."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.workloads.controllers import deployment, replicaset
from tests.workloads.podsim import (
    DEPLOYMENT,
    POD,
    REPLICA_SET,
    WorkloadEnv,
    wait_for,
    workload_cluster,
)

EVENT = Kind("v1", "Event")
CONTROLLERS = [deployment.install, replicaset.install]
Obj = dict[str, Any]


def make_deployment(name: str, replicas: int = 3, image: str = "nginx:1", **spec: Any) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, **spec,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def image_patch(image: str) -> Obj:
    return {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}


async def get_deployment(client: Client, name: str) -> Obj:
    result: Obj = await client.get(DEPLOYMENT, name, namespace="default")
    return result


def rolled_out(d: Obj) -> bool:
    """What ``kubectl rollout status`` waits for."""
    status = d.get("status") or {}
    replicas = d["spec"]["replicas"]
    return bool(d["metadata"]["generation"] <= status.get("observedGeneration", 0)
                and status.get("updatedReplicas", 0) == replicas
                and status.get("replicas", 0) == replicas
                and status.get("availableReplicas", 0) == replicas)


async def wait_rolled_out(client: Client, name: str, timeout: float = 20.0) -> Obj:
    async def check() -> Obj | None:
        d = await get_deployment(client, name)
        return d if rolled_out(d) else None
    result: Obj = await wait_for(check, timeout=timeout)
    return result


async def replica_sets(client: Client, app: str) -> list[Obj]:
    items: list[Obj] = (await client.list(REPLICA_SET, namespace="default",
                                          label_selector=f"app={app}")).items
    return sorted(items, key=lambda rs: int(rs["metadata"]["annotations"][
        "deployment.kubernetes.io/revision"]))


def condition(d: Obj, type_: str) -> Obj:
    found: Obj = next(c for c in d["status"]["conditions"] if c["type"] == type_)
    return found


class PodWatch:
    """Every pod change, from the watch; checks invariants after each event."""

    def __init__(self, client: Client, app: str) -> None:
        self.client = client
        self.app = app
        self.pods: dict[str, Obj] = {}
        self.snapshots: list[list[Obj]] = []

    def live(self) -> list[Obj]:
        return [p for p in self.pods.values() if not p["metadata"].get("deletionTimestamp")]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[PodWatch]:
        listed = await self.client.list_all(POD, namespace="default",
                                            label_selector=f"app={self.app}")
        for pod in listed.items:
            self.pods[pod["metadata"]["name"]] = pod
        task = asyncio.create_task(self._run(listed.resource_version))
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, version: str) -> None:
        watch = self.client.watch(POD, namespace="default", resource_version=version,
                                  label_selector=f"app={self.app}")
        async with watch:
            async for event_type, pod in watch:
                name = pod["metadata"]["name"]
                if event_type == "DELETED":
                    self.pods.pop(name, None)
                elif event_type in ("ADDED", "MODIFIED"):
                    self.pods[name] = pod
                self.snapshots.append(list(self.pods.values()))


def is_ready(pod: Obj) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def template_hash(pod: Obj) -> str:
    return str(pod["metadata"]["labels"]["pod-template-hash"])


async def test_deployment_creates_replicaset_named_by_template_hash() -> None:
    async with workload_cluster(CONTROLLERS) as env:
        created = await env.client.create(make_deployment("web", replicas=3))
        d = await wait_rolled_out(env.client, "web")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        [rs] = await replica_sets(env.client, "web")
        pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{pod_hash}"
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web",
                                                          "pod-template-hash": pod_hash}
        assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == pod_hash
        assert rs["metadata"]["annotations"] == {
            "deployment.kubernetes.io/revision": "1",
            "deployment.kubernetes.io/desired-replicas": "3",
            "deployment.kubernetes.io/max-replicas": "4"}
        [owner] = rs["metadata"]["ownerReferences"]
        assert owner["uid"] == created["metadata"]["uid"] and owner["controller"] is True
        assert owner["blockOwnerDeletion"] is True
        status = d["status"]
        assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"],
                status["availableReplicas"]) == (3, 3, 3, 3)
        assert "unavailableReplicas" not in status
        available = condition(d, "Available")
        assert (available["status"], available["reason"], available["message"]) == (
            "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        progressing = condition(d, "Progressing")
        assert (progressing["status"], progressing["reason"], progressing["message"]) == (
            "True", "NewReplicaSetAvailable",
            f'ReplicaSet "web-{pod_hash}" has successfully progressed.')
        assert set(progressing) == {"type", "status", "lastUpdateTime", "lastTransitionTime",
                                    "reason", "message"}

        async def scaling_event() -> list[Obj]:
            events = (await env.client.list(EVENT, namespace="default")).items
            return [e for e in events if e["reason"] == "ScalingReplicaSet"]
        [event] = await wait_for(scaling_event)
        assert event["message"] == f"Scaled up replica set web-{pod_hash} from 0 to 3"
        assert event["involvedObject"]["name"] == "web"


async def test_template_hash_is_stable_across_controller_restarts() -> None:
    async with workload_cluster(CONTROLLERS) as env:
        await env.client.create(make_deployment("stable", replicas=1))
        await wait_rolled_out(env.client, "stable")
        [before] = await replica_sets(env.client, "stable")
        # an unrelated change (scale) must not make a new ReplicaSet
        await env.client.patch(DEPLOYMENT, "stable", {"spec": {"replicas": 2}},
                               namespace="default")
        await wait_rolled_out(env.client, "stable")
        [after] = await replica_sets(env.client, "stable")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["spec"]["replicas"] == 2
        assert after["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] \
            == "2"


async def rolling_update_bounds(env: WorkloadEnv, name: str, spec: Obj, surge: int,
                                unavailable: int) -> PodWatch:
    await env.client.create(make_deployment(name, replicas=10, image="nginx:1", **spec))
    await wait_rolled_out(env.client, name)
    watcher = PodWatch(env.client, name)
    async with watcher.running():
        await env.client.patch(DEPLOYMENT, name, image_patch("nginx:2"), namespace="default")
        d = await wait_rolled_out(env.client, name, timeout=30)
        await wait_for(lambda: len(watcher.live()) == 10 and all(
            is_ready(p) for p in watcher.live()))
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert len(watcher.snapshots) > 20
    for snapshot in watcher.snapshots:
        live = [p for p in snapshot if not p["metadata"].get("deletionTimestamp")]
        assert len(live) <= 10 + surge, [p["metadata"]["name"] for p in live]
        assert sum(is_ready(p) for p in live) >= 10 - unavailable
    hashes = {template_hash(p) for p in watcher.live()}
    assert len(hashes) == 1
    return watcher


async def test_rolling_update_stays_within_surge_and_unavailability() -> None:
    async with workload_cluster(CONTROLLERS, ready_after=0.03) as env:
        # 25% of 10: surge rounds up to 3, unavailability down to 2
        await rolling_update_bounds(env, "roll", {}, surge=3, unavailable=2)


async def test_rolling_update_with_zero_unavailability_never_loses_a_ready_pod() -> None:
    async with workload_cluster(CONTROLLERS, ready_after=0.03) as env:
        strategy = {"strategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}}}
        await rolling_update_bounds(env, "careful", strategy, surge=2, unavailable=0)


async def test_recreate_stops_every_old_pod_before_starting_new_ones() -> None:
    async with workload_cluster(CONTROLLERS, ready_after=0.03) as env:
        await env.client.create(make_deployment("batch", replicas=4,
                                                strategy={"type": "Recreate"}))
        await wait_rolled_out(env.client, "batch")
        [old_rs] = await replica_sets(env.client, "batch")
        old_hash = old_rs["metadata"]["labels"]["pod-template-hash"]
        watcher = PodWatch(env.client, "batch")
        async with watcher.running():
            await env.client.patch(DEPLOYMENT, "batch", image_patch("nginx:2"),
                                   namespace="default")
            await wait_rolled_out(env.client, "batch")
        for snapshot in watcher.snapshots:
            hashes = {template_hash(p) for p in snapshot}
            assert len(hashes) <= 1, "old and new pods existed together"
        assert {template_hash(p) for p in watcher.live()} != {old_hash}
        old, new = await replica_sets(env.client, "batch")
        assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 4


async def test_revision_history_limit_removes_oldest_scaled_down_replicasets() -> None:
    async with workload_cluster(CONTROLLERS) as env:
        await env.client.create(make_deployment("hist", replicas=1, revisionHistoryLimit=1))
        for version in (2, 3, 4):
            await wait_rolled_out(env.client, "hist")
            await env.client.patch(DEPLOYMENT, "hist", image_patch(f"nginx:{version}"),
                                   namespace="default")
        await wait_rolled_out(env.client, "hist")

        async def two_left() -> list[Obj] | None:
            rss = await replica_sets(env.client, "hist")
            return rss if len(rss) == 2 else None
        rss = await wait_for(two_left)
        revisions = [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                     for rs in rss]
        assert revisions == ["3", "4"]


async def test_paused_deployment_waits_for_resume_to_roll_out() -> None:
    async with workload_cluster(CONTROLLERS) as env:
        await env.client.create(make_deployment("pause", replicas=2))
        await wait_rolled_out(env.client, "pause")
        await env.client.patch(DEPLOYMENT, "pause", {"spec": {"paused": True}},
                               namespace="default")

        async def paused() -> Obj | None:
            d = await get_deployment(env.client, "pause")
            return d if condition(d, "Progressing")["reason"] == "DeploymentPaused" else None
        d = await wait_for(paused)
        assert condition(d, "Progressing")["status"] == "Unknown"
        assert condition(d, "Progressing")["message"] == "Deployment is paused"
        await env.client.patch(DEPLOYMENT, "pause", image_patch("nginx:2"), namespace="default")
        await wait_for(lambda: get_deployment_observed(env.client, "pause"))
        assert len(await replica_sets(env.client, "pause")) == 1
        await env.client.patch(DEPLOYMENT, "pause", {"spec": {"paused": False}},
                               namespace="default")
        d = await wait_rolled_out(env.client, "pause")
        assert len(await replica_sets(env.client, "pause")) == 2
        assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"


async def get_deployment_observed(client: Client, name: str) -> bool:
    d = await get_deployment(client, name)
    return bool(d["status"].get("observedGeneration", 0) >= d["metadata"]["generation"])


async def test_progress_deadline_exceeded_when_new_pods_never_become_ready() -> None:
    never: Callable[[Obj], bool] = lambda pod: False  # noqa: E731
    async with workload_cluster(CONTROLLERS, ready=never) as env:
        await env.client.create(make_deployment("stuck", replicas=2,
                                                progressDeadlineSeconds=1))

        async def timed_out() -> Obj | None:
            d = await get_deployment(env.client, "stuck")
            conditions = {c["type"]: c for c in d.get("status", {}).get("conditions", [])}
            progressing = conditions.get("Progressing")
            return d if progressing and progressing["reason"] == "ProgressDeadlineExceeded" \
                else None
        d = await wait_for(timed_out)
        [rs] = await replica_sets(env.client, "stuck")
        progressing = condition(d, "Progressing")
        assert progressing["status"] == "False"
        assert progressing["message"] == \
            f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
        available = condition(d, "Available")
        assert (available["status"], available["reason"]) == ("False",
                                                              "MinimumReplicasUnavailable")
        assert d["status"]["unavailableReplicas"] == 2


async def test_scaling_during_a_stuck_rollout_is_proportional() -> None:
    async with workload_cluster(CONTROLLERS, ready=lambda pod: "nginx:2" not in str(
            pod["spec"]["containers"])) as env:
        await env.client.create(make_deployment("prop", replicas=10))
        await wait_rolled_out(env.client, "prop")
        await env.client.patch(DEPLOYMENT, "prop", image_patch("nginx:2"), namespace="default")

        async def stuck() -> list[Obj] | None:
            rss = await replica_sets(env.client, "prop")
            sizes = [rs["spec"]["replicas"] for rs in rss]
            return rss if sizes == [8, 5] else None
        await wait_for(stuck)
        await env.client.patch(DEPLOYMENT, "prop", {"spec": {"replicas": 20}},
                               namespace="default")

        async def scaled() -> list[int] | None:
            sizes = [rs["spec"]["replicas"] for rs in await replica_sets(env.client, "prop")]
            return sizes if sum(sizes) == 25 else None
        # 25 = 20 + 25% surge, spread as 8:5 of the 13 before: 15 old, 10 new
        assert await wait_for(scaled) == [15, 10]
        for rs in await replica_sets(env.client, "prop"):
            notes = rs["metadata"]["annotations"]
            assert notes["deployment.kubernetes.io/desired-replicas"] == "20"
            assert notes["deployment.kubernetes.io/max-replicas"] == "25"


@pytest.mark.slow
async def test_hundred_deployments_of_ten_become_ready_and_roll_out() -> None:
    async with workload_cluster(CONTROLLERS) as env:
        names = [f"scale-{i}" for i in range(100)]
        await asyncio.gather(*(env.client.create(make_deployment(n, replicas=10))
                               for n in names))

        async def all_rolled_out() -> bool:
            items = (await env.client.list(DEPLOYMENT, namespace="default")).items
            return len(items) == 100 and all(rolled_out(d) for d in items)
        await wait_for(all_rolled_out, timeout=120, max_interval=0.2)
        await asyncio.gather(*(env.client.patch(DEPLOYMENT, n, image_patch("nginx:2"),
                                                namespace="default") for n in names))
        await wait_for(all_rolled_out, timeout=240, max_interval=0.2)
        pods = (await env.client.list(POD, namespace="default")).items
        assert len([p for p in pods if not p["metadata"].get("deletionTimestamp")]) == 1000


async def test_the_sync_reads_the_cached_new_replica_set_without_changing_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``getNewReplicaSet`` (pkg/controller/deployment/sync.go) copies the new ReplicaSet
    for the update of its annotations it rarely makes; Setpoint tries the annotations on a
    copy of them alone and copies the whole object only to update it. Every ReplicaSet the
    cache hands out is frozen here: a rollout (the new ReplicaSet's revision and scaling,
    the old one's scaling down) must never write into one."""
    from setpoint.runtime import _cache
    from tests.workloads.test_replicaset import _frozen, writes_into_cache

    writes_into_cache.clear()
    get, list_raw = _cache.Store.get, _cache.Cache.list_raw

    def freeze(obj: Any) -> Any:
        return _frozen(obj) if isinstance(obj, dict) and obj.get("kind") == "ReplicaSet" \
            else obj

    def frozen_get(self: _cache.Store, key: str) -> Any:
        return freeze(get(self, key))

    def frozen_list_raw(self: _cache.Cache, kind: object, **kwargs: Any) -> list[Obj]:
        return [freeze(o) for o in list_raw(self, kind, **kwargs)]

    monkeypatch.setattr(_cache.Store, "get", frozen_get)
    monkeypatch.setattr(_cache.Cache, "list_raw", frozen_list_raw)
    async with workload_cluster(CONTROLLERS, ready_after=0.03) as env:
        await env.client.create(make_deployment("frozen", replicas=3))
        await wait_rolled_out(env.client, "frozen")
        await env.client.patch(DEPLOYMENT, "frozen", image_patch("nginx:2"),
                               namespace="default")
        d = await wait_rolled_out(env.client, "frozen")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert [rs["spec"]["replicas"] for rs in await replica_sets(env.client, "frozen")] \
            == [0, 3]
    assert writes_into_cache == []


async def test_a_conflicting_replica_set_update_fails_the_sync_without_a_read() -> None:
    """Go's ``scaleReplicaSet`` (pkg/controller/deployment/sync.go) returns the
    ReplicaSet ``Update``'s error as it is, and ``handleErr`` (deployment_controller.go)
    requeues the Deployment with ``AddRateLimited``: a 409 from a status write that won
    the race is not read back and retried inside the sync. Scaling a ReplicaSet from a copy
    read before its status write must fail with the conflict, write nothing, record
    nothing, and ask the server for nothing else."""
    from setpoint.client import ConflictError
    from setpoint.workloads.controllers.deployment_sync import DeploymentSync

    async with workload_cluster([], simulate=False) as env:
        d = await env.client.create(make_deployment("stale", replicas=2))
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": "stale-1", "namespace": "default",
                           "labels": {"app": "stale"}},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "stale"}},
                       "template": d["spec"]["template"]}}
        stale = await env.client.create(rs, namespace="default")
        await env.client.update_status({**stale, "status": {"replicas": 1}},
                                       namespace="default")
        recorded: list[Obj] = []
        reads: list[Any] = []
        real_get = env.client.get

        async def get(*args: Any, **kwargs: Any) -> Any:
            reads.append(args)
            return await real_get(*args, **kwargs)

        env.client.get = get  # type: ignore[method-assign]
        sync = DeploymentSync(client=env.client, d=d, replica_sets=[stale],
                              record=recorded.append, cached_replica_set=lambda ns, n: stale)
        with pytest.raises(ConflictError):
            await sync.scale_replica_set(stale, 2, "up")
        env.client.get = real_get  # type: ignore[method-assign]
        assert reads == [] and recorded == []
        assert sync.replica_sets == [stale]
        fresh = await env.client.get(REPLICA_SET, "stale-1", namespace="default")
        assert fresh["spec"]["replicas"] == 1
