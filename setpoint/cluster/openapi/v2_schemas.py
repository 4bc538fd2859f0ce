"""The ``definitions`` of the /openapi/v2 (Swagger 2.0) document.

Built-in kinds come from the same ``kubernetes-validate`` definitions as /openapi/v3, turned
back into the swagger the apiserver serves: ``#/definitions/`` references keeping their sibling
keywords (Swagger 2.0 allows ``{"$ref": ..., "description": ...}``), plain types, IntOrString
as a string of format ``int-or-string`` and Quantity as a string.

Custom resources get what apiextensions-apiserver publishes in v2 for a CRD version: its
structural schema with everything Swagger 2.0 or kubectl cannot take stripped (``allOf``,
``anyOf``, ``oneOf``, ``not``, ``nullable``, defaults; nullable and unknown-field-preserving
nodes lose their type, items and properties, so kubectl treats them as arbitrary values), then
apiVersion, kind and an ObjectMeta ``metadata`` added, and the group-version-kind extension.
A CRD whose root preserves unknown fields is published as a bare ``{"type": "object"}``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from setpoint.cluster.openapi import schemas as v3
from setpoint.cluster.openapi.enums import with_enums
from setpoint.cluster.openapi.schemas import (
    API_VERSION_DOC,
    INT_OR_STRING,
    KIND_DOC,
    LIST_META,
    LIST_META_DOC,
    OBJECT_META,
    OBJECT_META_DOC,
    QUANTITY,
    crd_version,
    custom_schema_name,
)
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions

DEF_PREFIX = "#/definitions/"
_KV_PREFIX = "#/$defs/"  # how kubernetes-validate spells its references

_SPECIAL: dict[str, Obj] = {
    INT_OR_STRING: {"description": v3.INT_OR_STRING_DOC, "format": "int-or-string",
                    "type": "string"},
    QUANTITY: {"description": v3.QUANTITY_DOC, "type": "string"},
}


def ref(name: str) -> Obj:
    return {"$ref": DEF_PREFIX + name}


# -- built-in definitions -----------------------------------------------------------------

def builtin_definition(name: str) -> Obj:
    """The Swagger 2.0 form of the built-in definition ``name``."""
    special = _SPECIAL.get(name)
    if special is not None:
        return copy.deepcopy(special)
    return with_enums(name, _convert_schema(definitions().raw[name]))


def _convert(node: Any, prop: str | None = None) -> Any:
    return _convert_schema(node, prop) if isinstance(node, Mapping) else node


def _convert_schema(node: Mapping[str, Any], prop: str | None = None) -> Obj:
    out: Obj = {}
    for key, value in node.items():
        if key == "$ref":
            value = DEF_PREFIX + value.removeprefix(_KV_PREFIX)
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            value = kinds[0] if len(kinds) == 1 else kinds
        elif key == "enum" and prop in ("apiVersion", "kind"):
            continue  # the JSON-Schema rendering pins these; the served documents do not
        elif key == "properties":
            value = {k: _convert(v, k) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            value = _convert(value)
        out[key] = value
    return out


def refs_in(schema: Any) -> Iterable[str]:
    """The names of every definition ``schema`` references, directly."""
    return v3.refs_in(schema, DEF_PREFIX)


def closure(roots: Iterable[str], extra: Mapping[str, Obj]) -> dict[str, Obj]:
    """``extra`` (custom resources' definitions), ``roots`` and every built-in definition
    they reach, sorted by name."""
    return v3.closure(roots, extra, builtin=builtin_definition, prefix=DEF_PREFIX)


# -- custom resources ---------------------------------------------------------------------

# What a structural schema keeps of a CRD schema node (the rest never reaches the swagger)
_STRUCTURAL = ("description", "type", "title", "format", "maximum", "minimum", "maxLength",
               "minLength", "pattern", "maxItems", "minItems", "multipleOf", "enum",
               "maxProperties", "minProperties", "x-kubernetes-list-type",
               "x-kubernetes-map-type")
_TRUE_ONLY = ("exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable",
              "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
              "x-kubernetes-int-or-string")
_NON_EMPTY = ("required", "x-kubernetes-list-map-keys", "x-kubernetes-validations")
PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"


def crd_definitions(crd: Mapping[str, Any], version: str) -> dict[str, Obj]:
    """The object and list definitions apiextensions publishes in v2 for one CRD version."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    group, kind = spec.get("group", ""), names.get("kind", "")
    list_kind = names.get("listKind") or f"{kind}List"
    name = custom_schema_name(group, version, kind)
    raw = (crd_version(crd, version).get("schema") or {}).get("openAPIV3Schema")
    if raw is None:
        raw = (spec.get("validation") or {}).get("openAPIV3Schema")
    if not raw or spec.get("preserveUnknownFields") or raw.get(PRESERVE):
        # kubectl would wrongly reject unknown fields of anything with properties
        obj: Obj = {"type": "object"}
    else:
        obj = _structural(raw)
        _to_v2(obj)
        props = obj.setdefault("properties", {})
        props["apiVersion"] = {"description": API_VERSION_DOC, "type": "string"}
        props["kind"] = {"description": KIND_DOC, "type": "string"}
        props["metadata"] = {**ref(OBJECT_META), "description": OBJECT_META_DOC}
        _embedded_properties(obj)
    obj["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    listing: Obj = {
        "description": f"{list_kind} is a list of {kind}",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {
                "description": f"List of {names.get('plural', '')}. More info: "
                               "https://git.k8s.io/community/contributors/devel/"
                               "api-conventions.md",
                "items": ref(name), "type": "array"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": {**ref(LIST_META), "description": LIST_META_DOC},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind,
                                             "version": version}],
    }
    return {name: obj, custom_schema_name(group, version, list_kind): listing}


