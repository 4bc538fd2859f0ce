"""kube-proxy for the process runtime: each Service port's ClusterIP forwards to its endpoints.

On a cluster whose kubelets run real processes the service CIDR is a loopback range (its
loopback network's, :mod:`setpoint.workloads.loopbacknet`), so a ClusterIP is an address
this machine can listen on. For every port of every Service with such a ClusterIP, a small
asyncio proxy listens on ``clusterIP:port`` (TCP, or UDP for ``protocol: UDP``) and
forwards each connection (each client's datagrams) to one of the Service's *ready*
endpoints, chosen at random as kube-proxy's iptables rules do
(pkg/proxy/iptables/proxier.go: one ``statistic --mode random`` rule per endpoint;
``sessionAffinity: ClientIP`` keeps a client on its endpoint).

The endpoints are the Service's EndpointSlices (``kubernetes.io/service-name``), matched
to the Service port by port name as kube-proxy matches them
(pkg/proxy/endpointslicecache.go), so a ``targetPort`` by name is the number the
EndpointSlice controller resolved for each pod. Slices change as pods become ready or go,
and every change reaches the listeners at once; a connection already open stays with its
endpoint. With no ready endpoint a connection is closed at once (kube-proxy rejects it).

Nothing listens beyond loopback: a Service whose ClusterIP is not a loopback address
(a cluster started with the default service CIDR), headless Services and ExternalName
Services get no listener. NodePorts are not served.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from setpoint.client import Kind
from setpoint.runtime import Controller, Manager, Request, Result
from setpoint.workloads.settings import WorkloadSettings

log = logging.getLogger("setpoint.workloads.serviceproxy")

SERVICE = Kind("v1", "Service")
ENDPOINT_SLICE = Kind("discovery.k8s.io/v1", "EndpointSlice")
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
UDP_SESSION_IDLE = 30.0
"""How long a UDP client's association with its endpoint lives without traffic (the
conntrack timeout kube-proxy relies on for UDP, ``nf_conntrack_udp_timeout``)."""

Backend = tuple[str, int]
PortKey = tuple[str, int, str]  # clusterIP, port, protocol


def is_loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False


def service_backends(service: Mapping[str, Any], slices: Sequence[Mapping[str, Any]]
                     ) -> dict[PortKey, list[Backend]]:
    """Each proxied ``(clusterIP, port, protocol)`` of ``service`` and its ready endpoints."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return {}
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]
           if ip and ip != "None" and is_loopback(str(ip))]
    out: dict[PortKey, list[Backend]] = {}
    for port in spec.get("ports") or ():
        name, protocol = str(port.get("name") or ""), str(port.get("protocol") or "TCP")
        backends: list[Backend] = []
        for piece in slices:
            number = next((p.get("port") for p in piece.get("ports") or ()
                           if str(p.get("name") or "") == name
                           and str(p.get("protocol") or "TCP") == protocol), None)
            if not number:
                continue
            for endpoint in piece.get("endpoints") or ():
                # a missing condition counts as ready (discovery/v1 EndpointConditions)
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                backends += [(str(a), int(number)) for a in endpoint.get("addresses") or ()]
        for ip in ips:
            out[(str(ip), int(port.get("port") or 0), protocol)] = sorted(set(backends))
    return out


@dataclass
class PortProxy:
    """One Service port's listener and the endpoints it forwards to."""

    key: PortKey
    backends: list[Backend]
    affinity: bool = False
    server: asyncio.AbstractServer | None = None
    transport: asyncio.DatagramTransport | None = None
    sessions: dict[Any, Backend] = field(default_factory=dict)
    connections: set[asyncio.Task[None]] = field(default_factory=set)

    def choose(self, client: Any) -> Backend | None:
        if not self.backends:
            return None
        if self.affinity:
            chosen = self.sessions.get(client)
            if chosen in self.backends:
                return chosen
        chosen = random.choice(self.backends)
        if self.affinity:
            self.sessions[client] = chosen
        return chosen

    async def start(self) -> None:
        ip, port, protocol = self.key
        if protocol == "UDP":
            loop = asyncio.get_running_loop()
            self.transport, _ = await loop.create_datagram_endpoint(
                lambda: _UDPFront(self), local_addr=(ip, port))
        elif protocol == "TCP":
            self.server = await asyncio.start_server(self._serve_tcp, ip, port,
                                                     reuse_address=True)
        else:
            raise OSError(f"protocol {protocol} is not proxied")

    async def _serve_tcp(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        try:
            peer = writer.get_extra_info("peername")
            backend = self.choose(peer[0] if peer else None)
            if backend is None:
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*backend)
            except OSError:
                return  # the endpoint refuses: so does the Service, for this connection
            try:
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            finally:
                up_writer.close()
        finally:
            writer.close()
            self.connections.discard(task)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            for task in list(self.connections):
                task.cancel()
            await self.server.wait_closed()
        if self.transport is not None:
            self.transport.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # a half close passes through (HTTP/1.0 clients use it)
    except (ConnectionError, OSError):
        writer.close()


