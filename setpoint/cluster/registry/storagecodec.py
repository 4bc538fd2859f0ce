"""Objects between the version a request serves and the version storage keeps.

As the apiserver's storage codec: an object is converted to the storage version before it is
written and back to the served version when it is read, and a custom resource read from
storage is defaulted by its version's schema (apiextensions-apiserver's
``schemaCoercingDecoder`` and ``unstructuredDefaulter``). Shared storage (events.k8s.io
Events kept as core Events) converts through ``conversion.CONVERSIONS``; a CRD with a
conversion webhook converts at a ``ConversionPoint``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from setpoint.cluster.registry.admissionpoints import ConversionPoint, Steps
from setpoint.cluster.registry.conversion import CONVERSIONS
from setpoint.cluster.registry.decoder import CustomSchema
from setpoint.cluster.registry.gomembers import fill_kind
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj


class StorageCodec:
    """Served and stored shapes of objects; given custom resources' schemas (for defaults)."""

    def __init__(self, custom_schema: Callable[[ResourceType], CustomSchema | None]) -> None:
        self._custom_schema = custom_schema

    def from_storage(self, rt: ResourceType, stored: Obj) -> Obj:
        """A stored object in the shape ``rt`` serves (only shared storage differs)."""
        conversion = CONVERSIONS.get((rt.group, rt.version, rt.kind))
        if conversion is not None:
            return conversion[1](stored)
        if rt.is_custom and stored.get("apiVersion") != rt.api_version:
            if rt.conversion_webhook is not None:
                raise errors.internal(f"{rt.resource}.{rt.group} at {rt.version} needs its "
                                      "conversion webhook here")
            return {**stored, "apiVersion": rt.api_version}
        return stored

    def to_storage(self, rt: ResourceType, obj: Obj) -> Obj:
        conversion = CONVERSIONS.get((rt.group, rt.version, rt.kind))
        if conversion is not None:
            stored = conversion[0](obj)
            # stored as protobuf in the storage version's shape: its empty slices and maps
            # that are not omitempty read back null at every version (an autoscaling/v1
            # HPA's v2 ``status.currentMetrics``)
            group, _, version = str(stored.get("apiVersion") or "").rpartition("/")
            fill_kind(group, version, str(stored.get("kind") or ""), stored, protobuf=True)
            return stored
        if rt.is_custom and not rt.storage_version:
            # conversion strategy None: only the apiVersion changes between versions
            return {**obj, "apiVersion": f"{rt.group}/{storage_version_of(rt)}"}
        return obj

    def serves_stored(self, rt: ResourceType) -> bool:
        """Whether ``present`` hands back every stored object of ``rt`` unchanged (a built-in
        type served as it is stored), so that its stored JSON can be served as it is."""
        return not rt.is_custom and (rt.group, rt.version, rt.kind) not in CONVERSIONS

    def present(self, rt: ResourceType, obj: Obj) -> Obj:
        """A stored object as served at ``rt``'s version (conversion, CR version, defaults)."""
        return self.with_defaults(rt, self.from_storage(rt, obj))

    def present_steps(self, rt: ResourceType, stored: Obj) -> Steps[Obj]:
        """``present``, through the CRD's conversion webhook when it has one."""
        if rt.conversion_webhook is None or stored.get("apiVersion") == rt.api_version:
            return self.present(rt, stored)
        [out] = yield ConversionPoint(rt, [stored], rt.api_version, single=True)
        return self.with_defaults(rt, out)

    def present_all_steps(self, rt: ResourceType, stored: list[Obj], *,
                          defaults: bool = True) -> Steps[list[Obj]]:
        """Stored objects as served at ``rt``'s version, converted together (and defaulted,
        unless ``defaults`` is False: ``from_storage``)."""
        if rt.conversion_webhook is None or all(
                o.get("apiVersion") == rt.api_version for o in stored):
            view = self.present if defaults else self.from_storage
            return [view(rt, o) for o in stored]
        converted = yield ConversionPoint(rt, stored, rt.api_version)
        return [self.with_defaults(rt, o) for o in converted] if defaults else converted

    def to_storage_steps(self, rt: ResourceType, obj: Obj) -> Steps[Obj]:
        """``to_storage``, through the CRD's conversion webhook when it has one."""
        if rt.conversion_webhook is None:
            return self.to_storage(rt, obj)
        target = f"{rt.group}/{storage_version_of(rt)}"
        if obj.get("apiVersion") == target:
            return obj
        converted: Obj
        [converted] = yield ConversionPoint(rt, [obj], target, single=True)
        return converted

    def with_defaults(self, rt: ResourceType, out: Obj) -> Obj:
        """A served custom resource with its schema's defaults applied (on read), pruned
        first when it may have been stored under another schema (the storage decoder's
        unstructuredSchemaCoercer prunes before the unstructuredDefaulter defaults:
        customresource_handler.go crdConversionRESTOptionsGetter)."""
        if not rt.is_custom:
            return out
        cs = self._custom_schema(rt)
        if cs is not None and (cs.has_defaults or cs.prunes_on_read):
            out = copy.deepcopy(out)
            if cs.prunes_on_read:
                cs.prune_and_report(out)
            if cs.has_defaults:
                cs.default(out)
        return out


def storage_version_of(rt: ResourceType) -> str:
    for version in ((rt.crd or {}).get("spec") or {}).get("versions") or []:
        if version.get("storage"):
            return str(version["name"])
    return rt.version
