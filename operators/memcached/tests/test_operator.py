"""The memcached operator on a whole embedded cluster: pods are scheduled, become Ready,
get addresses, are deleted and come back, as on a real cluster."""

from __future__ import annotations

import json
from typing import Any

from operators.memcached import objects
from operators.memcached.operator import manager
from operators.memcached.resource import Memcached, MemcachedSpec
from operators.memcached.tests.kubectl import Kubectl
from setpoint.client import Client
from setpoint.resources.models.apps_v1 import Deployment, StatefulSet
from setpoint.resources.models.core_v1 import ConfigMap, Pod, Service
from setpoint.resources.models.events_v1 import Event
from setpoint.testing import Faults, OperatorRunner, SetpointCluster, present
from setpoint.testing.plugin import Waiter

TIMEOUT = 30.0


def serving(replicas: int) -> Any:
    """A Memcached whose spec is observed, with ``replicas`` ready backends, all in the
    configuration, and the proxies rolled out to it."""

    def check(mc: Memcached) -> bool:
        status = mc.status
        progressing = status.get_condition("Progressing")
        return (status.observed_generation == mc.metadata.generation
                and status.ready_replicas == replicas
                and len(status.backends or ()) == replicas
                and status.is_true("Available")
                and progressing is not None and progressing.reason == "Complete")

    check.__qualname__ = f"serving({replicas})"
    return check


async def configuration(k8s: Client, mc: Memcached) -> dict[str, Any]:
    """The mcrouter configuration the Memcached's status names."""
    assert mc.status.configuration is not None
    cm = await k8s.get(ConfigMap, mc.status.configuration)
    return dict(json.loads(present(cm.data)["config.json"]))


async def backend_pods(k8s: Client, name: str = "m") -> list[Pod]:
    pods = (await k8s.list(Pod, label_selector=f"{objects.NAME}=memcached,"
                                               f"{objects.INSTANCE}={name}")).items
    return sorted((p for p in pods if not p.metadata.deletion_timestamp),
                  key=lambda p: int(present(p.metadata.name).rsplit("-", 1)[1]))


async def config_maps(k8s: Client, name: str = "m") -> list[str]:
    items = (await k8s.list(ConfigMap, label_selector=f"{objects.INSTANCE}={name}")).items
    return sorted(present(cm.metadata.name) for cm in items)


async def proxy_mounts(k8s: Client, name: str = "m") -> str:
    deployment = await k8s.get(Deployment, f"{name}-mcrouter")
    pod = present(present(present(deployment.spec).template).spec)
    return str(present(present(pod.volumes)[0].config_map).name)


async def test_a_memcached_gets_backends_a_proxy_and_a_configuration_of_its_pods(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, kubectl: Kubectl) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=3)))

    mc = await wait_for(Memcached, "m", serving(3), timeout=TIMEOUT)
    pods = await backend_pods(k8s)
    addresses = [f"{present(p.status).pod_ip}:11211" for p in pods]
    assert mc.status.backends == addresses
    config = await configuration(k8s, mc)
    assert config["pools"]["shards"]["servers"] == addresses
    assert config["route"]["type"] == "PoolRoute"
    assert await proxy_mounts(k8s) == mc.status.configuration
    assert present((await k8s.get(StatefulSet, "m-memcached")).spec).replicas == 3
    assert present((await k8s.get(Service, "m-memcached")).spec).cluster_ip == "None"
    assert present(present((await k8s.get(Service, "m")).spec).ports)[0].port == 11211
    events = (await k8s.list(Event)).items
    assert any(e.reason == "ConfigurationChanged" and present(e.regarding).name == "m"
               and mc.status.configuration in (e.note or "") for e in events)

    table = await kubectl("get", "memcached", "m")
    header, row = table.splitlines()
    assert header.split() == ["NAME", "REPLICAS", "READY", "TOPOLOGY", "AGE"]
    assert row.split()[:4] == ["m", "3", "3", "sharded"]


async def test_scaling_through_the_spec_rewrites_the_configuration_and_keeps_two(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=2)))
    first = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)

    await k8s.patch(Memcached, "m", {"spec": {"replicas": 4}})
    up = await wait_for(Memcached, "m", serving(4), timeout=TIMEOUT)
    await k8s.patch(Memcached, "m", {"spec": {"replicas": 1}})
    down = await wait_for(Memcached, "m", serving(1), timeout=TIMEOUT)

    assert down.status.backends == up.status.backends[:1]
    assert (await configuration(k8s, down))["pools"]["shards"]["servers"] == \
        down.status.backends
    assert await proxy_mounts(k8s) == down.status.configuration
    assert len(await backend_pods(k8s)) == 1
    # only the current configuration and the one before it are kept
    kept = sorted(n for n in {down.status.configuration, down.status.previous_configuration} if n)
    assert await wait_for(lambda: _exactly(config_maps(k8s), kept))
    assert first.status.configuration not in await config_maps(k8s)


