"""Structural schemas of built-in types, for CRDs that embed them.

A custom resource may use a built-in type in its spec (``ResourceRequirements``, a
``PodTemplateSpec``). Its CRD schema then describes that type as controller-gen does: the
Kubernetes OpenAPI definition inlined, with list types and int-or-string kept, the
kubernetes-validate artefacts (``type: [x, "null"]``, enums on apiVersion/kind) removed,
and an embedded ``ObjectMeta`` reduced to the fields a template may set (which otherwise
would be pruned away).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.machinery.schema import definitions
from setpoint.resources._model import QUANTITY_PATTERN

__all__ = ["definition_for_model", "structural_definition"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_INT_OR_STRING: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_SPECIAL: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        **_INT_OR_STRING, "pattern": QUANTITY_PATTERN,
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": _INT_OR_STRING,
    _META + "Time": {"type": "string", "format": "date-time"},
    _META + "MicroTime": {"type": "string", "format": "date-time"},
    _META + "FieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
    },
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": {
        "x-kubernetes-preserve-unknown-fields": True,
    },
    # what controller-gen emits for an embedded ObjectMeta (generateEmbeddedObjectMeta)
    _META + "ObjectMeta": {
        "type": "object",
        "properties": {
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    },
}
_COPIED = (
    "description", "format", "enum", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
    "multipleOf", "minProperties", "maxProperties", "default",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
)
# Go defaults of list-map keys the OpenAPI definitions do not carry; a CRD needs them
# because every key of a map list must be required or defaulted
_KEY_DEFAULTS = {"protocol": "TCP"}


def definition_for_model(module: str, name: str) -> str:
    """The Kubernetes definition name of a generated model (module path, class name)."""
    from setpoint.resources._codegen import PACKAGES

    short = module.rsplit(".", 1)[-1]
    for package, mod in PACKAGES.items():
        if mod == short:
            return f"{package}.{name}"
    raise KeyError(f"{module}.{name} is not a generated built-in model")


def structural_definition(name: str) -> dict[str, Any]:
    """The structural schema of the Kubernetes definition ``name``, fully inlined."""
    return _convert({"$ref": f"#/$defs/{name}"}, ())


def _convert(raw: Mapping[str, Any], stack: tuple[str, ...]) -> dict[str, Any]:
    ref = raw.get("$ref")
    all_of = raw.get("allOf")
    if ref is None and isinstance(all_of, list) and len(all_of) == 1:
        ref = all_of[0].get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        siblings = {k: v for k, v in raw.items() if k in ("description", "default")}
        if name in _SPECIAL:
            return {**_SPECIAL[name], **siblings}
        if name in stack:
            # recursive types (JSONSchemaProps) cannot be structural below this point
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **siblings}
        target = _convert(definitions().raw[name], (*stack, name))
        return {**target, **siblings}
    out: dict[str, Any] = {}
    t = raw.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None and "properties" in raw:
        t = "object"
    if t is not None:
        out["type"] = t
    for key in _COPIED:
        if key in raw:
            out[key] = raw[key]
    props = raw.get("properties")
    if isinstance(props, Mapping):
        out["properties"] = {
            k: _convert(v, stack) for k, v in props.items()
            if k not in ("apiVersion", "kind") or "enum" not in v
        }
        for k in ("apiVersion", "kind"):
            if k in props and k not in out["properties"]:
                out["properties"][k] = {"type": "string",
                                        "description": props[k].get("description", "")}
        if raw.get("required"):
            out["required"] = list(raw["required"])
    items = raw.get("items")
    if isinstance(items, Mapping):
        out["items"] = _convert(items, stack)
        _default_map_keys(out)
    extra = raw.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = _convert(extra, stack)
    elif t == "object" and not props:
        out["x-kubernetes-preserve-unknown-fields"] = True
    if t is None and "x-kubernetes-int-or-string" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _default_map_keys(array: dict[str, Any]) -> None:
    items = array["items"]
    required = set(items.get("required") or ())
    for key in array.get("x-kubernetes-list-map-keys") or ():
        prop = (items.get("properties") or {}).get(key)
        if prop is not None and key not in required and "default" not in prop:
            if key in _KEY_DEFAULTS:
                prop["default"] = _KEY_DEFAULTS[key]
            else:
                required.add(key)
    if required:
        items["required"] = sorted(required)
