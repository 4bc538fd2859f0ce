"""A Service's cluster IPs and IP families, validated (``pkg/apis/core/validation/
validation.go``: ValidateServiceClusterIPsRelatedFields, which the service REST allocator
also runs before it allocates, and ValidateServiceUpdate's validateUpgradeDowngradeClusterIPs
and validateUpgradeDowngradeIPFamilies)."""

from __future__ import annotations

from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

NONE = "None"
IP_FAMILIES = ("IPv4", "IPv6")
IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
_IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def family_of(ip: str) -> str:
    """The IP family of a valid address (netutils.IsIPv6String, through ParseIPSloppy)."""
    parsed = parse_ip_sloppy(ip)
    return "IPv6" if parsed is not None and parsed.version == 6 else "IPv4"


def _valid_ip(ip: Any) -> bool:
    """``validation.IsValidIP`` (apimachinery pkg/util/validation/validation.go, 1.32):
    netutils.ParseIPSloppy, so IPv4 parts with leading zeros pass (with a warning,
    warnings_services)."""
    return parse_ip_sloppy(ip) is not None


def _strings(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def is_headless(spec: Obj) -> bool:
    """``isHeadlessService``: exactly one cluster IP, "None"."""
    return _strings(spec.get("clusterIPs")) == [NONE]


def validate_cluster_ips_related_fields(spec: Obj) -> list[Cause]:
    """``ValidateServiceClusterIPsRelatedFields``, in its order."""
    if spec.get("type") == "ExternalName":
        return []  # (its own rules forbid all of these)
    causes: list[Cause] = []
    ip = spec.get("clusterIP") or ""
    ips = _strings(spec.get("clusterIPs"))
    slice_value = fe.go_string_slice([str(v) for v in ips])
    if ip:
        if not ips:
            causes.append(fe.required("spec.clusterIPs"))
        elif ips[0] != ip:
            causes.append(fe.invalid("spec.clusterIPs", slice_value,
                                     "first value must match `clusterIP`"))
    elif ips:
        causes.append(fe.invalid("spec.clusterIPs", slice_value,
                                 "must be empty when `clusterIP` is not specified"))
    seen: set[Any] = set()
    for i, family in enumerate(_strings(spec.get("ipFamilies"))):
        if family not in IP_FAMILIES:
            causes.append(fe.not_supported(f"spec.ipFamilies[{i}]", family, IP_FAMILIES))
        if family in seen:
            causes.append(fe.duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        causes.append(fe.not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    invalid_ips = False
    for i, value in enumerate(ips):
        if i == 0 and value == NONE:
            if len(ips) > 1:
                invalid_ips = True
                causes.append(fe.invalid("spec.clusterIPs", slice_value,
                                         "'None' must be the first and only value"))
            continue
        if not _valid_ip(value):
            invalid_ips = True
            causes.append(fe.invalid(f"spec.clusterIPs[{i}]", value, _IP_MESSAGE))
    if len(ips) > 2:
        causes.append(fe.invalid("spec.clusterIPs", slice_value, "may only hold up to 2 values"))
    if invalid_ips:
        return causes  # (further checks would only skew the messages)
    if len(ips) > 1 and len({family_of(v) for v in ips}) != len(ips):
        causes.append(fe.invalid("spec.clusterIPs", slice_value,
                                 "may specify no more than one IP for each IP family"))
    families = _strings(spec.get("ipFamilies"))
    if not is_headless(spec) and ips and families:
        for i, value in enumerate(ips[:len(families)]):
            if families[i] == "IPv4" and family_of(value) == "IPv6":
                causes.append(fe.invalid(f"spec.clusterIPs[{i}]", value,
                                         f"expected an IPv4 value as indicated by "
                                         f"`ipFamilies[{i}]`"))
            if families[i] == "IPv6" and family_of(value) != "IPv6":
                causes.append(fe.invalid(f"spec.clusterIPs[{i}]", value,
                                         f"expected an IPv6 value as indicated by "
                                         f"`ipFamilies[{i}]`"))
    return causes


def validate_upgrade_downgrade(spec: Obj, old: Obj) -> list[Cause]:
    """``validateUpgradeDowngradeClusterIPs`` then ``validateUpgradeDowngradeIPFamilies``:
    the primary cluster IP and family never change (unless to, from or as ExternalName); a
    released secondary needs the SingleStack policy."""
    if spec.get("type") == "ExternalName" or old.get("type") == "ExternalName":
        return []
    causes: list[Cause] = []
    new_ips, old_ips = _strings(spec.get("clusterIPs")), _strings(old.get("clusterIPs"))
    value = fe.go_string_slice([str(v) for v in new_ips] if "clusterIPs" in spec else None)
    policy = spec.get("ipFamilyPolicy")
    if not (is_headless(old) and is_headless(spec)):
        if len(old_ips) == len(new_ips):
            causes.extend(fe.invalid(f"spec.clusterIPs[{i}]", value, "may not change once set")
                          for i, ip in enumerate(old_ips) if ip != new_ips[i])
        elif len(old_ips) > len(new_ips):
            if not new_ips:
                causes.append(fe.invalid("spec.clusterIPs[0]", value,
                                         "primary clusterIP can not be unset"))
            elif new_ips[0] != old_ips[0]:
                causes.append(fe.invalid("spec.clusterIPs[0]", value, "may not change once set"))
            if len(new_ips) == 1 and policy != "SingleStack":
                causes.append(fe.invalid("spec.ipFamilyPolicy", policy, "must be set to "
                                         "'SingleStack' when releasing the secondary clusterIP"))
        elif old_ips and new_ips[0] != old_ips[0]:
            causes.append(fe.invalid("spec.clusterIPs[0]", value, "may not change once set"))
    if is_headless(old) or is_headless(spec):
        return causes  # (headless services may change families, or become headless)
    new_fams, old_fams = _strings(spec.get("ipFamilies")), _strings(old.get("ipFamilies"))
    families = fe.GoValue("[]core.IPFamily{" + ", ".join(fe.go_quote(str(f)) for f in new_fams)
                          + "}") if new_fams else fe.GoValue("[]core.IPFamily(nil)")
    if len(old_fams) == len(new_fams):
        causes.extend(fe.invalid("spec.ipFamilies[0]", families, "may not change once set")
                      for i, fam in enumerate(old_fams) if fam != new_fams[i])
    elif len(old_fams) > len(new_fams):
        if not new_ips:
            causes.append(fe.invalid("spec.ipFamilies[0]", families,
                                     "primary ipFamily can not be unset"))
        if new_fams and new_fams[0] != old_fams[0]:
            causes.append(fe.invalid("spec.ipFamilies[0]", value, "may not change once set"))
        if len(new_fams) == 1 and policy != "SingleStack":
            causes.append(fe.invalid("spec.ipFamilyPolicy", policy, "must be set to "
                                     "'SingleStack' when releasing the secondary ipFamily"))
    elif old_fams and new_fams[0] != old_fams[0]:
        causes.append(fe.invalid("spec.ipFamilies[0]", value, "may not change once set"))
    return causes
