"""Service ClusterIPs and NodePorts, allocated as the Service REST storage does on create.

The real apiserver allocates ``spec.clusterIP(s)`` from the service CIDR (10.96.0.0/12 by
default) and ``spec.ports[].nodePort`` from the node port range (30000-32767) while it
creates or updates a Service, before validation, and releases them when the Service is
deleted. A requested address or port is checked: outside the range or already in use, the
write is refused with 422 and the allocator's own words.

Here an address or port counts as allocated exactly when a stored Service holds it: a store
listener keeps the used sets in step with every stored Service (rebuilt from storage at
start), so a dry run, a failed validation or a name conflict never leaks anything, and a
deletion (direct, by garbage collection or with its namespace) frees it. Admission only
chooses free values; no write can slip in between the choice and the store, because the
server's writes run on one event loop without awaiting.

Dynamic choices follow the bitmap allocator: the range is split at an offset
(``min(max(16, size/16), 256)`` addresses, ``min(max(16, size/32), 128)`` ports), and new
values are drawn at random from the upper part first, so the lower part stays free for
values users request (10.96.0.1 is the ``kubernetes`` Service's).
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from setpoint.cluster.admission.serviceipfamilies import (
    init_ip_family_fields,
    normalize_cluster_ips,
)
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.cluster.storage import Event
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Informer

SERVICES = "/services"
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_NODE_PORTS = (30000, 32767)
NONE = "None"


def _range_offset(size: int, low: int, high: int, step: int) -> int:
    """``calculateRangeOffset``: where the band for requested values ends."""
    if size <= low:
        return 0
    return max(low, min(size // step, high))


@dataclass
class _Band:
    """A range of integers ``[0, size)`` with the used ones, and a random dynamic choice."""

    size: int
    offset: int
    used: set[int] = field(default_factory=set)

    def next_free(self, rng: random.Random, taken: Iterable[int] = ()) -> int | None:
        """A free value, from the upper band first (random start, then scanning up)."""
        busy = self.used | set(taken)
        for lo, hi in ((self.offset, self.size), (0, self.offset)):
            if hi <= lo:
                continue
            start = rng.randrange(lo, hi)
            for i in range(hi - lo):
                candidate = lo + (start - lo + i) % (hi - lo)
                if candidate not in busy:
                    return candidate
        return None


class ServiceAllocation:
    """The admission step that fills in and checks a Service's ClusterIPs and NodePorts.

    Call it as an admission plugin ``(operation, rt, obj, old)``; it acts on core
    ``services`` only.
    """

    def __init__(self, store: Informer, *, service_cidr: str = DEFAULT_SERVICE_CIDR,
                 node_ports: tuple[int, int] = DEFAULT_NODE_PORTS,
                 rng: random.Random | None = None) -> None:
        self.network = ipaddress.IPv4Network(service_cidr)
        # neither the network address nor (for IPv4) the broadcast address is handed out
        self._base = int(self.network.network_address) + 1
        size = max(0, self.network.num_addresses - 2)
        self._ips = _Band(size, _range_offset(self.network.num_addresses, 16, 256, 16))
        self.port_range = node_ports
        port_count = node_ports[1] - node_ports[0] + 1
        self._ports = _Band(port_count, _range_offset(port_count, 16, 128, 32))
        self._rng = rng or random.Random()
        # what each stored Service holds: key -> (ip offsets, node port offsets)
        self._held: dict[tuple[str, str], tuple[frozenset[int], frozenset[int]]] = {}
        for svc in store.list(SERVICES):
            meta = svc.get("metadata") or {}
            self._hold((meta.get("namespace", ""), meta.get("name", "")), svc)
        store.add_listener(self._on_event, (SERVICES,))

    def __repr__(self) -> str:
        return (f"ServiceAllocation({self.network}, ports={self.port_range[0]}-"
                f"{self.port_range[1]}, ips_used={len(self._ips.used)}, "
                f"ports_used={len(self._ports.used)})")

    # -- what stored Services hold ---------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if event.resource != SERVICES:
            return
        key = (event.namespace, event.name)
        if event.type == "DELETED":
            self._release(key)
        else:
            self._hold(key, event.obj)

    def _hold(self, key: tuple[str, str], svc: Obj) -> None:
        self._release(key)
        ips = frozenset(o for o in (self._ip_offset(ip) for ip in _cluster_ips(svc))
                        if o is not None)
        ports = frozenset(o for o in (self._port_offset(p) for p in _node_ports(svc))
                          if o is not None)
        self._held[key] = (ips, ports)
        self._ips.used |= ips
        self._ports.used |= ports

    def _release(self, key: tuple[str, str]) -> None:
        ips, ports = self._held.pop(key, (frozenset(), frozenset()))
        self._ips.used -= ips
        self._ports.used -= ports

    def ip_in_use(self, ip: str) -> bool:
        """Whether a stored Service holds the ClusterIP ``ip``."""
        offset = self._ip_offset(ip)
        return offset is not None and offset in self._ips.used

    def port_in_use(self, port: int) -> bool:
        """Whether a stored Service holds the NodePort ``port``."""
        offset = self._port_offset(port)
        return offset is not None and offset in self._ports.used

    def _ip_offset(self, ip: str) -> int | None:
        # (pkg/registry/core/service/storage/alloc.go allocIPs: netutils.ParseIPSloppy, so
        # "10.96.0.010" holds 10.96.0.10)
        addr = parse_ip_sloppy(ip)
        if addr is None or addr.version != 4 or addr not in self.network:
            return None
        offset = int(addr) - self._base
        return offset if 0 <= offset < self._ips.size else None

    def _port_offset(self, port: Any) -> int | None:
        if not isinstance(port, int) or isinstance(port, bool):
            return None
        offset = port - self.port_range[0]
        return offset if 0 <= offset < self._ports.size else None

    # -- admission -------------------------------------------------------------------------
    def __call__(self, attributes: Attributes) -> None:
        operation, rt, obj, old = (attributes.operation, attributes.rt, attributes.obj,
                                   attributes.old)
        if rt.group or rt.kind != "Service" or operation not in ("CREATE", "UPDATE"):
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        old_spec = (old or {}).get("spec") or {}
        name = str((obj.get("metadata") or {}).get("name") or "")
        before = old_spec if operation == "UPDATE" else None
        if before is not None:
            _keep_allocated_values(spec, before)
        normalize_cluster_ips(spec, before)
        init_ip_family_fields(name, spec, before)
        if before is not None and before.get("clusterIP") and spec.get("clusterIP") not in (
                None, "", before["clusterIP"]) and spec.get("type") != "ExternalName":
            return  # validation refuses the change ("may not change once set")
        own = self._held.get(_key(obj), (frozenset(), frozenset()))
        self._cluster_ips(name, spec, own[0])
        self._node_ports(name, spec, own[1])

    def _cluster_ips(self, name: str, spec: Obj, own: frozenset[int]) -> None:
        if spec.get("type") == "ExternalName":
            return
        ip = spec.get("clusterIP") or ""
        ips = spec.get("clusterIPs")
        if not ip and isinstance(ips, list) and ips and isinstance(ips[0], str):
            ip = ips[0]
        if ip == NONE:
            spec["clusterIP"], spec["clusterIPs"] = NONE, [NONE]
            return
        if not ip:
            offset = self._ips.next_free(self._rng)
            if offset is None:
                raise errors.internal("failed to allocate a serviceIP: range is full")
            ip = str(ipaddress.IPv4Address(self._base + offset))
        else:
            requested = list(ips) if isinstance(ips, list) and ips else [ip]
            self._check_ip(name, ip, requested, own)
        spec["clusterIP"] = ip
        if not isinstance(ips, list) or not ips:
            spec["clusterIPs"] = [ip]

    def _check_ip(self, name: str, ip: str, requested: list[Any], own: frozenset[int]) -> None:
        if parse_ip_sloppy(ip) is None:
            raise errors.invalid("Service", name, [fe.invalid(
                "spec.clusterIPs[0]", ip,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")])
        offset = self._ip_offset(ip)
        if offset is None:
            reason = (f"provided IP is not in the valid range. The range of valid IPs is "
                      f"{self.network}")
        elif offset in self._ips.used and offset not in own:
            reason = "provided IP is already allocated"
        else:
            return
        raise errors.invalid("Service", name, [fe.invalid(
            "spec.clusterIPs", fe.go_string_slice([str(v) for v in requested]),
            f"failed to allocate IP {ip}: {reason}")])

    def _node_ports(self, name: str, spec: Obj, own: frozenset[int]) -> None:
        kind = spec.get("type")
        wants = kind == "NodePort" or (
            kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False)
        ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
        if not wants:
            return
        chosen: dict[int, int] = {}  # service port -> node port (shared across protocols)
        taken: set[int] = set()
        for i, port in enumerate(ports):
            requested = port.get("nodePort")
            if requested:
                self._check_port(name, f"spec.ports[{i}].nodePort", requested, own, taken)
                offset = self._port_offset(requested)
                if offset is not None:
                    taken.add(offset)
                continue
            number = port.get("port")
            shared = chosen.get(number) if isinstance(number, int) else None
            if shared is None:
                shared = _requested_for(number, ports)
            if shared is None:
                shared = self._allocate_node_port(taken)
            port["nodePort"] = shared
            if isinstance(number, int):
                chosen[number] = shared
        if kind == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local":
            if not spec.get("healthCheckNodePort"):
                spec["healthCheckNodePort"] = self._allocate_node_port(taken)
            else:
                self._check_port(name, "spec.healthCheckNodePort",
                                 spec["healthCheckNodePort"], own, taken)

    def _allocate_node_port(self, taken: set[int]) -> int:
        """A free node port, then taken (a full range is the allocator's 500)."""
        offset = self._ports.next_free(self._rng, taken)
        if offset is None:
            raise errors.internal("failed to allocate a nodePort: range is full")
        taken.add(offset)
        return self.port_range[0] + offset

    def _check_port(self, name: str, path: str, port: Any, own: frozenset[int],
                    taken: set[int]) -> None:
        offset = self._port_offset(port)
        if offset is None:
            reason = (f"provided port is not in the valid range. The range of valid ports is "
                      f"{self.port_range[0]}-{self.port_range[1]}")
        elif offset in self._ports.used and offset not in own:
            reason = "provided port is already allocated"
        else:
            return
        raise errors.invalid("Service", name, [fe.invalid(path, port, reason)])


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _cluster_ips(svc: Obj) -> list[str]:
    spec = svc.get("spec") or {}
    ips = [ip for ip in spec.get("clusterIPs") or [] if isinstance(ip, str)]
    ip = spec.get("clusterIP")
    if isinstance(ip, str) and ip and ip not in ips:
        ips.append(ip)
    return [ip for ip in ips if ip != NONE]


def _node_ports(svc: Obj) -> list[Any]:
    spec = svc.get("spec") or {}
    out = [p.get("nodePort") for p in spec.get("ports") or [] if isinstance(p, dict)]
    out.append(spec.get("healthCheckNodePort"))
    return [p for p in out if p]


def _requested_for(number: Any, ports: list[Obj]) -> int | None:
    """A node port the user asked for on the same port number with another protocol."""
    for port in ports:
        if port.get("port") == number and port.get("nodePort"):
            return int(port["nodePort"])
    return None


def _needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_port(spec: Obj) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _externally_accessible(spec: Obj) -> bool:
    """pkg/api/service/util.go ``ExternallyAccessible``: a node port or load balancer type,
    or a ClusterIP Service with external IPs."""
    kind = spec.get("type")
    return kind in ("NodePort", "LoadBalancer") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs")))


def _keep_allocated_values(spec: Obj, old: Obj) -> None:
    """``patchAllocatedValues`` (storage.go) and the strategy's ``dropTypeDependentFields``:
    an update that leaves out allocated values keeps them; a type change drops the ones the
    new type cannot have (cluster IPs, node ports, the health check node port,
    allocateLoadBalancerNodePorts, loadBalancerClass, and externalTrafficPolicy when the
    Service is no longer externally accessible) when the user left them as they were."""
    if _needs_cluster_ip(old) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
    elif _needs_cluster_ip(old) and not _needs_cluster_ip(spec) \
            and spec.get("clusterIP") in (None, "", old.get("clusterIP")):
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            spec.pop(key, None)
    old_ports = {p.get("name", ""): p.get("nodePort") for p in old.get("ports") or []
                 if isinstance(p, dict)}
    if _needs_node_port(old) and _needs_node_port(spec):
        # (not a node port both the old and the new Service already give to some port)
        used = set(old_ports.values()) & {p.get("nodePort") for p in spec.get("ports") or []
                                          if isinstance(p, dict)}
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort") \
                    and old_ports.get(port.get("name", "")) not in used | {None, 0}:
                port["nodePort"] = old_ports[port.get("name", "")]
    elif _needs_node_port(old) and not _needs_node_port(spec):
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and port.get("nodePort") == old_ports.get(
                    port.get("name", "")):
                port.pop("nodePort", None)
    if spec.get("type") == "LoadBalancer" and old.get("type") == "LoadBalancer" \
            and spec.get("externalTrafficPolicy") == "Local" \
            and not spec.get("healthCheckNodePort") and old.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old["healthCheckNodePort"]
    elif spec.get("healthCheckNodePort") == old.get("healthCheckNodePort") and not (
            spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"):
        spec.pop("healthCheckNodePort", None)
    if old.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is not None and \
                spec.get("allocateLoadBalancerNodePorts") == old.get(
                    "allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts")
        if spec.get("loadBalancerClass") == old.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if _externally_accessible(old) and not _externally_accessible(spec) and \
            spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
