"""How the service REST storage settles a Service's cluster IP fields before it allocates, on
a single-stack IPv4 cluster (pkg/registry/core/service/storage/storage.go
normalizeClusterIPs, alloc.go initIPFamilyFields). Both run before validation, so their
422s come alone, not among validation's causes."""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_serviceips import (
    NONE,
    family_of,
    validate_cluster_ips_related_fields,
)
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

# the families this cluster serves (its service CIDR is IPv4): the first is the default
CONFIGURED_FAMILIES = ("IPv4",)


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def normalize_cluster_ips(spec: Obj, old: Obj | None) -> None:
    """``normalizeClusterIPs``: keep clusterIP and clusterIPs in step for a client that sets
    only one of them; anything else is left for validation to judge."""
    ip, ips = spec.get("clusterIP") or "", _list(spec.get("clusterIPs"))
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_ip, old_ips = old.get("clusterIP") or "", _list(old.get("clusterIPs"))
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)  # an old client patching something else
    if old_ip != ip:
        same = ips == old_ips
        if old_ip and not ip:
            if same:
                spec.pop("clusterIPs", None)  # cleared on the client's behalf
        elif same:
            spec["clusterIPs"] = [ip]


def _is_matching_prefer_dual_stack(spec: Obj, old: Obj | None) -> bool:
    """``isMatchingPreferDualStackClusterIPFields``: an update of a PreferDualStack
    Service that leaves its policy, cluster IPs and families as they were."""
    return old is not None and old.get("type") != "ExternalName" \
        and old.get("ipFamilyPolicy") == "PreferDualStack" \
        and spec.get("ipFamilyPolicy") == "PreferDualStack" \
        and _list(spec.get("clusterIPs")) == _list(old.get("clusterIPs")) \
        and _list(spec.get("ipFamilies")) == _list(old.get("ipFamilies"))


def init_ip_family_fields(name: str, spec: Obj, old: Obj | None) -> None:
    """``initIPFamilyFields``: default the policy (the stored one on update; RequireDualStack
    for a headless Service without selector; else SingleStack), pre-validate the cluster IP
    fields, check the policy against the IPs and families given, infer the families from the
    IPs, and refuse what this single-stack cluster cannot serve."""
    if spec.get("type") == "ExternalName" or _is_matching_prefer_dual_stack(spec, old):
        return
    headless_selectorless = spec.get("clusterIP") == NONE and not spec.get("selector")
    if spec.get("ipFamilyPolicy") is None:
        if old is not None and old.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
        else:
            spec["ipFamilyPolicy"] = "RequireDualStack" if headless_selectorless \
                else "SingleStack"
    causes = validate_cluster_ips_related_fields(spec)
    if causes:
        raise errors.invalid("Service", name, causes)
    policy = spec["ipFamilyPolicy"]
    causes = _update_policy_causes(spec, old, policy) if old is not None else []
    ips, families = _list(spec.get("clusterIPs")), _list(spec.get("ipFamilies"))
    if policy == "SingleStack":
        if len(ips) == 2:
            causes.append(fe.invalid("spec.ipFamilyPolicy", policy, "must be 'RequireDualStack' "
                                     "or 'PreferDualStack' when multiple cluster IPs are "
                                     "specified"))
        if len(families) == 2:
            causes.append(fe.invalid("spec.ipFamilyPolicy", policy, "must be 'RequireDualStack' "
                                     "or 'PreferDualStack' when multiple IP families are "
                                     "specified"))
    for i, ip in enumerate(ips):
        if ip == NONE:
            break
        family = family_of(ip)
        if i >= len(families):
            if family not in CONFIGURED_FAMILIES:
                causes.append(fe.invalid(f"spec.clusterIPs[{i}]",
                                         fe.go_string_slice([str(v) for v in ips]),
                                         f"{family} is not configured on this cluster"))
            else:
                families.append(family)
    if causes:
        raise errors.invalid("Service", name, causes)
    if families:
        spec["ipFamilies"] = families
    if spec.get("clusterIP") == NONE and not spec.get("selector"):
        # headless and selectorless: any families, the second added unless SingleStack
        families = families or [CONFIGURED_FAMILIES[0]]
        if len(families) < 2 and policy != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families
        return
    if policy == "RequireDualStack" and len(CONFIGURED_FAMILIES) < 2:
        causes.append(fe.invalid("spec.ipFamilyPolicy", policy,
                                 "this cluster is not configured for dual-stack services"))
    causes.extend(fe.invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster")
                  for i, family in enumerate(families) if family not in CONFIGURED_FAMILIES)
    if causes:
        raise errors.invalid("Service", name, causes)
    if not families:
        spec["ipFamilies"] = [CONFIGURED_FAMILIES[0]]


def _update_policy_causes(spec: Obj, old: Obj, policy: str) -> list[Cause]:
    """The update-only part: SingleStack releases a secondary IP or family left as it was;
    any other policy may not release them."""
    ips, old_ips = _list(spec.get("clusterIPs")), _list(old.get("clusterIPs"))
    families, old_families = _list(spec.get("ipFamilies")), _list(old.get("ipFamilies"))
    if policy == "SingleStack":
        if ips == old_ips and len(ips) > 1:
            spec["clusterIPs"] = ips[:1]
        if families == old_families and len(families) > 1:
            spec["ipFamilies"] = families[:1]
        return []
    causes: list[Cause] = []
    if ips and len(ips) < len(old_ips):  # (reducedClusterIPs: none given is no reduction)
        causes.append(fe.invalid("spec.ipFamilyPolicy", policy,
                                 "must be 'SingleStack' to release the secondary cluster IP"))
    if families and len(families) < len(old_families):
        causes.append(fe.invalid("spec.ipFamilyPolicy", policy,
                                 "must be 'SingleStack' to release the secondary IP family"))
    return causes