def _structural(node: Mapping[str, Any]) -> Obj:
    """The parts of a CRD schema node that its structural schema keeps (defaults pruned)."""
    out: Obj = {k: copy.deepcopy(node[k]) for k in _STRUCTURAL if node.get(k) not in (None, "")}
    out.update({k: True for k in _TRUE_ONLY if node.get(k) is True})
    out.update({k: copy.deepcopy(node[k]) for k in _NON_EMPTY if node.get(k)})
    items = node.get("items")
    if isinstance(items, Mapping):
        out["items"] = _structural(items)
    props = node.get("properties")
    if isinstance(props, Mapping):
        out["properties"] = {k: _structural(v) for k, v in props.items()
                             if isinstance(v, Mapping)}
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = _structural(extra)
    elif isinstance(extra, bool):
        out["additionalProperties"] = extra
    return out


def _to_v2(s: Obj) -> None:
    """apiextensions' ToStructuralOpenAPIV2, a node before its children."""
    if s.pop("nullable", False):
        for key in ("type", "items", "properties"):
            s.pop(key, None)
    if s.get(PRESERVE):
        # kubectl rejects unknown fields of a node with items or properties
        s.pop("items", None)
        s.pop("properties", None)
    if "items" not in s and s.get("type") == "array":
        s.pop("type")  # kubectl cannot cope with an array without an item schema
    if s.get(PRESERVE) and s.get("type") == "object":
        s.pop("type")
    props: Obj = s.get("properties") or {}
    nullable = {k for k, v in props.items() if v.get("nullable")}
    extra = s.get("additionalProperties")
    if "required" in s and (nullable or (isinstance(extra, dict) and extra.get("nullable"))):
        kept = [] if isinstance(extra, dict) and extra.get("nullable") else [
            r for r in s["required"] if r not in nullable]
        if kept:
            s["required"] = kept
        else:
            del s["required"]
    for child in (s.get("items"), *props.values(), extra):
        if isinstance(child, dict):
            _to_v2(child)


def _embedded_properties(s: Obj) -> None:
    """apiVersion, kind and metadata for x-kubernetes-embedded-resource objects."""
    for child in (*(s.get("properties") or {}).values(), s.get("items"),
                  s.get("additionalProperties")):
        if isinstance(child, dict):
            _embedded_properties(child)
    if s.get(PRESERVE):
        return  # v2 does not add them where unknown fields are kept: kubectl would reject those
    if s.get(EMBEDDED):
        props = s.setdefault("properties", {})
        props["apiVersion"] = {"description": "apiVersion defines the versioned schema of this "
                               "representation of an object. More info: https://git.k8s.io/"
                               "community/contributors/devel/sig-architecture/"
                               "api-conventions.md#resources", "type": "string"}
        props["kind"] = {"description": "kind is a string value representing the type of "
                         "this object. In CamelCase. More info: https://git.k8s.io/community/"
                         "contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                         "type": "string"}
        props["metadata"] = {**ref(OBJECT_META), "description": OBJECT_META_DOC}
        required = s.setdefault("required", [])
        for key in ("kind", "apiVersion"):
            if key not in required:
                required.append(key)


__all__ = ["DEF_PREFIX", "builtin_definition", "closure", "crd_definitions", "ref", "refs_in"]
