"""CustomResourceDefinition validation, run as admission so that 422s carry its causes."""

from __future__ import annotations

from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors


def validate_definition(attributes: Attributes) -> None:
    rt, obj, old = attributes.rt, attributes.obj, attributes.old
    if rt.group != "apiextensions.k8s.io" or rt.kind != "CustomResourceDefinition":
        return
    from setpoint.cluster.apiextensions.schema import validate_crd

    causes = validate_crd(obj, old)
    if causes:
        raise errors.invalid(rt.kind, obj["metadata"].get("name", ""), causes, rt.group)
