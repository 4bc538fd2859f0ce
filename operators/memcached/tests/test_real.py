"""The memcached operator on the process runtime: its pods run memcached and the mcrouter
stand-in (setpoint/workloads/kubelet/process/mcrouter.py) routes real requests as the
generated configuration says, reached through the proxy Service's ClusterIP."""

from __future__ import annotations

import shutil

import pytest

from operators.memcached import objects
from operators.memcached.mcclient import MemcacheClient
from operators.memcached.resource import Memcached, MemcachedSpec, ProxySpec
from operators.memcached.tests.test_operator import backend_pods, serving
from setpoint.client import Client, Kind
from setpoint.resources.models.core_v1 import Pod, Service
from setpoint.testing import OperatorRunner, kill_container_process, present
from setpoint.testing.plugin import Waiter
from setpoint.testing.waiting import wait_for as wait_until
from setpoint.workloads.kubelet.process.mcrouter import furc_hash

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(180)]
TIMEOUT = 90.0
ENDPOINT_SLICE = Kind("discovery.k8s.io/v1", "EndpointSlice")
HOLD = "test.setpoint.dev/hold"
PROXY = ProxySpec(readiness_period_seconds=1)
"""Every configuration rollout waits for a new proxy pod's first passing readiness probe,
and the mcrouter stand-in is not listening yet at the probe its start triggers: with the
default period (5 s) each rollout would wait that long for the next one."""


@pytest.fixture(autouse=True)
def _memcached_installed() -> None:
    if shutil.which("memcached") is None:
        pytest.skip("memcached is not installed: apt-get update && apt-get install -y "
                    "memcached")


async def proxy_address(k8s: Client, mc: Memcached) -> str:
    """The proxy Service's ClusterIP, once its only ready endpoint is a proxy pod that
    mounts the Memcached's current configuration (the rollout is over)."""
    service = await k8s.get(Service, "m")

    async def rolled() -> bool:
        pods = {p.status.pod_ip for p in (await k8s.list(
            Pod, label_selector=f"{objects.NAME}=mcrouter,{objects.INSTANCE}=m")).items
            if p.status and p.status.pod_ip and not p.metadata.deletion_timestamp
            and (p.metadata.annotations or {}).get(objects.CONFIG_ANNOTATION)
            == mc.status.configuration}
        slices = (await k8s.list(ENDPOINT_SLICE, label_selector="kubernetes.io/service-name=m"
                                 )).items
        ready = {a for s in slices for e in s.get("endpoints") or ()
                 if (e.get("conditions") or {}).get("ready") for a in e["addresses"]}
        return bool(ready) and ready <= pods

    await wait_until(rolled, timeout=TIMEOUT, message="the proxy rolled out")
    return str(present(service.spec).cluster_ip)


async def items_per_backend(k8s: Client) -> list[int]:
    counts = []
    for pod in await backend_pods(k8s):
        async with MemcacheClient(str(present(pod.status).pod_ip)) as backend:
            counts.append(await backend.items())
    return counts


async def test_sharded_keys_spread_over_the_shards_by_ch3_and_a_new_shard_gets_keys(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=2, proxy=PROXY)))
    mc = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    keys = [f"key-{i}" for i in range(60)]
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in keys:
            assert await proxy.set(key, f"value of {key}") == "STORED"
        for key in keys:
            assert await proxy.get(key) == f"value of {key}"
    # each key is on the backend mcrouter's Ch3 (furc_hash) picks, nowhere else
    pods = await backend_pods(k8s)
    for key in keys[:10]:
        owner = furc_hash(key.encode(), 2)
        for index, pod in enumerate(pods):
            async with MemcacheClient(str(present(pod.status).pod_ip)) as backend:
                found = await backend.get(key)
            assert (found is not None) == (index == owner), (key, index)
    assert all(count > 0 for count in await items_per_backend(k8s))

    # scale up: once the configuration rolls, the new backend receives its share
    await k8s.patch(Memcached, "m", {"spec": {"replicas": 3}})
    mc = await wait_for(Memcached, "m", serving(3), timeout=TIMEOUT)
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in (f"new-{i}" for i in range(60)):
            assert await proxy.set(key, "v") == "STORED"
    assert (await items_per_backend(k8s))[2] > 0


