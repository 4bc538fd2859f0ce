"""Real servers in pods: memcached and nginx listen on their pod's own loopback address and
become Ready through real probes."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

import aiohttp

from setpoint.client import Kind
from tests.workloads.process.support import need, process_env
from tests.workloads.test_kubelet_support import pod, ready

NODE = Kind("v1", "Node")


async def memcached_roundtrip(ip: str) -> bytes:
    reader, writer = await asyncio.open_connection(ip, 11211)
    writer.write(b"set k 0 0 5\r\nhello\r\nget k\r\n")
    await writer.drain()
    answer = await reader.readuntil(b"END\r\n")
    writer.close()
    return answer


async def test_memcached_pod_is_ready_on_its_pod_ip_and_speaks_memcached(
        tmp_path: Path) -> None:
    need("memcached", "memcached")
    async with process_env(tmp_path) as env:
        body = pod("cache", image="memcached:1.6")
        body["spec"]["containers"] = [{
            "name": "memcached", "image": "memcached:1.6", "args": ["-m", "16"],
            "ports": [{"containerPort": 11211, "name": "mc"}],
            # readiness by a real tcpSocket probe (pkg/kubelet/prober/prober.go)
            "readinessProbe": {"tcpSocket": {"port": "mc"}, "periodSeconds": 1}}]
        await env.run(body)
        live = await env.until("cache", ready)
        ip = live["status"]["podIP"]
        assert ipaddress.ip_address(ip).is_loopback
        assert await memcached_roundtrip(ip) == b"STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n"


async def test_nginx_pod_answers_http_on_its_pod_ip_after_an_http_probe(
        tmp_path: Path) -> None:
    need("nginx", "nginx-light")
    async with process_env(tmp_path) as env:
        body = pod("web")
        body["spec"]["containers"] = [{
            "name": "nginx", "image": "nginx:1.27",
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1}}]
        await env.run(body)
        live = await env.until("web", ready)
        ip = live["status"]["podIP"]
        async with aiohttp.ClientSession() as session, session.get(f"http://{ip}/") as resp:
            assert resp.status == 200
            assert "Welcome to nginx" in await resp.text()


async def test_a_pod_runs_only_once_its_nodes_kubelet_endpoint_is_reported(
        tmp_path: Path) -> None:
    """The API server reaches a pod's logs, exec and port-forward at the port its Node
    reports (``status.daemonEndpoints.kubeletEndpoint.Port``); a pod that ran before the
    node reported its endpoint's port could be Ready while `kubectl logs` dialed the
    registration default and failed (seen under load)."""
    need("sh", "busybox")
    async with process_env(tmp_path) as env:
        body = pod("early")
        body["spec"]["containers"] = [{"name": "app", "image": "busybox:1.36",
                                       "command": ["sh", "-c", "sleep 3600"]}]
        await env.run(body)
        live = await env.until("early", ready)
        node = await env.client.get(NODE, live["spec"]["nodeName"])
        port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        address = next(a["address"] for a in node["status"]["addresses"]
                       if a["type"] == "InternalIP")
        _, writer = await asyncio.open_connection(address, port)  # listening there
        writer.close()
