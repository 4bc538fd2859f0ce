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

from setpoint.resources._conditions import Condition, ConditionedStatus
from setpoint.resources._crd import (
    CRDError,
    crd_for,
    discover_resources,
    dump_yaml,
    generate_crds,
    openapi_schema,
)
from setpoint.resources._custom import CustomResource, PrinterColumn, Scale
from setpoint.resources._manifests import generate_manifests
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
from setpoint.resources._model import IntOrString, MicroTime, Model, Quantity, Time
from setpoint.resources._quantities import canonical_resources
from setpoint.resources._rbac import Permissions, generate_rbac
from setpoint.resources._resource import Resource
from setpoint.resources._schema import SchemaError, structural_schema
from setpoint.resources.models.meta_v1 import ObjectMeta, OwnerReference
from setpoint.resources.relationships import (
    AnnotationRelationship,
    LabelRelationship,
    SpecPropertyRelationship,
)

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
