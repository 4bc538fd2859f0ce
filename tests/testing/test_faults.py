"""Fault injection through the proxy: errors, throttling, latency and dropped watches, as
an operator's client sees them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from setpoint.client import Client, InternalServerError, Kind, RetryPolicy, TooManyRequestsError
from setpoint.testing import ApiProxy, Faults, SetpointCluster
from tests.waiting import wait_for

CONFIGMAP = Kind("v1", "ConfigMap")
NO_RETRIES = RetryPolicy(max_retries=0)


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


@pytest.fixture
async def proxy(setpoint_cluster: SetpointCluster) -> ApiProxy:
    return await setpoint_cluster.proxy()


@pytest.fixture
async def proxied(setpoint_cluster: SetpointCluster,
                  proxy: ApiProxy) -> AsyncIterator[Client]:
    """A client that goes through the proxy and never retries on its own."""
    client = Client(setpoint_cluster.operator_config(), retry=NO_RETRIES)
    yield client
    await client.close()


async def test_a_failed_request_gets_the_status_and_never_reaches_the_server(
        faults: Faults, proxied: Client, k8s: Client) -> None:
    rule = faults.fail(verb="POST", resource="configmaps", status=500, times=1)

    with pytest.raises(InternalServerError) as caught:
        await proxied.create(config_map("c"))
    assert caught.value.code == 500 and caught.value.reason == "InternalError"
    assert rule.hits == 1
    assert "c" not in {cm["metadata"]["name"] for cm in (await k8s.list(CONFIGMAP)).items}
    await proxied.create(config_map("c"))  # the rule is used up


async def test_rules_match_kubernetes_verbs_resources_and_names(
        faults: Faults, proxied: Client) -> None:
    faults.fail(verb="create", resource="configmaps", name="only-this", status=503, times=None)
    await proxied.create(config_map("another"))
    await proxied.get(CONFIGMAP, "another")
    for _ in range(2):
        with pytest.raises(Exception, match="injected fault"):
            await proxied.create(config_map("only-this"))
    faults.clear()
    await proxied.create(config_map("only-this"))


async def test_throttling_answers_429_with_retry_after(
        faults: Faults, proxied: Client) -> None:
    faults.throttle(resource="configmaps", retry_after=3)
    with pytest.raises(TooManyRequestsError) as caught:
        await proxied.list(CONFIGMAP)
    assert caught.value.retry_after == 3


async def test_a_retrying_client_honours_retry_after_and_succeeds(
        setpoint_cluster: SetpointCluster, faults: Faults) -> None:
    waits: list[float] = []
    client = Client(setpoint_cluster.operator_config(), retry=RetryPolicy(max_retries=3))

    async def record(seconds: float) -> None:
        waits.append(seconds)

    client.transport.sleep = record
    rule = faults.throttle(verb="list", resource="configmaps", retry_after=2, times=2)
    try:
        await client.list(CONFIGMAP)
    finally:
        await client.close()
    assert rule.hits == 2
    assert waits == [2.0, 2.0]


async def test_latency_delays_matching_requests_only(faults: Faults, proxied: Client) -> None:
    rule = faults.latency(0.2, verb="get", resource="configmaps")
    await proxied.create(config_map("c"))
    await proxied.list(CONFIGMAP)
    assert rule.hits == 0
    started = time.perf_counter()
    await proxied.get(CONFIGMAP, "c")
    assert rule.hits == 1
    assert time.perf_counter() - started >= 0.2  # a lower bound: the delay was served


async def test_dropped_watches_end_and_can_be_resumed_without_losing_events(
        faults: Faults, proxied: Client, proxy: ApiProxy, k8s: Client) -> None:
    start = (await proxied.list(CONFIGMAP)).resource_version
    watch = proxied.watch(CONFIGMAP, resource_version=start)
    seen: list[str] = []

    async def follow() -> None:
        async with watch:
            async for event_type, obj in watch:
                if event_type == "ADDED":
                    seen.append(obj["metadata"]["name"])

    task = asyncio.create_task(follow())
    await k8s.create(config_map("before"))
    await wait_for(lambda: seen == ["before"] and proxy.open_watches)
    assert faults.drop_watches(resource="configmaps") == 1
    await asyncio.wait_for(task, 30)  # the stream ended
    await k8s.create(config_map("after"))

    resumed = proxied.watch(CONFIGMAP, resource_version=watch.resource_version)
    async with resumed:
        async for event_type, obj in resumed:
            assert (event_type, obj["metadata"]["name"]) == ("ADDED", "after")
            break


async def test_the_proxy_refuses_clients_without_its_token(proxy: ApiProxy) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(proxy.url + "/api") as resp:
        assert resp.status == 401


async def test_the_proxy_counts_requests_by_verb(proxy: ApiProxy, proxied: Client) -> None:
    await proxied.create(config_map("c"))
    await proxied.get(CONFIGMAP, "c")
    await proxied.patch(CONFIGMAP, "c", {"data": {"k": "v"}})
    assert proxy.counts.by_resource["create configmaps"] == 1
    assert proxy.counts.by_resource["get configmaps"] == 1
    assert proxy.counts.by_resource["patch configmaps"] == 1
