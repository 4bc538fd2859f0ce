"""ClusterIPs and NodePorts: allocated on create, checked when requested, freed on delete."""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from setpoint.cluster import RunningCluster, serve
from setpoint.cluster.admission.services import ServiceAllocation
from tests.cluster.conftest import API

SVC = "/api/v1/namespaces/default/services"


def installed(cluster: RunningCluster) -> ServiceAllocation:
    """The server's allocator (installed here until the admission chain lists it)."""
    for plugin in cluster.api.rest.storage_admission:
        if isinstance(plugin, ServiceAllocation):
            return plugin
    plugin = ServiceAllocation(cluster.api.store)
    cluster.api.rest.storage_admission.append(plugin)
    return plugin


@pytest.fixture
def allocator(cluster: RunningCluster) -> ServiceAllocation:
    return installed(cluster)


def service(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, **spec}}


async def test_create_allocates_a_cluster_ip_from_the_upper_band(
        api: API, allocator: ServiceAllocation) -> None:
    status, svc = await api.post(SVC, service("web"))
    assert status == 201, svc
    ip = svc["spec"]["clusterIP"]
    assert svc["spec"]["clusterIPs"] == [ip]
    addr = ipaddress.ip_address(ip)
    assert addr in ipaddress.ip_network("10.96.0.0/12")
    # the first 256 addresses are kept for requested IPs while the upper band has room
    assert int(addr) - int(ipaddress.ip_address("10.96.0.1")) >= 256
    assert allocator.ip_in_use(ip)


async def test_requested_ip_is_kept_and_a_taken_one_is_refused(
        api: API, allocator: ServiceAllocation) -> None:
    status, svc = await api.post(SVC, service("a", clusterIP="10.96.0.10"))
    assert status == 201 and svc["spec"]["clusterIPs"] == ["10.96.0.10"]
    status, err = await api.post(SVC, service("b", clusterIP="10.96.0.10"))
    assert status == 422
    assert err["message"] == ('Service "b" is invalid: spec.clusterIPs: Invalid value: '
                              '[]string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: '
                              "provided IP is already allocated")
    assert err["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.clusterIPs",
        "message": 'Invalid value: []string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: '
                   "provided IP is already allocated"}]


async def test_ip_outside_the_range_is_refused(api: API, allocator: ServiceAllocation) -> None:
    status, err = await api.post(SVC, service("far", clusterIP="192.168.1.1"))
    assert status == 422
    assert err["message"].endswith(
        "failed to allocate IP 192.168.1.1: provided IP is not in the valid range. "
        "The range of valid IPs is 10.96.0.0/12")
    # the network and broadcast addresses are not in the usable range either
    status, _ = await api.post(SVC, service("net", clusterIP="10.96.0.0"))
    assert status == 422


async def test_delete_frees_the_ip(api: API, allocator: ServiceAllocation) -> None:
    await api.post(SVC, service("a", clusterIP="10.96.0.20"))
    status, _ = await api.delete(f"{SVC}/a")
    assert status == 200
    assert not allocator.ip_in_use("10.96.0.20")
    status, svc = await api.post(SVC, service("b", clusterIP="10.96.0.20"))
    assert status == 201, svc


async def test_dry_run_and_failed_creates_hold_nothing(
        api: API, allocator: ServiceAllocation) -> None:
    status, svc = await api.post(SVC + "?dryRun=All", service("dry", clusterIP="10.96.0.30"))
    assert status == 201 and svc["spec"]["clusterIP"] == "10.96.0.30"
    assert not allocator.ip_in_use("10.96.0.30")
    bad = service("bad", clusterIP="10.96.0.31", ports=[{"port": 99999}])
    status, _ = await api.post(SVC, bad)
    assert status == 422
    assert not allocator.ip_in_use("10.96.0.31")


