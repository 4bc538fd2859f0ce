"""Equivalent resources, for webhooks whose ``matchPolicy`` is Equivalent.

Two resources are equivalent when they share their storage: every version of one group's
resource, and resources of other groups that cohabit with it (events.k8s.io Events are kept
as core Events), as kube-apiserver's EquivalentResourceRegistry keys them by storage prefix.
A webhook matched through an equivalent resource is sent the object converted to it, and its
patch is applied there and converted back (k8s.io/apiserver
pkg/admission/plugin/webhook/generic/webhook.go ShouldCallHook; pkg/admission/plugin/webhook
/generic/conversion.go ConvertVersionedAttributes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.registry.conversion import CONVERSIONS
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.types import ResourceType


def equivalent_resources(registry: Registry, rt: ResourceType) -> list[ResourceType]:
    """The served resources sharing ``rt``'s storage, ``rt`` included, groups in discovery
    order and each group's versions preferred first."""
    key = rt.storage_key
    out: list[ResourceType] = []
    for group, versions in registry.groups().items():
        for version in versions:
            other = registry.get(group, version, rt.resource)
            if other is not None and other.storage_key == key:
                out.append(other)
    return out


def convert(obj: Obj, source: ResourceType, target: ResourceType) -> Obj:
    """``obj``, served as ``source``, in the shape ``target`` serves: through the stored
    shape where the two differ (autoscaling/v1 HPAs, events.k8s.io Events), else by
    apiVersion alone (conversion strategy None)."""
    if (source.group, source.version) == (target.group, target.version):
        return obj
    inbound = CONVERSIONS.get((source.group, source.version, source.kind))
    stored = inbound[0](obj) if inbound is not None else obj
    outbound = CONVERSIONS.get((target.group, target.version, target.kind))
    if outbound is not None:
        return outbound[1](stored)
    if stored.get("apiVersion") == target.api_version:
        return stored
    return {**stored, "apiVersion": target.api_version}
