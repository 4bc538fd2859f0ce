"""``setpoint.resources``: typed Kubernetes objects and the manifests made from them.

- :class:`CustomResource` declares a custom resource as a Python class; :func:`crd_for`,
  :func:`generate_crds` and :func:`dump_yaml` turn such classes into CRDs.
- :mod:`setpoint.resources.models` holds the built-in kinds (``Pod``, ``Deployment`` …),
  generated from the Kubernetes OpenAPI definitions.
- :class:`Model` is the base for spec and status models: snake_case in Python, camelCase
  on the wire, unknown fields kept.
- :class:`Permissions` and :func:`generate_rbac` give an operator least-privilege RBAC;
  :func:`generate_manifests` adds what runs it in a cluster.
"""

# The names are loaded on first use (PEP 562): importing one light module of the package,
# as the runtime does `_rbac` for its Permissions, must not load the generated models and
# pydantic (0.4 s of a process's start).
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from setpoint.resources._conditions import (
        Condition,
        ConditionedStatus,
    )
    from setpoint.resources._crd import (
        CRDError,
        crd_for,
        discover_resources,
        dump_yaml,
        generate_crds,
        openapi_schema,
    )
    from setpoint.resources._custom import (
        CustomResource,
        PrinterColumn,
        Scale,
    )
    from setpoint.resources._manifests import (
        generate_manifests,
    )
    from setpoint.resources._markers import (
        EmbeddedResource,
        Format,
        Int32,
        Int64,
        ListType,
        MapType,
        Nullable,
        PreserveUnknownFields,
        Rule,
        rules,
    )
    from setpoint.resources._model import (
        IntOrString,
        MicroTime,
        Model,
        Quantity,
        Time,
    )
    from setpoint.resources._quantities import (
        canonical_resources,
    )
    from setpoint.resources._rbac import (
        Permissions,
        generate_rbac,
    )
    from setpoint.resources._resource import (
        Resource,
    )
    from setpoint.resources._schema import (
        SchemaError,
        structural_schema,
    )
    from setpoint.resources.models.meta_v1 import (
        ObjectMeta,
        OwnerReference,
    )
    from setpoint.resources.relationships import (
        AnnotationRelationship,
        LabelRelationship,
        SpecPropertyRelationship,
    )

_WHERE: dict[str, str] = {
    "Condition": "setpoint.resources._conditions",
    "ConditionedStatus": "setpoint.resources._conditions",
    "CRDError": "setpoint.resources._crd",
    "crd_for": "setpoint.resources._crd",
    "discover_resources": "setpoint.resources._crd",
    "dump_yaml": "setpoint.resources._crd",
    "generate_crds": "setpoint.resources._crd",
    "openapi_schema": "setpoint.resources._crd",
    "CustomResource": "setpoint.resources._custom",
    "PrinterColumn": "setpoint.resources._custom",
    "Scale": "setpoint.resources._custom",
    "generate_manifests": "setpoint.resources._manifests",
    "EmbeddedResource": "setpoint.resources._markers",
    "Format": "setpoint.resources._markers",
    "Int32": "setpoint.resources._markers",
    "Int64": "setpoint.resources._markers",
    "ListType": "setpoint.resources._markers",
    "MapType": "setpoint.resources._markers",
    "Nullable": "setpoint.resources._markers",
    "PreserveUnknownFields": "setpoint.resources._markers",
    "Rule": "setpoint.resources._markers",
    "rules": "setpoint.resources._markers",
    "IntOrString": "setpoint.resources._model",
    "MicroTime": "setpoint.resources._model",
    "Model": "setpoint.resources._model",
    "Quantity": "setpoint.resources._model",
    "Time": "setpoint.resources._model",
    "canonical_resources": "setpoint.resources._quantities",
    "Permissions": "setpoint.resources._rbac",
    "generate_rbac": "setpoint.resources._rbac",
    "Resource": "setpoint.resources._resource",
    "SchemaError": "setpoint.resources._schema",
    "structural_schema": "setpoint.resources._schema",
    "ObjectMeta": "setpoint.resources.models.meta_v1",
    "OwnerReference": "setpoint.resources.models.meta_v1",
    "AnnotationRelationship": "setpoint.resources.relationships",
    "LabelRelationship": "setpoint.resources.relationships",
    "SpecPropertyRelationship": "setpoint.resources.relationships",
}

__all__ = [
    "AnnotationRelationship",
    "CRDError",
    "Condition",
    "ConditionedStatus",
    "CustomResource",
    "EmbeddedResource",
    "Format",
    "Int32",
    "Int64",
    "IntOrString",
    "LabelRelationship",
    "ListType",
    "MapType",
    "MicroTime",
    "Model",
    "Nullable",
    "ObjectMeta",
    "OwnerReference",
    "Permissions",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Quantity",
    "Resource",
    "Rule",
    "Scale",
    "SchemaError",
    "SpecPropertyRelationship",
    "Time",
    "canonical_resources",
    "crd_for",
    "discover_resources",
    "dump_yaml",
    "generate_crds",
    "generate_manifests",
    "generate_rbac",
    "openapi_schema",
    "rules",
    "structural_schema",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