async def test_update_without_cluster_ip_keeps_it(api: API, allocator: ServiceAllocation) -> None:
    _, svc = await api.post(SVC, service("keep"))
    ip = svc["spec"]["clusterIP"]
    svc["spec"].pop("clusterIP")
    svc["spec"].pop("clusterIPs")
    svc["spec"]["ports"] = [{"port": 8080}]
    status, updated = await api.put(f"{SVC}/keep", svc)
    assert status == 200, updated
    assert updated["spec"]["clusterIP"] == ip and updated["spec"]["clusterIPs"] == [ip]


async def test_headless_and_external_name_get_no_ip(
        api: API, allocator: ServiceAllocation) -> None:
    _, headless = await api.post(SVC, service("h", clusterIP="None"))
    assert headless["spec"]["clusterIPs"] == ["None"]
    ext = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
           "spec": {"type": "ExternalName", "externalName": "example.com"}}
    status, svc = await api.post(SVC, ext)
    assert status == 201, svc
    assert "clusterIP" not in svc["spec"]


async def test_node_ports_are_allocated_shared_across_protocols_and_checked(
        api: API, allocator: ServiceAllocation) -> None:
    ports = [{"name": "dns", "port": 53, "protocol": "UDP"},
             {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
             {"name": "http", "port": 80}]
    status, svc = await api.post(SVC, service("np", type="NodePort", ports=ports))
    assert status == 201, svc
    got = [p["nodePort"] for p in svc["spec"]["ports"]]
    assert all(30000 <= p <= 32767 for p in got)
    assert got[0] == got[1] != got[2]
    status, err = await api.post(SVC, service("np2", type="NodePort",
                                              ports=[{"port": 80, "nodePort": got[2]}]))
    assert status == 422
    assert err["message"] == (f'Service "np2" is invalid: spec.ports[0].nodePort: Invalid '
                              f"value: {got[2]}: provided port is already allocated")
    status, err = await api.post(SVC, service("np3", type="NodePort",
                                              ports=[{"port": 80, "nodePort": 8080}]))
    assert status == 422
    assert err["message"].endswith(
        "Invalid value: 8080: provided port is not in the valid range. The range of valid "
        "ports is 30000-32767")


async def test_type_change_to_cluster_ip_drops_node_ports(
        api: API, allocator: ServiceAllocation) -> None:
    _, svc = await api.post(SVC, service("t", type="NodePort"))
    port = svc["spec"]["ports"][0]["nodePort"]
    svc["spec"]["type"] = "ClusterIP"
    status, updated = await api.put(f"{SVC}/t", svc)
    assert status == 200, updated
    assert "nodePort" not in updated["spec"]["ports"][0]
    assert not allocator.port_in_use(port)


async def test_allocations_are_rebuilt_from_storage(tmp_path: Path) -> None:
    async with serve(tmp_path) as first:
        installed(first)

        headers = {"Authorization": f"Bearer {first.token}"}
        async with ClientSession(headers=headers) as session:
            status, _ = await API(first, session).post(SVC, service("p", clusterIP="10.96.0.40"))
            assert status == 201
    async with serve(tmp_path) as second:
        allocator = installed(second)
        assert allocator.ip_in_use("10.96.0.40")


def test_the_dynamic_choice_falls_back_to_the_lower_band() -> None:
    from setpoint.cluster.admission.services import _Band

    band = _Band(size=20, offset=16, used={16, 17, 18, 19})
    assert band.next_free(random.Random(1)) in range(16)
    band.used |= set(range(16))
    assert band.next_free(random.Random(1)) is None


async def test_changing_the_cluster_ip_is_refused_by_validation(
        api: API, allocator: ServiceAllocation) -> None:
    _, svc = await api.post(SVC, service("fixed"))
    svc["spec"]["clusterIP"] = "10.96.0.50"
    svc["spec"]["clusterIPs"] = ["10.96.0.50"]
    status, err = await api.put(f"{SVC}/fixed", svc)
    assert status == 422
    assert "may not change once set" in err["message"]
    assert not allocator.ip_in_use("10.96.0.50")
