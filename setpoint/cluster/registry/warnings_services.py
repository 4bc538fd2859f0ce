"""The warnings a valid Service draws: kube-apiserver 1.32's pkg/api/service/warnings.go
``GetWarningsForService`` (the strategy's WarningsOnCreate and WarningsOnUpdate), with its
``getWarningsForIP`` and ``getWarningsForCIDR`` (netip's stricter parsing than the
validation's ParseIPSloppy: IPv4 parts with leading zeros; IPv6 not in RFC 5952 form)."""

from __future__ import annotations

import ipaddress
import re

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.objects import Obj

DEPRECATED_TOPOLOGY_HINTS = "service.kubernetes.io/topology-aware-hints"
TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"

_LEADING_ZERO = re.compile(r"(^|\.)0\d")


def _parse_addr_error(address: str) -> str | None:
    """netip.ParseAddr's error for what validation accepted, or None when it parses."""
    if "." in address and ":" not in address and _LEADING_ZERO.search(address):
        return f"ParseAddr({go_quote(address)}): IPv4 field has octet with leading zero"
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return f"ParseAddr({go_quote(address)}): unable to parse IP"
    return None


def warnings_for_ip(path: str, address: str) -> list[str]:
    """``getWarningsForIP``."""
    error = _parse_addr_error(address)
    if error is not None:
        return [f"{path}: IP address was accepted, but will be invalid in a future "
                f"Kubernetes release: {error}"]
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and str(ip) != address:
        return [f"{path}: IPv6 address {go_quote(address)} is not in RFC 5952 canonical "
                f"format ({go_quote(str(ip))}), which may cause controller apply-loops"]
    return []


def warnings_for_cidr(path: str, cidr: str) -> list[str]:
    """``getWarningsForCIDR`` (netip.ParsePrefix keeps the host bits, as ip_interface)."""
    address, _, bits = cidr.partition("/")
    error = _parse_addr_error(address)
    if error is not None:
        return [f"{path}: IP prefix was accepted, but will be invalid in a future Kubernetes "
                f"release: netip.ParsePrefix({go_quote(cidr)}): {error}"]
    try:
        prefix = ipaddress.ip_interface(f"{address}/{bits}")
    except ValueError:
        return []
    canonical = f"{prefix.ip}/{prefix.network.prefixlen}"
    if prefix.version == 6 and canonical != cidr:
        return [f"{path}: IPv6 prefix {go_quote(cidr)} is not in RFC 5952 canonical format "
                f"({go_quote(canonical)}), which may cause controller apply-loops"]
    return []


def service_warnings(service: Obj) -> list[str]:
    """``GetWarningsForService`` as of 1.32."""
    spec = service.get("spec") or {}
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    out: list[str] = []
    if DEPRECATED_TOPOLOGY_HINTS in annotations:
        out.append(f"annotation {DEPRECATED_TOPOLOGY_HINTS} is deprecated, please use "
                   f"{TOPOLOGY_MODE} instead")
    cluster_ip = spec.get("clusterIP") or ""
    if cluster_ip not in ("", "None"):  # helper.IsServiceIPSet
        for i, ip in enumerate(spec.get("clusterIPs") or []):
            out += warnings_for_ip(f"spec.clusterIPs[{i}]", str(ip))
    service_type = spec.get("type")
    external_ips = spec.get("externalIPs") or []
    if service_type == "ClusterIP" and cluster_ip == "None":  # isHeadlessService
        if spec.get("loadBalancerIP"):
            out.append("spec.loadBalancerIP is ignored for headless services")
        if external_ips:
            out.append("spec.externalIPs is ignored for headless services")
        if spec.get("sessionAffinity") != "None":
            out.append("spec.SessionAffinity is ignored for headless services")
    for i, ip in enumerate(external_ips):
        out += warnings_for_ip(f"spec.externalIPs[{i}]", str(ip))
    if spec.get("loadBalancerIP"):
        out += warnings_for_ip("spec.loadBalancerIP", str(spec["loadBalancerIP"]))
    for i, cidr in enumerate(spec.get("loadBalancerSourceRanges") or []):
        out += warnings_for_cidr(f"spec.loadBalancerSourceRanges[{i}]", str(cidr))
    if service_type == "ExternalName" and external_ips:
        out.append('spec.externalIPs is ignored when spec.type is "ExternalName"')
    if service_type != "ExternalName" and spec.get("externalName"):
        out.append('spec.externalName is ignored when spec.type is not "ExternalName"')
    return out