async def _exactly(names: Any, wanted: list[str | None]) -> bool:
    return bool(await names == wanted)


async def test_kubectl_scale_resizes_the_pool(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, kubectl: Kubectl) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=1)))
    await wait_for(Memcached, "m", serving(1), timeout=TIMEOUT)

    out = await kubectl("scale", "memcached/m", "--replicas=3")
    assert "scaled" in out
    mc = await wait_for(Memcached, "m", serving(3), timeout=TIMEOUT)
    assert mc.spec.replicas == 3
    assert present((await k8s.get(StatefulSet, "m-memcached")).spec).replicas == 3
    scale = json.loads(await kubectl("get", "--raw", "/apis/cache.setpoint.dev/v1/namespaces/"
                                     f"{k8s.namespace}/memcacheds/m/scale"))
    assert scale["status"]["replicas"] == 3
    assert scale["status"]["selector"] == mc.status.selector


async def test_changing_the_topology_rewrites_the_routes(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=4)))
    sharded = await wait_for(Memcached, "m", serving(4), timeout=TIMEOUT)

    await k8s.patch(Memcached, "m", {"spec": {"topology": "replicated"}})
    replicated = await wait_for(Memcached, "m", serving(4), timeout=TIMEOUT)
    config = await configuration(k8s, replicated)
    assert config["route"]["type"] == "OperationSelectorRoute"
    assert config["pools"]["replicas"]["servers"] == sharded.status.backends

    await k8s.patch(Memcached, "m", {"spec": {"topology": "sharded", "replicasPerShard": 2}})
    both = await wait_for(Memcached, "m", serving(4), timeout=TIMEOUT)
    config = await configuration(k8s, both)
    assert config["route"]["type"] == "HashRoute"
    assert config["pools"] == {"shard-0": {"servers": sharded.status.backends[:2]},
                               "shard-1": {"servers": sharded.status.backends[2:]}}
    assert len({sharded.status.configuration, replicated.status.configuration,
                both.status.configuration}) == 3
    assert await proxy_mounts(k8s) == both.status.configuration


async def test_a_recreated_backend_with_a_new_address_rolls_the_proxy(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=3)))
    before = await wait_for(Memcached, "m", serving(3), timeout=TIMEOUT)
    old_ip = present((await k8s.get(Pod, "m-memcached-1")).status).pod_ip
    old_uid = (await k8s.get(Pod, "m-memcached-1")).metadata.uid

    await k8s.delete(Pod, "m-memcached-1")
    recreated = await wait_for(Pod, "m-memcached-1", lambda p: p.metadata.uid != old_uid
                               and p.status is not None and p.status.pod_ip, timeout=TIMEOUT)
    new_ip = recreated.status.pod_ip
    assert new_ip != old_ip
    after = await wait_for(Memcached, "m", lambda m: serving(3)(m) and
                           f"{new_ip}:11211" in m.status.backends, timeout=TIMEOUT)

    assert after.status.backends[1] == f"{new_ip}:11211"
    assert f"{old_ip}:11211" not in after.status.backends
    assert after.status.configuration != before.status.configuration
    assert await proxy_mounts(k8s) == after.status.configuration
    proxies = [p for p in (await k8s.list(Pod, label_selector=f"{objects.NAME}=mcrouter")).items
               if not p.metadata.deletion_timestamp]
    assert proxies and all(
        present(present(present(p.spec).volumes)[0].config_map).name
        == after.status.configuration for p in proxies)


async def test_a_container_restart_verifies_the_configuration_without_duplicating_it(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=2)))
    before = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    kept = await k8s.get(ConfigMap, before.status.configuration)
    pod = await k8s.get(Pod, "m-memcached-0")
    restarts = _restarts(pod)

    await restart_container(k8s, pod, "memcached")
    await wait_for(Pod, "m-memcached-0", lambda p: _restarts(p) > restarts, timeout=TIMEOUT)

    async def settled() -> Memcached:
        mc = await k8s.get(Memcached, "m")
        assert serving(2)(mc)
        # same pod, same address: the same configuration, the one ConfigMap kept for it
        assert mc.status.configuration == before.status.configuration
        names = await config_maps(k8s)
        assert names == sorted(n for n in {mc.status.configuration,
                                             mc.status.previous_configuration} if n)
        return mc

    await wait_for(settled, timeout=TIMEOUT)
    assert (await k8s.get(ConfigMap, before.status.configuration)).metadata.uid == \
        kept.metadata.uid
    contents = [present((await k8s.get(ConfigMap, n)).data)["config.json"]
                for n in await config_maps(k8s)]
    assert len(contents) == len(set(contents))


def _restarts(pod: Pod) -> int:
    return sum(c.restart_count or 0 for c in (present(pod.status).container_statuses or ()))


