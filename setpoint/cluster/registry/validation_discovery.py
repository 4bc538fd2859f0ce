"""EndpointSlice validation (kubernetes v1.32 pkg/apis/discovery/validation/validation.go:
ValidateEndpointSlice, validateAddressType, validateEndpoints, validatePorts; the strategy,
pkg/registry/discovery/endpointslice/strategy.go, calls ValidateEndpointSliceCreate and
ValidateEndpointSliceUpdate).

A create accepts the address types IPv4, IPv6 and FQDN; an update also the deprecated ``IP``
(a slice stored before it was dropped stays writable) and keeps ``addressType`` immutable.
At most 1000 endpoints of at most 100 addresses each, 100 ports, 16 topology labels.

As for Endpoints (validation_endpoints.py), one deliberate difference: a loopback address is
accepted, because this server's process-runtime workloads live on loopback networks
(setpoint/workloads/loopbacknet.py) and the EndpointSlice controller publishes them.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_serviceaccess import non_special_ip
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

SUPPORTED_ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
DEPRECATED_ADDRESS_TYPES = ("IP",)
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_TOPOLOGY_LABELS = 16
MAX_ADDRESSES = 100
MAX_PORTS = 100
MAX_ENDPOINTS = 1000
_LOOPBACK = "may not be in the loopback range (127.0.0.0/8, ::1/128)"


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dicts(items: Any) -> list[Obj]:
    return [i if isinstance(i, dict) else {} for i in items] if isinstance(items, list) else []


def _fully_qualified_domain_name(path: str, name: str) -> list[Cause]:
    """apimachinery ``validation.IsFullyQualifiedDomainName`` (two segments at least)."""
    if not name:
        return [fe.required(path)]
    name = name.removesuffix(".")
    errs = names.is_dns1123_subdomain(name)
    if errs:
        return [fe.invalid(path, name, ",".join(errs))]
    labels = name.split(".")
    if len(labels) < 2:
        return [fe.invalid(path, name,
                           "should be a domain with at least two segments separated by dots")]
    for label in labels:
        errs = names.is_dns1123_label(label)
        if errs:
            return [fe.invalid(path, label, ",".join(errs))]
    return []


def _ip_of_family(path: str, address: str, version: int) -> list[Cause]:
    """``IsValidIPv4Address`` / ``IsValidIPv6Address``, then ``ValidateNonSpecialIP``
    (loopback excepted, see the module docstring)."""
    parsed = parse_ip_sloppy(address)
    # Go's ip.To4() != nil: an IPv4-mapped IPv6 address counts as IPv4
    is_v4 = parsed is not None and (
        parsed.version == 4 or getattr(parsed, "ipv4_mapped", None) is not None)
    ok = parsed is not None and is_v4 == (version == 4)
    family = "IPv4" if version == 4 else "IPv6"
    causes = [] if ok else [fe.invalid(path, address, f"must be a valid {family} address")]
    causes.extend(c for c in non_special_ip(address, path) if not c.message.endswith(_LOOPBACK))
    return causes


def _address(path: str, address: Any, address_type: str) -> list[Cause]:
    text = address if isinstance(address, str) else ""
    if address_type == "IP":
        return [fe.invalid(path, text, m) for m in (
            [] if parse_ip_sloppy(text) is not None
            else ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"])]
    if address_type == "IPv4":
        return _ip_of_family(path, text, 4)
    if address_type == "IPv6":
        return _ip_of_family(path, text, 6)
    if address_type == "FQDN":
        return _fully_qualified_domain_name(path, text)
    return []  # unknown types fall through unvalidated, as in Kubernetes


def _endpoints(endpoints: list[Obj], address_type: str) -> list[Cause]:
    """``validateEndpoints``."""
    if len(endpoints) > MAX_ENDPOINTS:
        return [fe.too_many("endpoints", len(endpoints), MAX_ENDPOINTS)]
    causes: list[Cause] = []
    for i, endpoint in enumerate(endpoints):
        path = f"endpoints[{i}]"
        addresses = endpoint.get("addresses")
        addresses = addresses if isinstance(addresses, list) else []
        if not addresses:
            causes.append(fe.required(f"{path}.addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            causes.append(fe.too_many(f"{path}.addresses", len(addresses), MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            causes.extend(_address(f"{path}.addresses[{j}]", address, address_type))
        # (v1's deprecatedTopology is the internal Topology, whose name the path carries)
        topology = endpoint.get("deprecatedTopology")
        topology = topology if isinstance(topology, dict) else {}
        if len(topology) > MAX_TOPOLOGY_LABELS:
            causes.append(fe.too_many(f"{path}.topology", len(topology), MAX_TOPOLOGY_LABELS))
        causes.extend(names.validate_labels(topology, f"{path}.topology"))
        hostname = endpoint.get("hostname")
        if isinstance(hostname, str):
            causes.extend(fe.invalid(f"{path}.hostname", hostname, m)
                          for m in names.is_dns1123_label(hostname))
    return causes


def _ports(ports: list[Obj]) -> list[Cause]:
    """``validatePorts`` (names and protocols defaulted to "" and TCP before)."""
    if len(ports) > MAX_PORTS:
        return [fe.too_many("ports", len(ports), MAX_PORTS)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        path = f"ports[{i}]"
        name = _str(port.get("name"))
        if name:
            causes.extend(fe.invalid(f"{path}.name", name, m)
                          for m in names.is_dns1123_label(name))
        if name in seen:
            causes.append(fe.duplicate(f"{path}.name", name))
        seen.add(name)
        protocol = port.get("protocol")
        if not isinstance(protocol, str):
            causes.append(fe.required(f"{path}.protocol"))
        elif protocol not in PROTOCOLS:
            causes.append(fe.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
        app_protocol = port.get("appProtocol")
        if isinstance(app_protocol, str):
            causes.extend(fe.invalid(f"{path}.appProtocol", app_protocol, m)
                          for m in names.is_qualified_name(app_protocol))
    return causes


def _validate(obj: Obj, valid_types: tuple[str, ...]) -> list[Cause]:
    address_type = obj.get("addressType")
    address_type = address_type if isinstance(address_type, str) else ""
    causes: list[Cause] = []
    if not address_type:
        causes.append(fe.required("addressType"))
    elif address_type not in valid_types:
        causes.append(fe.not_supported("addressType", address_type, valid_types))
    causes.extend(_endpoints(_dicts(obj.get("endpoints")), address_type))
    return causes + _ports(_dicts(obj.get("ports")))


def validate_endpoint_slice(obj: Obj) -> list[Cause]:
    """``ValidateEndpointSliceCreate`` past its metadata (the caller's)."""
    return _validate(obj, SUPPORTED_ADDRESS_TYPES)


def validate_endpoint_slice_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateEndpointSliceUpdate`` past its metadata: the deprecated ``IP`` type too,
    and the address type kept."""
    causes = _validate(new, tuple(sorted(SUPPORTED_ADDRESS_TYPES + DEPRECATED_ADDRESS_TYPES)))
    if (new.get("addressType") or "") != (old.get("addressType") or ""):
        causes.append(fe.invalid("addressType", new.get("addressType") or "",
                                 "field is immutable"))
    return causes


def drop_topology_on_v1(new: Obj, old: Obj | None) -> None:
    """The strategy's ``dropTopologyOnV1`` (every request here is discovery/v1): a create,
    or an update that changes the endpoints, silently clears ``deprecatedTopology``."""
    if old is not None and (old.get("endpoints") or None) == (new.get("endpoints") or None):
        return
    for endpoint in new.get("endpoints") or []:
        if isinstance(endpoint, dict):
            endpoint.pop("deprecatedTopology", None)
