"""Services and cluster DNS on the process runtime: real programs reach each other through
ClusterIPs (loopback addresses a local proxy forwards, kube-proxy's role) and cluster DNS
names (a per-pod resolv.conf and hosts file, bind-mounted, and a DNS server on loopback)."""

from __future__ import annotations

import ipaddress
from typing import Any

import aiohttp
import pytest

from setpoint.client import Client, Kind
from setpoint.testing import SetpointCluster
from setpoint.testing.waiting import wait_for
from setpoint.workloads.loopbacknet import LoopbackNetwork
from tests.workloads.process.support import need

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(120)]

DEPLOYMENT = Kind("apps/v1", "Deployment")
STATEFULSET = Kind("apps/v1", "StatefulSet")
SERVICE = Kind("v1", "Service")
POD = Kind("v1", "Pod")


def need_root_namespaces() -> None:
    import os

    if os.geteuid() != 0:
        pytest.skip("cluster DNS names need the per-pod mount namespace (run as root)")


def nginx_deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                         "containers": [{
                             "name": "nginx", "image": "nginx:1.27",
                             "ports": [{"name": "http", "containerPort": 80}],
                             "readinessProbe": {"httpGet": {"path": "/", "port": "http"},
                                                "periodSeconds": 1}}]}}}}


def web_service() -> dict[str, Any]:
    # targetPort by name: the EndpointSlice carries the number each pod resolved it to
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 8080, "targetPort": "http"}]}}


async def http_get(url: str) -> str:
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as resp:
        assert resp.status == 200
        return await resp.text()


async def test_kubernetes_service_and_cluster_ips_come_from_the_loopback_range(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    """The process runtime's cluster runs with its loopback network's Service range as
    --service-cluster-ip-range (127.(64+N).0.0/16, setpoint/workloads/loopbacknet.py), and
    the ``kubernetes`` Service takes its first address as kube-apiserver's
    ``ServiceIPRange`` gives it (pkg/controlplane/services.go)."""
    network = LoopbackNetwork(setpoint_cluster.loopback_network)
    services = ipaddress.ip_network(network.services)
    kubernetes = await k8s.get(SERVICE, "kubernetes", namespace="default")
    assert kubernetes["spec"]["clusterIP"] == str(services.network_address + 1)
    created = await k8s.create(web_service())
    assert ipaddress.ip_address(created["spec"]["clusterIP"]) in services
    assert not ipaddress.ip_network("127.96.0.0/16").overlaps(services)


async def test_nginx_deployment_answers_through_its_cluster_ip_and_its_dns_name(
        setpoint_cluster: SetpointCluster, setpoint_workloads: Any, k8s: Client) -> None:
    need("nginx", "nginx-light")
    need("busybox", "busybox")
    need_root_namespaces()
    ns = setpoint_cluster.namespace
    await k8s.create(nginx_deployment(2))
    service = await k8s.create(web_service())
    cluster_ip = service["spec"]["clusterIP"]

    async def answers() -> bool:
        try:
            return "Welcome to nginx" in await http_get(f"http://{cluster_ip}:8080/")
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False

    await wait_for(answers, timeout=60, message="nginx through the ClusterIP")
    # from another pod: its resolv.conf (search <ns>.svc.cluster.local ..., ndots:5) makes
    # the short name, the namespaced one and the FQDN all reach the Service
    script = " && ".join(f"wget -q -T 5 -O - http://{name}:8080/ | grep -q 'Welcome to nginx'"
                         for name in ("web", f"web.{ns}", f"web.{ns}.svc.cluster.local"))
    await k8s.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
                      "spec": {"restartPolicy": "Never", "containers": [{
                          "name": "wget", "image": "busybox:1.36",
                          "command": ["sh", "-c", script]}]}})
    done = await wait_for(lambda: _phase(k8s, "client"), timeout=60)
    assert done == "Succeeded"

    # the endpoints follow the pods: none ready, nothing answers; back, it answers again
    await k8s.patch(DEPLOYMENT, "web", {"spec": {"replicas": 0}})
    await wait_for(lambda: _not(answers), timeout=60, message="no endpoint, no answer")
    await k8s.patch(DEPLOYMENT, "web", {"spec": {"replicas": 1}})
    await wait_for(answers, timeout=60, message="a new endpoint answers")


async def _phase(k8s: Client, name: str) -> str | None:
    pod = await k8s.get(POD, name)
    phase = (pod.get("status") or {}).get("phase")
    return str(phase) if phase in ("Succeeded", "Failed") else None


async def _not(check: Any) -> bool:
    return not await check()


async def test_statefulset_pods_reach_each_other_by_name(
        setpoint_cluster: SetpointCluster, setpoint_workloads: Any, k8s: Client) -> None:
    """Each pod serves HTTP with busybox httpd and is ready only once it fetched both
    pods by their DNS names: ``peer-0.peers`` (search path) and
    ``peer-1.peers.<ns>.svc.cluster.local``, the headless Service's per-pod records (the
    EndpointSlice endpoint's hostname, from the pod's hostname and subdomain)."""
    need("busybox", "busybox")
    need_root_namespaces()
    ns = setpoint_cluster.namespace
    await k8s.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "peers"},
                      "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                               "selector": {"app": "peer"},
                               "ports": [{"name": "http", "port": 8080}]}})
    check = (f"wget -q -T 2 -O - http://peer-0.peers:8080/ | grep -q peer-0 && "
             f"wget -q -T 2 -O - http://peer-1.peers.{ns}.svc.cluster.local:8080/ "
             "| grep -q peer-1")
    await k8s.create({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "peer"},
        "spec": {"replicas": 2, "serviceName": "peers", "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": {"app": "peer"}},
                 "template": {"metadata": {"labels": {"app": "peer"}}, "spec": {
                     "containers": [{
                         "name": "httpd", "image": "busybox:1.36",
                         "command": ["sh", "-c", "mkdir -p www && hostname > www/index.html "
                                     "&& echo $HOSTNAME > www/index.html && "
                                     "exec httpd -f -p $(POD_IP):8080 -h www"],
                         "env": [{"name": "POD_IP", "valueFrom": {
                             "fieldRef": {"fieldPath": "status.podIP"}}}],
                         "readinessProbe": {"exec": {"command": ["sh", "-c", check]},
                                            "periodSeconds": 1}}]}}}})

    async def both_ready() -> bool:
        sts = await k8s.get(STATEFULSET, "peer")
        return (sts.get("status") or {}).get("readyReplicas") == 2

    await wait_for(both_ready, timeout=90, message="both peers found each other by name")