async def restart_container(k8s: Client, pod: Pod, container: str) -> None:
    """Ask the simulated kubelet to restart one container of ``pod``, as a crash would
    (it removes the annotation once done)."""
    await k8s.patch(Pod, str(pod.metadata.name), {"metadata": {"annotations": {
        "sim.setpoint.dev/restart": container}}})


async def test_a_node_selector_no_node_matches_says_why_in_the_conditions(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(
        replicas=2, node_selector={"example.com/pool": "nowhere"})))

    def unschedulable(mc: Memcached) -> bool:
        degraded = mc.status.get_condition("Degraded")
        return degraded is not None and degraded.status == "True" \
            and degraded.reason == "Unschedulable"

    mc = await wait_for(Memcached, "m", unschedulable, timeout=TIMEOUT)
    degraded = mc.status.get_condition("Degraded")
    assert degraded.message.startswith("pod m-mcrouter-") or \
        degraded.message.startswith("pod m-memcached-")
    assert "node(s) didn't match Pod's node affinity/selector" in degraded.message
    available = mc.status.get_condition("Available")
    assert (available.status, available.reason) == ("False", "NoBackendReady")
    assert mc.status.backends == []
    for pod in (await k8s.list(Pod)).items:
        assert present(pod.spec).node_selector == {"example.com/pool": "nowhere"}


async def test_requests_equal_to_limits_give_every_pod_the_guaranteed_class(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    same = {"cpu": "100m", "memory": "128Mi"}
    await k8s.create(Memcached(name="m", spec=MemcachedSpec.model_validate(
        {"replicas": 2, "resources": {"requests": same, "limits": same}})))
    await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)

    pods = (await k8s.list(Pod, label_selector=f"{objects.INSTANCE}=m")).items
    assert {present(p.metadata.labels)[objects.NAME] for p in pods} == {"memcached", "mcrouter"}
    for pod in pods:
        assert present(pod.status).qos_class == "Guaranteed", pod.metadata.name
        for container in present(present(pod.spec).containers):
            resources = present(container.resources)
            assert resources.requests == resources.limits == same


async def test_deleting_a_memcached_leaves_nothing_behind(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=2)))
    await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)

    await k8s.delete(Memcached, "m")

    async def nothing_left() -> bool:
        left = [o.metadata.name for kind in (StatefulSet, Deployment, Service, ConfigMap, Pod)
                for o in (await k8s.list(kind, label_selector=f"{objects.INSTANCE}=m")).items]
        assert left == [], left
        return True

    await wait_for(Memcached, "m", gone=True, timeout=TIMEOUT)
    await wait_for(nothing_left, timeout=TIMEOUT)


async def test_an_operator_killed_mid_way_converges_without_duplicates(
        k8s: Client, cluster: SetpointCluster, run_manager: Any, wait_for: Waiter,
        faults: Faults) -> None:
    runner = await run_manager(manager, leader_election=False, http_port=None)
    # the proxy Deployment never gets written: the crash lands after the configuration
    stuck = faults.latency(60, verb="patch", resource="deployments")
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=3)))
    await wait_for(lambda: _has(runner, StatefulSet) and _has(runner, ConfigMap))
    await runner.crash()
    stuck.remove()
    await k8s.patch(Memcached, "m", {"spec": {"replicas": 2}})

    await runner.restart()
    mc = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    assert runner.starts == 2
    assert [s.metadata.name for s in (await k8s.list(StatefulSet)).items] == ["m-memcached"]
    assert [d.metadata.name for d in (await k8s.list(Deployment)).items] == ["m-mcrouter"]
    assert sorted(present(s.metadata.name) for s in (await k8s.list(
        Service, label_selector=f"{objects.INSTANCE}=m")).items) == ["m", "m-memcached"]
    names = await config_maps(k8s)
    assert mc.status.configuration in names and len(names) <= 2
    assert len(await backend_pods(k8s)) == 2


def _has(runner: OperatorRunner, kind: Any) -> bool:
    assert runner.manager is not None
    return any(o.metadata.labels and o.metadata.labels.get(objects.INSTANCE) == "m"
               for o in runner.manager.cache.list(kind))


async def test_a_configuration_changed_behind_its_back_is_written_again(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=2)))
    mc = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    name = str(mc.status.configuration)
    good = (await k8s.get(ConfigMap, name)).data
    await operator.stop()
    await k8s.delete(ConfigMap, name)
    await wait_for(ConfigMap, name, gone=True)
    # immutable too: only deleting it and writing it again can fix it
    impostor = await k8s.create(ConfigMap(name=name, immutable=True,
                                          data={"config.json": '{"route": "NullRoute"}'}))

    await operator.start()
    fixed = await wait_for(ConfigMap, name, lambda cm: cm.data == good, timeout=TIMEOUT)
    assert fixed.immutable is True
    assert fixed.metadata.uid != impostor.metadata.uid
    assert fixed.metadata.owner_references[0].name == "m"
