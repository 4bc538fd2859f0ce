"""The cluster DNS server of the process runtime (CoreDNS's role), on a loopback address.

Pods on the process runtime get a ``/etc/resolv.conf`` naming this server
(:mod:`setpoint.workloads.kubelet.process.dnsfiles`); it answers from the manager's cache
of Services, EndpointSlices and Pods as the Kubernetes DNS specification says
(kubernetes/dns docs/specification.md, CoreDNS's ``kubernetes`` plugin):

- ``<service>.<ns>.svc.<zone>`` A: the ClusterIP; for a headless Service, the addresses
  of its ready endpoints (the EndpointSlice controller marks not-ready pods ready when the
  Service publishes not-ready addresses); an ExternalName Service is a CNAME;
- ``<hostname>.<service>.<ns>.svc.<zone>`` A: the endpoint of a headless Service with that
  hostname (a StatefulSet's pod, ``web-0.web.default.svc.cluster.local``);
- ``_<port>._<proto>.<service>.<ns>.svc.<zone>`` SRV: the named port, on the Service's
  name (or, headless, on each endpoint's);
- ``<a-b-c-d>.<ns>.pod.<zone>`` A: that address.

Other names in the zone are NXDOMAIN; a name that exists but has no record of the asked
type answers with no records (so glibc's parallel A/AAAA lookups settle at once). Names
outside the zone are forwarded to the machine's own nameservers. UDP and TCP, on
the cluster DNS address of its loopback network, port 53
(:mod:`setpoint.workloads.loopbacknet`); nothing listens beyond loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from dnslib import (  # type: ignore[import-untyped]
    AAAA,
    CNAME,
    QTYPE,
    RCODE,
    RR,
    SRV,
    A,
    DNSRecord,
)

from setpoint.client import Kind
from setpoint.runtime import Manager
from setpoint.workloads.kubelet.process.dnsfiles import CLUSTER_DNS, CLUSTER_DOMAIN
from setpoint.workloads.loopbacknet import LoopbackNetwork
from setpoint.workloads.settings import WorkloadSettings

# every cluster DNS address of the loopback networks (and of older versions): never an
# upstream of our own
CLUSTER_DNS_PREFIX = "127.53."
log = logging.getLogger("setpoint.workloads.clusterdns")

SERVICE = Kind("v1", "Service")
ENDPOINT_SLICE = Kind("discovery.k8s.io/v1", "EndpointSlice")
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
TTL = 5
UPSTREAM_TIMEOUT = 2.0
Answer = tuple[int, list[RR]]  # rcode, records


def _ready_endpoints(slices: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for s in slices for e in s.get("endpoints") or ()
            if (e.get("conditions") or {}).get("ready") is not False]


class ClusterDNS:
    """Answers cluster names from ``manager.cache`` (see the module docstring)."""

    def __init__(self, manager: Manager, domain: str = CLUSTER_DOMAIN,
                 upstreams: list[str] | None = None) -> None:
        self.manager = manager
        self.domain = domain.strip(".").lower()
        self.upstreams = upstreams if upstreams is not None else _host_nameservers()

    def __repr__(self) -> str:
        return f"ClusterDNS(domain={self.domain}, upstreams={self.upstreams})"

    def _service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        found: Mapping[str, Any] | None = self.manager.cache.get(SERVICE, name, namespace)
        return found

    def _slices(self, namespace: str, name: str) -> list[Mapping[str, Any]]:
        return list(self.manager.cache.list_raw(ENDPOINT_SLICE, namespace=namespace,
                                                labels={LABEL_SERVICE_NAME: name}))

    def resolve(self, qname: str, qtype: int) -> Answer | None:
        """The answer for a name in the zone, or None when the name is outside it."""
        name = qname.rstrip(".").lower()
        if name != self.domain and not name.endswith("." + self.domain):
            return None
        labels = name[:-len(self.domain)].rstrip(".").split(".") if name != self.domain \
            else []
        if len(labels) == 3 and labels[2] == "pod":
            ip = labels[0].replace("-", ".")
            if ip.count(".") != 3:
                return RCODE.NXDOMAIN, []
            return RCODE.NOERROR, [RR(qname, QTYPE.A, rdata=A(ip), ttl=TTL)] \
                if qtype in (QTYPE.A, QTYPE.ANY) else []
        if len(labels) < 3 or labels[-1] != "svc":
            # the zone, svc.<zone> and <ns>.svc.<zone> exist (with no records)
            exists = not labels or (labels[-1] == "svc" and len(labels) <= 2)
            return (RCODE.NOERROR if exists else RCODE.NXDOMAIN), []
        namespace, service_name = labels[-2], labels[-3]
        rest = labels[:-3]
        service = self._service(namespace, service_name)
        if service is None:
            return RCODE.NXDOMAIN, []
        if len(rest) == 2 and rest[0].startswith("_") and rest[1].startswith("_"):
            return self._srv(qname, qtype, service, namespace, rest[0][1:], rest[1][1:])
        if len(rest) > 1:
            return RCODE.NXDOMAIN, []
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName":
            target = str(spec.get("externalName") or "")
            return RCODE.NOERROR, [RR(qname, QTYPE.CNAME, rdata=CNAME(target), ttl=TTL)]
        headless = spec.get("clusterIP") in (None, "", "None")
        if rest:
            if not headless:
                return RCODE.NXDOMAIN, []
            ips = [str(a) for e in _ready_endpoints(self._slices(namespace, service_name))
                   if str(e.get("hostname") or "") == rest[0] for a in e.get("addresses") or ()]
            if not ips:
                return RCODE.NXDOMAIN, []
        elif headless:
            ips = [str(a) for e in _ready_endpoints(self._slices(namespace, service_name))
                   for a in e.get("addresses") or ()]
        else:
            ips = [str(ip) for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]]
        return RCODE.NOERROR, self._addresses(qname, qtype, sorted(set(ips)))

    def _addresses(self, qname: str, qtype: int, ips: list[str]) -> list[RR]:
        out: list[RR] = []
        for ip in ips:
            if ":" in ip and qtype in (QTYPE.AAAA, QTYPE.ANY):
                out.append(RR(qname, QTYPE.AAAA, rdata=AAAA(ip), ttl=TTL))
            elif ":" not in ip and qtype in (QTYPE.A, QTYPE.ANY):
                out.append(RR(qname, QTYPE.A, rdata=A(ip), ttl=TTL))
        return out

    def _srv(self, qname: str, qtype: int, service: Mapping[str, Any], namespace: str,
             port_name: str, protocol: str) -> Answer:
        if qtype not in (QTYPE.SRV, QTYPE.ANY):
            return RCODE.NOERROR, []
        spec = service.get("spec") or {}
        name = str((service.get("metadata") or {}).get("name"))
        port = next((p for p in spec.get("ports") or ()
                     if str(p.get("name") or "") == port_name
                     and str(p.get("protocol") or "TCP").lower() == protocol), None)
        if port is None:
            return RCODE.NXDOMAIN, []
        base = f"{name}.{namespace}.svc.{self.domain}"
        if spec.get("clusterIP") not in (None, "", "None"):
            return RCODE.NOERROR, [RR(qname, QTYPE.SRV, ttl=TTL, rdata=SRV(
                0, 100, int(port.get("port") or 0), base))]
        records = []
        for piece in self._slices(namespace, name):
            number = next((p.get("port") for p in piece.get("ports") or ()
                           if str(p.get("name") or "") == port_name), None)
            for endpoint in _ready_endpoints([piece]):
                host = endpoint.get("hostname") or str(
                    (endpoint.get("addresses") or ["0.0.0.0"])[0]).replace(".", "-")
                records.append(RR(qname, QTYPE.SRV, ttl=TTL, rdata=SRV(
                    0, 100, int(number or 0), f"{host}.{base}")))
        return RCODE.NOERROR, records

    async def answer(self, data: bytes) -> bytes | None:
        """The reply to one DNS message (None: drop it)."""
        try:
            request = DNSRecord.parse(data)
        except Exception:
            return None
        question = request.q
        found = self.resolve(str(question.qname), int(question.qtype))
        if found is None:
            forwarded = await self._forward(data)
            if forwarded is not None:
                return forwarded
            reply = request.reply()
            reply.header.rcode = RCODE.SERVFAIL
            return bytes(reply.pack())
        rcode, records = found
        reply = request.reply()
        reply.header.rcode = rcode
        for record in records:
            reply.add_answer(record)
        return bytes(reply.pack())

    async def _forward(self, data: bytes) -> bytes | None:
        loop = asyncio.get_running_loop()
        for server in self.upstreams:
            reply: asyncio.Future[bytes] = loop.create_future()
            try:
                transport, _ = await loop.create_datagram_endpoint(
                    functools.partial(_Upstream, reply), remote_addr=(server, 53))
            except OSError:
                continue
            try:
                transport.sendto(data)
                async with asyncio.timeout(UPSTREAM_TIMEOUT):
                    return await reply
            except TimeoutError:
                continue
            finally:
                transport.close()
        return None


class _Upstream(asyncio.DatagramProtocol):
    def __init__(self, reply: asyncio.Future[bytes]) -> None:
        self.reply = reply

    def datagram_received(self, answer: bytes, _: Any) -> None:
        if not self.reply.done():
            self.reply.set_result(answer)


def _host_nameservers(path: Path = Path("/etc/resolv.conf")) -> list[str]:
    with contextlib.suppress(OSError):
        return [line.split()[1] for line in path.read_text().splitlines()
                if line.startswith("nameserver") and len(line.split()) > 1
                and not line.split()[1].startswith(CLUSTER_DNS_PREFIX)]
    return []


class _UDP(asyncio.DatagramProtocol):
    def __init__(self, dns: ClusterDNS) -> None:
        self.dns = dns
        self.transport: asyncio.DatagramTransport | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._reply(data, addr))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _reply(self, data: bytes, addr: Any) -> None:
        answer = await self.dns.answer(data)
        if answer is not None and self.transport is not None:
            self.transport.sendto(answer, addr)


async def _serve_tcp(dns: ClusterDNS, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            size = struct.unpack("!H", await reader.readexactly(2))[0]
            answer = await dns.answer(await reader.readexactly(size))
            if answer is None:
                break
            writer.write(struct.pack("!H", len(answer)) + answer)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(dns: ClusterDNS, host: str = CLUSTER_DNS, port: int = 53
                ) -> tuple[asyncio.DatagramTransport, asyncio.AbstractServer]:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _UDP(dns),
                                                       local_addr=(host, port))
    server = await asyncio.start_server(lambda r, w: _serve_tcp(dns, r, w), host, port,
                                        reuse_address=True)
    return transport, server


def install(manager: Manager, settings: WorkloadSettings) -> ClusterDNS | None:
    """Serve cluster DNS on the address of the cluster's loopback network (port 53) when the
    kubelets run real processes (the Services and EndpointSlices it reads are watched by the
    service proxy)."""
    if settings.runtime != "process":
        return None
    dns = ClusterDNS(manager)
    address = LoopbackNetwork(settings.loopback_network).cluster_dns

    async def run(_: Manager) -> None:
        try:
            transport, server = await serve(dns, host=address)
        except OSError as exc:
            log.warning("cluster DNS not served on %s:53: %s (pods resolve no cluster "
                        "names)", address, exc)
            await asyncio.Event().wait()
            return
        try:
            await asyncio.Event().wait()
        finally:
            transport.close()
            server.close()
            await server.wait_closed()

    manager.add_runnable(run)
    return dns
