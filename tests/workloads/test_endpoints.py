"""Endpoints and EndpointSlices follow the pods a Service selects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Manager, ManagerSettings, Request
from setpoint.workloads.controllers import endpoints
from setpoint.workloads.settings import WorkloadSettings
from tests.cluster.test_service_ips import installed
from tests.waiting import wait_for

POD = Kind("v1", "Pod")
SERVICE = Kind("v1", "Service")
NODE = Kind("v1", "Node")
ENDPOINTS = Kind("v1", "Endpoints")
SLICE = Kind("discovery.k8s.io/v1", "EndpointSlice")
NS = "default"


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        installed(running)
        yield running


@pytest.fixture
async def client(cluster: RunningCluster) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(cluster.kubeconfig)) as c:
        yield c


@pytest.fixture
async def controllers(cluster: RunningCluster) -> AsyncIterator[Manager]:
    manager = Manager(settings=ManagerSettings(name="kube-controller-manager",
                                               graceful_shutdown_timeout=2.0),
                      config=load_kubeconfig(cluster.kubeconfig))
    endpoints.install(manager, WorkloadSettings())
    async with manager.running():
        yield manager


def pod(name: str, app: str = "web", ports: list[dict[str, Any]] | None = None,
        **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx",
                 "ports": ports or [{"name": "http", "containerPort": 8080}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
            "spec": {"containers": [container], **spec}}


async def run_pod(client: Client, name: str, ip: str, *, ready: bool = True,
                  node: str = "node-1", **spec: Any) -> dict[str, Any]:
    """Create a pod and give it the status a kubelet would: Running, an IP, Ready."""
    await client.create(pod(name, nodeName=node, **spec))
    status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "10.0.0.1",
              "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                              "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    result: dict[str, Any] = await client.patch_status(POD, name, {"status": status},
                                                       namespace=NS)
    return result


def service(name: str = "web", **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"name": "http", "port": 80, "targetPort": "http"}])
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NS, "labels": {"tier": "front"}},
            "spec": {"selector": {"app": "web"}, **spec}}


async def endpoints_of(client: Client, name: str = "web") -> dict[str, Any] | None:
    try:
        result: dict[str, Any] = await client.get(ENDPOINTS, name, namespace=NS)
        return result
    except Exception:
        return None


async def slices_of(client: Client, name: str = "web") -> list[dict[str, Any]]:
    return list((await client.list(
        SLICE, namespace=NS, label_selector=f"kubernetes.io/service-name={name}")).items)


@pytest.mark.usefixtures("controllers")
async def test_ready_and_not_ready_pods_fill_addresses_and_not_ready_addresses(
        client: Client) -> None:
    await client.create({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": "node-1",
                                      "labels": {"topology.kubernetes.io/zone": "zone-a"}}})
    await run_pod(client, "web-1", "10.244.0.5")
    await run_pod(client, "web-2", "10.244.0.6", ready=False)
    await client.create(service())

    async def settled() -> Any:
        ep = await endpoints_of(client)
        return ep if ep and ep.get("subsets") and len(
            ep["subsets"][0].get("addresses") or []) == 1 and ep["subsets"][0].get(
            "notReadyAddresses") else None

    ep = await wait_for(settled)
    subset = ep["subsets"][0]
    web1 = await client.get(POD, "web-1", namespace=NS)
    assert subset["addresses"] == [{
        "ip": "10.244.0.5", "nodeName": "node-1",
        "targetRef": {"kind": "Pod", "namespace": NS, "name": "web-1",
                      "uid": web1["metadata"]["uid"]}}]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.244.0.6"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert ep["metadata"]["labels"] == {"tier": "front"}
    assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]

    slices = await wait_for(lambda: slices_of(client))
    assert len(slices) == 1
    s = slices[0]
    assert s["metadata"]["name"].startswith("web-")
    assert s["metadata"]["labels"] == {
        "tier": "front", "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    assert s["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert s["addressType"] == "IPv4"
    assert s["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    by_ip = {e["addresses"][0]: e for e in s["endpoints"]}
    assert by_ip["10.244.0.5"]["conditions"] == {"ready": True, "serving": True,
                                                 "terminating": False}
    assert by_ip["10.244.0.6"]["conditions"] == {"ready": False, "serving": False,
                                                 "terminating": False}
    assert by_ip["10.244.0.5"]["nodeName"] == "node-1"
    assert by_ip["10.244.0.5"]["zone"] == "zone-a"
    assert by_ip["10.244.0.5"]["targetRef"]["name"] == "web-1"


@pytest.mark.usefixtures("controllers")
async def test_endpoints_follow_readiness_and_deletion(client: Client) -> None:
    await client.create(service(ports=[{"port": 80, "targetPort": 9090}]))
    await run_pod(client, "web-1", "10.244.0.5", ready=False)

    async def ready_ips() -> list[str]:
        ep = await endpoints_of(client)
        return [a["ip"] for s in (ep or {}).get("subsets") or [] for a in s.get("addresses") or []]

    await wait_for(lambda: endpoints_of(client))
    assert await ready_ips() == []
    await client.patch_status(POD, "web-1", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}, namespace=NS)
    await wait_for(lambda: _eq(ready_ips(), ["10.244.0.5"]))
    ep = await endpoints_of(client)
    assert ep is not None
    assert ep["subsets"][0]["ports"] == [{"port": 9090, "protocol": "TCP"}]
    await client.delete(POD, "web-1", namespace=NS, grace_period_seconds=0)
    await wait_for(lambda: _eq(ready_ips(), []))
    await wait_for(lambda: _placeholder(client))


async def _eq(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _placeholder(client: Client) -> bool:
    slices = await slices_of(client)
    return len(slices) == 1 and not slices[0].get("endpoints")


@pytest.mark.usefixtures("controllers")
async def test_headless_service_publishes_hostnames_and_gets_the_headless_label(
        client: Client) -> None:
    await run_pod(client, "web-0", "10.244.0.9", hostname="web-0", subdomain="web")
    await client.create(service(clusterIP="None"))

    async def addresses() -> Any:
        ep = await endpoints_of(client)
        return ep if ep and ep.get("subsets") else None

    ep = await wait_for(addresses)
    assert ep["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    assert ep["subsets"][0]["addresses"][0]["hostname"] == "web-0"
    slices = await wait_for(lambda: slices_of(client))
    assert slices[0]["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    assert slices[0]["endpoints"][0]["hostname"] == "web-0"


@pytest.mark.usefixtures("controllers")
async def test_deleting_the_service_removes_its_endpoints(client: Client) -> None:
    await client.create(service())
    await wait_for(lambda: endpoints_of(client))
    await client.delete(SERVICE, "web", namespace=NS)

    async def gone() -> bool:
        return await endpoints_of(client) is None

    await wait_for(gone)


@pytest.mark.usefixtures("controllers")
async def test_services_without_selector_are_left_alone(client: Client) -> None:
    body = service()
    body["spec"].pop("selector")
    await client.create(body)
    await client.create(service("probe"))
    await wait_for(lambda: endpoints_of(client, "probe"))  # the controller has caught up
    assert await endpoints_of(client) is None
    assert await slices_of(client) == []


def test_named_target_ports_resolve_per_protocol() -> None:
    p = pod("x", ports=[{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                        {"name": "dns", "containerPort": 5353, "protocol": "TCP"}])
    assert endpoints.find_port(p, {"port": 53, "targetPort": "dns", "protocol": "TCP"}) == 5353
    assert endpoints.find_port(p, {"port": 53, "targetPort": "dns", "protocol": "UDP"}) == 53
    assert endpoints.find_port(p, {"port": 53, "targetPort": "nope", "protocol": "UDP"}) is None


def test_more_than_a_thousand_addresses_are_truncated_ready_first() -> None:
    subsets = [{"addresses": [{"ip": f"a{i}"} for i in range(900)],
                "notReadyAddresses": [{"ip": f"n{i}"} for i in range(300)]}]
    assert endpoints.truncate(subsets)
    assert len(subsets[0]["addresses"]) == 900
    assert len(subsets[0]["notReadyAddresses"]) == 100


def test_a_pods_change_concerns_services_only_when_an_endpoint_would_show_it() -> None:
    """``GetServicesToUpdateOnPodChange`` (k8s.io/endpointslice utils.go, with
    ``podEndpointsChanged`` and ``determineNeededServiceUpdates``): a pod's binding or a
    status write that leaves its readiness and IPs alone syncs no Service; a readiness,
    IP or deletion change syncs those selecting it; a label change alone only the Services
    it joined or left; both, every Service of either version."""
    selecting = {"web": ["web", "all"], "api": ["api", "all"]}

    class Selecting(endpoints.PodServices):
        def requests(self, obj: dict[str, Any]) -> list[Request]:
            app = obj["metadata"]["labels"]["app"]
            return [Request(NS, name) for name in selecting[app]]

    handler = Selecting(manager=None)  # type: ignore[arg-type]

    def version(rv: str, *, app: str = "web", node: str | None = None, ip: str | None = None,
                ready: bool = False, deleting: bool = False) -> dict[str, Any]:
        p = pod("p", app)
        p["metadata"]["resourceVersion"] = rv
        if deleting:
            p["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        if node:
            p["spec"]["nodeName"] = node
        if ip:
            p["status"] = {"podIP": ip, "podIPs": [{"ip": ip}], "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}
        return p

    def names(old: dict[str, Any], new: dict[str, Any]) -> set[str]:
        return {r.name for r in handler.update_requests(old, new)}

    created, bound = version("1"), version("2", node="n1")
    running = version("3", node="n1", ip="10.0.0.5")
    ready = version("4", node="n1", ip="10.0.0.5", ready=True)
    assert names(created, bound) == set()  # the binding
    assert names(bound, bound) == set()  # a resync: the same version
    assert names(bound, running) == {"web", "all"}  # an IP
    assert names(running, ready) == {"web", "all"}  # readiness
    annotated = version("5", node="n1", ip="10.0.0.5", ready=True)
    annotated["metadata"]["annotations"] = {"note": "x"}
    assert names(ready, annotated) == set()
    relabelled = version("6", app="api", node="n1", ip="10.0.0.5", ready=True)
    assert names(ready, relabelled) == {"web", "api"}  # joined api, left web; all stays
    relabelled_unready = version("7", app="api", node="n1", ip="10.0.0.5")
    assert names(ready, relabelled_unready) == {"web", "api", "all"}
    deleting = version("8", node="n1", ip="10.0.0.5", ready=True, deleting=True)
    assert names(ready, deleting) == {"web", "all"}
