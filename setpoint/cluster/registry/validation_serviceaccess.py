"""How a Service is reached from outside the cluster, validated (``pkg/apis/core/validation/
validation.go``: ValidateService's externalIPs (IsValidIP, then ValidateNonSpecialIP),
loadBalancerSourceRanges and the load-balancer-source-ranges annotation it replaced
(IsValidCIDR), validateLoadBalancerClassField, validateServiceTrafficDistribution,
validateServiceInternalTrafficFieldsValue's Required; ValidateServiceUpdate's
validateLoadBalancerClassField(old, new) and validateServiceExternalTrafficFieldsUpdate).

The field path ``spec.LoadBalancerSourceRanges`` is capitalized as Go spells it.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from setpoint.cluster.registry.validation_podstatus import NOT_AN_IP
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

NOT_A_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
ONLY_LOAD_BALANCER = "may only be used when `type` is 'LoadBalancer'"
SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
TRAFFIC_DISTRIBUTIONS = ("PreferClose",)
_INTERNAL_POLICY_TYPES = ("NodePort", "LoadBalancer", "ClusterIP")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _as_go_ip(ip: IPAddress) -> IPAddress:
    """Go's ``net.IP.To4``: an IPv4-mapped IPv6 address is judged as its IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def non_special_ip(value: str, path: str) -> list[Cause]:
    """``ValidateNonSpecialIP``: not unspecified, loopback or link-local."""
    parsed = parse_ip_sloppy(value)
    if parsed is None:
        return [fe.invalid(path, value, "must be a valid IP address")]
    ip = _as_go_ip(parsed)
    causes: list[Cause] = []
    if ip.is_unspecified:
        causes.append(fe.invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        causes.append(fe.invalid(path, value, "may not be in the loopback range (127.0.0.0/8, "
                                              "::1/128)"))
    if ip.is_link_local:
        causes.append(fe.invalid(path, value, "may not be in the link-local range "
                                              "(169.254.0.0/16, fe80::/10)"))
    packed = ip.packed
    multicast = (packed[:3] == b"\xe0\x00\x00" if ip.version == 4
                 else packed[0] == 0xFF and packed[1] & 0x0F == 0x02)
    if multicast:
        causes.append(fe.invalid(path, value, "may not be in the link-local multicast range "
                                              "(224.0.0.0/24, ff02::/10)"))
    return causes


def is_valid_cidr(value: str) -> bool:
    """``netutils.ParseCIDRSloppy`` accepts ``value``: an address (IPv4 parts may have
    leading zeros), ``/``, and a decimal prefix length no longer than the address."""
    address, slash, prefix = value.partition("/")
    ip = parse_ip_sloppy(address)
    if not slash or ip is None or not prefix.isascii() or not prefix.isdigit():
        return False
    return int(prefix) <= (32 if ip.version == 4 and ":" not in address else 128)


def validate_external_ips(spec: Obj) -> list[Cause]:
    """ValidateService's externalIPs: IPs, and none of the special ones."""
    ips = spec.get("externalIPs")
    causes: list[Cause] = []
    for i, ip in enumerate(ips if isinstance(ips, list) else []):
        path, text = f"spec.externalIPs[{i}]", ip if isinstance(ip, str) else ""
        if parse_ip_sloppy(text) is None:
            causes.append(fe.invalid(path, text, NOT_AN_IP))
        else:
            causes.extend(non_special_ip(text, path))
    return causes


def validate_source_ranges(spec: Obj, annotations: Any) -> list[Cause]:
    """ValidateService's loadBalancerSourceRanges, or (only without them) the annotation
    they replaced; values may be space-padded (a historical accident kept)."""
    kind = spec.get("type")
    ranges = spec.get("loadBalancerSourceRanges")
    causes: list[Cause] = []
    if isinstance(ranges, list) and ranges:
        path = "spec.LoadBalancerSourceRanges"
        if kind != "LoadBalancer":
            causes.append(fe.forbidden(path, ONLY_LOAD_BALANCER))
        for i, value in enumerate(ranges):
            value = value.strip() if isinstance(value, str) else ""
            if not is_valid_cidr(value):
                causes.append(fe.invalid(f"{path}[{i}]", value, NOT_A_CIDR))
        return causes
    if not isinstance(annotations, dict) or SOURCE_RANGES_ANNOTATION not in annotations:
        return causes
    path = f"metadata.annotations[{SOURCE_RANGES_ANNOTATION}]"
    if kind != "LoadBalancer":
        causes.append(fe.forbidden(path, ONLY_LOAD_BALANCER))
    text = str(annotations[SOURCE_RANGES_ANNOTATION]).strip()
    if text:
        causes.extend(fe.invalid(path, value.strip(), NOT_A_CIDR)
                      for value in text.split(",") if not is_valid_cidr(value.strip()))
    return causes


def _class_value(spec: Obj) -> Any:
    value = spec.get("loadBalancerClass")
    return value if isinstance(value, str) or value is None else str(value)


def validate_load_balancer_class(spec: Obj, old: Obj | None) -> list[Cause]:
    """``validateLoadBalancerClassField``: fixed once set on a LoadBalancer, a qualified
    name, and only on a LoadBalancer."""
    causes: list[Cause] = []
    path = "spec.loadBalancerClass"
    value = _class_value(spec)
    balanced = spec.get("type") == "LoadBalancer"
    if old is not None and balanced and old.get("type") == "LoadBalancer" \
            and _class_value(old) != value:
        causes.append(fe.invalid(path, value, "may not change once set"))
    if value is None:
        return causes
    if balanced:
        causes.extend(fe.invalid(path, value, m) for m in names.is_qualified_name(value))
    else:
        causes.append(fe.forbidden(path, ONLY_LOAD_BALANCER))
    return causes


def needs_health_check(spec: Obj) -> bool:
    """``apiservice.NeedsHealthCheck``."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def validate_class_and_policies(spec: Obj, external_traffic: list[Cause]) -> list[Cause]:
    """The tail of ValidateService: the load balancer class, the external traffic policy
    rules (given), the internal traffic policy, the traffic distribution."""
    causes = validate_load_balancer_class(spec, None) + external_traffic
    kind = spec.get("type")
    internal = spec.get("internalTrafficPolicy")
    if internal is None and kind in _INTERNAL_POLICY_TYPES:
        causes.append(fe.required("spec.internalTrafficPolicy"))
    elif internal is not None and internal not in ("Cluster", "Local"):
        causes.append(fe.not_supported("spec.internalTrafficPolicy", internal,
                                       ("Cluster", "Local")))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in TRAFFIC_DISTRIBUTIONS:
        causes.append(fe.not_supported("spec.trafficDistribution", distribution,
                                       TRAFFIC_DISTRIBUTIONS))
    return causes


def validate_external_access_update(spec: Obj, old: Obj) -> list[Cause]:
    """ValidateServiceUpdate's own rules of this module: the class (old and new), and a
    health check node port that stays while the service keeps needing one."""
    causes = validate_load_balancer_class(spec, old)
    if needs_health_check(old) and needs_health_check(spec) and \
            spec.get("healthCheckNodePort") != old.get("healthCheckNodePort"):
        causes.append(fe.forbidden("spec.healthCheckNodePort", "field is immutable"))
    return causes
