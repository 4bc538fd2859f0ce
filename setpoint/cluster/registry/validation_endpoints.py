"""Endpoints validation (kubernetes v1.32 pkg/apis/core/validation/validation.go:
ValidateEndpoints, validateEndpointSubsets, validateEndpointAddress, validateEndpointPort;
the same rules on create and update).

Each subset lists at least one address, ready or not; an address is a valid IP (IsValidIP, then
ValidateNonSpecialIP, so a malformed one draws both causes), with a DNS label hostname and a
node name if given; ports are valid numbers with a known protocol, named when there are several.

One deliberate difference: a loopback address is accepted. kube-apiserver refuses it, but this
server's process-runtime workloads live on loopback networks (setpoint/workloads/loopbacknet.py)
and their Endpoints must carry those addresses.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_podstatus import NOT_AN_IP
from setpoint.cluster.registry.validation_serviceaccess import non_special_ip
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

PROTOCOLS = ("SCTP", "TCP", "UDP")
_LOOPBACK = "may not be in the loopback range (127.0.0.0/8, ::1/128)"


def _address(address: Obj, path: str) -> list[Cause]:
    """``validateEndpointAddress``."""
    ip = address.get("ip")
    text = ip if isinstance(ip, str) else ""
    causes = [] if parse_ip_sloppy(text) is not None else [fe.invalid(f"{path}.ip", text,
                                                                       NOT_AN_IP)]
    hostname = address.get("hostname")
    if isinstance(hostname, str) and hostname:
        causes.extend(fe.invalid(f"{path}.hostname", hostname, m)
                      for m in names.is_dns1123_label(hostname))
    node = address.get("nodeName")
    if isinstance(node, str):
        causes.extend(fe.invalid(f"{path}.nodeName", node, m)
                      for m in names.name_is_dns_subdomain(node, False))
    causes.extend(c for c in non_special_ip(text, f"{path}.ip")
                  if not c.message.endswith(_LOOPBACK))
    return causes


def _port(port: Obj, require_name: bool, path: str) -> list[Cause]:
    """``validateEndpointPort``."""
    causes: list[Cause] = []
    name = port.get("name") or ""
    if require_name and not name:
        causes.append(fe.required(f"{path}.name"))
    elif name:
        causes.extend(fe.invalid(f"{path}.name", name, m) for m in names.is_dns1123_label(name))
    number = port.get("port")
    value = number if isinstance(number, int) and not isinstance(number, bool) else 0
    if not 1 <= value <= 65535:
        causes.append(fe.invalid(f"{path}.port", value, names.inclusive_range_error(1, 65535)))
    protocol = port.get("protocol") or ""
    if not protocol:
        causes.append(fe.required(f"{path}.protocol"))
    elif protocol not in PROTOCOLS:
        causes.append(fe.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    app_protocol = port.get("appProtocol")
    if isinstance(app_protocol, str):
        causes.extend(fe.invalid(f"{path}.appProtocol", app_protocol, m)
                      for m in names.is_qualified_name(app_protocol))
    return causes


def _dicts(items: Any) -> list[Obj]:
    return [i if isinstance(i, dict) else {} for i in items] if isinstance(items, list) else []


def validate_endpoints(obj: Obj) -> list[Cause]:
    """``ValidateEndpoints`` past its metadata (the caller's): ``validateEndpointSubsets``."""
    causes: list[Cause] = []
    for i, subset in enumerate(_dicts(obj.get("subsets"))):
        path = f"subsets[{i}]"
        ready, not_ready = _dicts(subset.get("addresses")), _dicts(
            subset.get("notReadyAddresses"))
        if not ready and not not_ready:
            causes.append(fe.required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, address in enumerate(ready):
            causes.extend(_address(address, f"{path}.addresses[{j}]"))
        for j, address in enumerate(not_ready):
            causes.extend(_address(address, f"{path}.notReadyAddresses[{j}]"))
        ports = _dicts(subset.get("ports"))
        for j, port in enumerate(ports):
            causes.extend(_port(port, len(ports) > 1, f"{path}.ports[{j}]"))
    return causes