async def test_replicated_keys_survive_a_killed_replica(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """Writes go to every replica (AllSyncRoute), so every replica holds every key. A
    replica is killed (its pod deleted; a finalizer holds the pod so that no empty
    replacement takes its name): once the operator routes around it, every key is still
    read through the proxy."""
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(
        replicas=2, topology="replicated", proxy=PROXY)))
    mc = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    keys = [f"key-{i}" for i in range(30)]
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in keys:
            assert await proxy.set(key, key) == "STORED"
    assert await items_per_backend(k8s) == [30, 30]

    victim, survivor = await backend_pods(k8s)
    await k8s.patch(Pod, present(victim.metadata.name), {"metadata": {"finalizers": [HOLD]}})
    await k8s.delete(Pod, present(victim.metadata.name))

    async def gone() -> bool:
        try:
            async with MemcacheClient(str(present(victim.status).pod_ip), timeout=1.0) as dead:
                await dead.items()
        except (OSError, TimeoutError, EOFError):
            return True
        return False

    await wait_until(gone, timeout=TIMEOUT, message="the replica's memcached is dead")
    try:
        # the operator drops the dead replica from the routes and the proxies roll
        mc = await wait_for(Memcached, "m", lambda m: m.status.backends == [
            f"{present(survivor.status).pod_ip}:11211"], timeout=TIMEOUT)
        async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
            for key in keys:
                assert await proxy.get(key) == key
    finally:
        await k8s.patch(Pod, present(victim.metadata.name), {"metadata": {"finalizers": None}})


def restarts(pod: Pod) -> int:
    return sum(c.restart_count or 0 for c in present(pod.status).container_statuses or ())


async def test_a_killed_memcached_restarts_empty_and_the_pool_serves_through_scale_down(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """A backend's memcached killed with ``kill -9`` behind the kubelet's back is restarted
    in place (same pod, same address: the routes need not change) and comes back empty, as
    memcached keeps nothing across a restart; every key set through the proxy afterwards
    is read back. Scaled from 3 to 2, the configuration drops the removed backend and every
    key set then lands on the two left."""
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=3, proxy=PROXY)))
    mc = await wait_for(Memcached, "m", serving(3), timeout=TIMEOUT)
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in (f"key-{i}" for i in range(60)):
            assert await proxy.set(key, key) == "STORED"
    victim = (await backend_pods(k8s))[1]
    assert (await items_per_backend(k8s))[1] > 0

    kill_container_process(str(present(victim.status).pod_ip), "memcached")
    await wait_for(Pod, present(victim.metadata.name),
                   lambda p: restarts(p) > restarts(victim) and p.status is not None
                   and p.status.pod_ip == present(victim.status).pod_ip
                   and all(c.ready for c in p.status.container_statuses or ()),
                   timeout=TIMEOUT)
    mc = await wait_for(Memcached, "m", serving(3), timeout=TIMEOUT)
    assert (await items_per_backend(k8s))[1] == 0  # a restarted memcached is empty
    keys = [f"again-{i}" for i in range(60)]
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in keys:
            assert await proxy.set(key, key) == "STORED"
        for key in keys:
            assert await proxy.get(key) == key
    assert (await items_per_backend(k8s))[1] > 0

    await k8s.patch(Memcached, "m", {"spec": {"replicas": 2}})
    mc = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    pods = await backend_pods(k8s)
    assert [f"{present(p.status).pod_ip}:11211" for p in pods] == mc.status.backends
    before = await items_per_backend(k8s)
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in (f"after-{i}" for i in range(60)):
            assert await proxy.set(key, key) == "STORED"
            assert await proxy.get(key) == key
    assert sum(await items_per_backend(k8s)) == sum(before) + 60


async def test_a_deleted_backend_pod_is_replaced_and_the_routes_follow_its_new_address(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """A sharded backend's pod deleted outright: the operator makes it again, its new pod
    gets a new address, and the configuration the proxies route by names the new one,
    so every key set afterwards is read back through the proxy."""
    await k8s.create(Memcached(name="m", spec=MemcachedSpec(replicas=2, proxy=PROXY)))
    mc = await wait_for(Memcached, "m", serving(2), timeout=TIMEOUT)
    victim = (await backend_pods(k8s))[0]
    await k8s.delete(Pod, present(victim.metadata.name))

    def replaced(m: Memcached) -> bool:
        return serving(2)(m) and f"{present(victim.status).pod_ip}:11211" not in (
            m.status.backends or ()) and m.status.configuration != mc.status.configuration

    mc = await wait_for(Memcached, "m", replaced, timeout=TIMEOUT)
    pods = await backend_pods(k8s)
    assert pods[0].metadata.uid != victim.metadata.uid
    assert [f"{present(p.status).pod_ip}:11211" for p in pods] == mc.status.backends
    keys = [f"key-{i}" for i in range(40)]
    async with MemcacheClient(await proxy_address(k8s, mc)) as proxy:
        for key in keys:
            assert await proxy.set(key, key) == "STORED"
        for key in keys:
            assert await proxy.get(key) == key
    assert all(count > 0 for count in await items_per_backend(k8s))