class _UDPFront(asyncio.DatagramProtocol):
    """The ClusterIP side of a UDP port: a datagram from a client goes to its endpoint
    through a socket of that client's own, so replies find their way back."""

    def __init__(self, proxy: PortProxy) -> None:
        self.proxy = proxy
        self.transport: asyncio.DatagramTransport | None = None
        self.upstreams: dict[Any, tuple[asyncio.DatagramTransport, float]] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self._expire()
        upstream = self.upstreams.get(addr)
        if upstream is not None and not upstream[0].is_closing():
            self.upstreams[addr] = (upstream[0], time.monotonic())
            upstream[0].sendto(data)
            return
        backend = self.proxy.choose(addr[0])
        if backend is None:
            return
        asyncio.get_running_loop().create_task(self._open(addr, backend, data))

    async def _open(self, addr: Any, backend: Backend, first: bytes) -> None:
        front = self

        class Back(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, _: Any) -> None:
                if front.transport is not None and not front.transport.is_closing():
                    front.transport.sendto(data, addr)

        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError):
            transport, _ = await loop.create_datagram_endpoint(Back, remote_addr=backend)
            self.upstreams[addr] = (transport, time.monotonic())
            transport.sendto(first)

    def _expire(self) -> None:
        now = time.monotonic()
        for addr, (transport, used) in list(self.upstreams.items()):
            if now - used > UDP_SESSION_IDLE:
                transport.close()
                del self.upstreams[addr]

    def connection_lost(self, exc: Exception | None) -> None:
        for transport, _ in self.upstreams.values():
            transport.close()
        self.upstreams.clear()


class ServiceProxy:
    """The listeners of every proxied Service port, kept in step with the API."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.ports: dict[PortKey, PortProxy] = {}
        self.owners: dict[tuple[str, str], set[PortKey]] = {}

    def __repr__(self) -> str:
        return f"ServiceProxy(ports={len(self.ports)})"

    async def reconcile(self, request: Request) -> Result:
        key = (request.namespace or "", request.name)
        service = self.manager.cache.get(SERVICE, request.name, request.namespace)
        wanted: dict[PortKey, list[Backend]] = {}
        affinity = False
        if service is not None:
            slices = list(self.manager.cache.list_raw(
                ENDPOINT_SLICE, namespace=request.namespace,
                labels={LABEL_SERVICE_NAME: request.name}))
            wanted = service_backends(service, slices)
            affinity = (service.get("spec") or {}).get("sessionAffinity") == "ClientIP"
        for gone in self.owners.get(key, set()) - set(wanted):
            proxy = self.ports.pop(gone, None)
            if proxy is not None:
                await proxy.stop()
        self.owners[key] = set(wanted)
        for port_key, backends in wanted.items():
            proxy = self.ports.get(port_key)
            if proxy is None:
                proxy = PortProxy(port_key, backends, affinity)
                try:
                    await proxy.start()
                except OSError as exc:
                    log.warning("Service %s/%s port %s not proxied: %s", *key, port_key, exc)
                    self.owners[key].discard(port_key)
                    continue
                self.ports[port_key] = proxy
            proxy.backends, proxy.affinity = backends, affinity
        if not self.owners[key]:
            del self.owners[key]
        return Result()

    async def close(self) -> None:
        for proxy in list(self.ports.values()):
            await proxy.stop()
        self.ports.clear()
        self.owners.clear()


def install(manager: Manager, settings: WorkloadSettings) -> ServiceProxy | None:
    """Add the service proxy (a controller named ``service-proxy``) when the kubelets run
    real processes; the simulation needs none."""
    if settings.runtime != "process":
        return None
    proxy = ServiceProxy(manager)

    def slice_to_service(obj: Any) -> list[Request]:
        metadata = obj.get("metadata") or {}
        name = (metadata.get("labels") or {}).get(LABEL_SERVICE_NAME)
        return [Request(str(metadata.get("namespace") or ""), str(name))] if name else []

    manager.add(Controller.for_(SERVICE, name="service-proxy")
                .watches(ENDPOINT_SLICE, map_func=slice_to_service)
                .reconciler(proxy))

    async def hold(_: Manager) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await proxy.close()

    manager.add_runnable(hold)
    return proxy
