"""Hand-written Endpoints of a selectorless Service are mirrored into EndpointSlices, as
kube-controller-manager's pkg/controller/endpointslicemirroring does
(endpointslicemirroring_controller.go syncEndpoints, reconciler.go, utils.go
newEndpointSlice/addressToEndpoint/epPortsToEpsPorts)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads.controllers import endpoints, endpointslicemirroring
from setpoint.workloads.settings import WorkloadSettings
from tests.cluster.test_service_ips import installed
from tests.waiting import quiet_period, wait_for
from tests.workloads.test_endpoints import NS, service, slices_of

SERVICE = Kind("v1", "Service")
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"


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
    endpointslicemirroring.install(manager, WorkloadSettings())
    async with manager.running():
        yield manager


def selectorless(name: str) -> dict[str, Any]:
    body = service(name, ports=[{"name": "pg", "port": 5432}])
    body["spec"].pop("selector")
    return body


def manual_endpoints(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": NS, "labels": {"tier": "db", **labels},
                         "annotations": {
                             "note": "external",
                             "endpoints.kubernetes.io/last-change-trigger-time":
                                 "2024-01-01T00:00:00Z"}},
            "subsets": [{"addresses": [{"ip": "192.0.2.10", "hostname": "db-0"}],
                         "notReadyAddresses": [{"ip": "192.0.2.11"}],
                         "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}]}


@pytest.mark.usefixtures("controllers")
async def test_selectorless_service_endpoints_are_mirrored(
        client: Client) -> None:
    await client.create(selectorless("db"))
    eps = await client.create(manual_endpoints("db"))
    [mirrored] = await wait_for(lambda: slices_of(client, "db"))
    m = mirrored["metadata"]
    assert m["generateName"] == "db-"
    assert m["labels"] == {"tier": "db", "kubernetes.io/service-name": "db",
                           MANAGED_BY: "endpointslicemirroring-controller.k8s.io"}
    assert m["annotations"] == {"note": "external"}
    assert m["ownerReferences"] == [{"apiVersion": "v1", "kind": "Endpoints", "name": "db",
                                     "uid": eps["metadata"]["uid"], "controller": True,
                                     "blockOwnerDeletion": True}]
    assert mirrored["addressType"] == "IPv4"
    assert mirrored["ports"] == [{"name": "pg", "port": 5432, "protocol": "TCP"}]
    assert mirrored["endpoints"] == [
        {"addresses": ["192.0.2.10"], "conditions": {"ready": True}, "hostname": "db-0"},
        {"addresses": ["192.0.2.11"], "conditions": {"ready": False}}]

    # an update of the Endpoints follows; a selector on the Service ends the mirroring
    eps["subsets"][0].pop("notReadyAddresses")
    await client.update(eps)
    await wait_for(lambda: _endpoint_count(client, "db", 1))
    await client.patch(SERVICE, "db", {"spec": {"selector": {"app": "db"}}}, namespace=NS)
    await wait_for(lambda: _no_mirrored(client, "db"))


async def _endpoint_count(client: Client, name: str, n: int) -> bool:
    slices = [s for s in await slices_of(client, name)
              if s["metadata"]["labels"].get(MANAGED_BY)
              == "endpointslicemirroring-controller.k8s.io"]
    return len(slices) == 1 and len(slices[0].get("endpoints") or []) == n


async def _no_mirrored(client: Client, name: str) -> bool:
    return not [s for s in await slices_of(client, name)
                if s["metadata"]["labels"].get(MANAGED_BY)
                == "endpointslicemirroring-controller.k8s.io"]


@pytest.mark.usefixtures("controllers")
async def test_skip_mirror_and_services_with_selectors_are_not_mirrored(
        client: Client) -> None:
    await client.create(selectorless("skipped"))
    await client.create(manual_endpoints(
        "skipped", **{"endpointslice.kubernetes.io/skip-mirror": "true"}))
    await client.create(selectorless("nosvc-probe"))
    await client.create(manual_endpoints("orphan"))  # no Service of that name
    await client.create(manual_endpoints("nosvc-probe"))
    await wait_for(lambda: slices_of(client, "nosvc-probe"))  # the controller has caught up
    await quiet_period()
    assert await slices_of(client, "skipped") == []
    assert await slices_of(client, "orphan") == []


@pytest.mark.usefixtures("controllers")
async def test_addresses_are_typed_by_the_sloppy_parse_and_mirrored_as_written(
        client: Client) -> None:
    """Rule: an Endpoints address's family is that of ``netutils.ParseIPSloppy`` and Go's
    ``ip.To4() != nil``: an IPv4 address with leading zeros and an IPv4-mapped IPv6 address
    both land in the IPv4 slice, each copied as written, not restringified.
    Source: pkg/controller/endpointslicemirroring/utils.go getAddressType
    (``netutils.ParseIPSloppy(address)``, ``ip.To4() == nil`` for IPv6) and addressToEndpoint
    (``Addresses: []string{address.IP}``)."""
    await client.create(selectorless("sloppy"))
    body = manual_endpoints("sloppy")
    body["subsets"] = [{"addresses": [{"ip": "192.0.2.010"}, {"ip": "::ffff:192.0.2.12"},
                                      {"ip": "2001:db8::1"}],
                        "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}]
    await client.create(body)

    async def both_families() -> list[dict[str, Any]] | None:
        found = await slices_of(client, "sloppy")
        return found if len(found) == 2 else None

    found = await wait_for(both_families)
    by_type = {s["addressType"]: [e["addresses"] for e in s["endpoints"]] for s in found}
    assert by_type == {"IPv4": [["192.0.2.010"], ["::ffff:192.0.2.12"]],
                       "IPv6": [["2001:db8::1"]]}
