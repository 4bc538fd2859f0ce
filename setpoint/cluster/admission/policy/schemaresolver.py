"""A kind's OpenAPI schema with its references inlined, for the type checker: k8s.io/apiserver
pkg/cel/openapi/resolver (``PopulateRefs``: each reference replaced by what it names, a
circular one by an empty object). kube-controller-manager's resolver combines the built-in
definitions with discovery's /openapi/v3, where a custom kind's schema is its CRD version's
``openAPIV3Schema`` with string ``apiVersion`` and ``kind`` and an ObjectMeta ``metadata``;
both are read here from the same sources (the shipped definitions, the served CRD)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions, openapi_type

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry

GVK = tuple[str, str, str]
_REF = "#/$defs/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def is_builtin(gvk: GVK) -> bool:
    """Whether the kind's schema is a built-in definition (which never changes)."""
    return definitions().name_for_kind(*gvk) is not None


def resolve_schema(gvk: GVK, registry: Registry) -> Obj | None:
    """The kind's schema with references inlined; None for a kind without one (a CRD
    version without a schema, a kind not served: resolver.ErrSchemaNotFound)."""
    name = definitions().name_for_kind(*gvk)
    if name is not None:
        return _builtin(name)
    rt = registry.by_kind(*gvk)
    if rt is None or rt.crd is None:
        return None
    version: Obj = next((v for v in (rt.crd.get("spec") or {}).get("versions") or []
                    if v.get("name") == gvk[1]), {})
    raw = ((version.get("schema") or {}).get("openAPIV3Schema")
           or ((rt.crd.get("spec") or {}).get("validation") or {}).get("openAPIV3Schema"))
    if not raw or not raw.get("properties"):
        return None
    props = {**raw["properties"], "apiVersion": {"type": "string"},
             "kind": {"type": "string"}, "metadata": {"$ref": _REF + _OBJECT_META}}
    resolved: Obj = _populate({**raw, "type": "object", "properties": props}, set())
    return resolved


@functools.lru_cache(maxsize=64)
def _builtin(name: str) -> Obj | None:
    if name not in definitions().raw:
        return None
    resolved: Obj = _populate(copy.deepcopy(definitions().raw[name]), {name})
    return resolved


def _populate(node: Any, visited: set[str]) -> Any:
    """populateRefs over the definitions' JSON-Schema rendering (``#/$defs/`` references,
    ``"type": [t, "null"]``), turned to plain OpenAPI types on the way."""
    if isinstance(node, list):
        return [_populate(n, visited) for n in node]
    if not isinstance(node, Mapping):
        return node
    out: Obj = {}
    target = node.get("$ref")
    if isinstance(target, str) and target.startswith(_REF):
        name = target[len(_REF):]
        raw = definitions().raw.get(name)
        if name in visited or raw is None:
            return {"type": "object"}
        out = _populate(raw, visited | {name})
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            value = openapi_type(value)
        elif isinstance(value, Mapping | list):
            value = _populate(value, visited)
        out[key] = value
    return out
