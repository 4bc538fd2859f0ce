"""The ``components.schemas`` of the /openapi/v3 documents.

Built-in kinds come from the Kubernetes definitions that ``kubernetes-validate`` ships (a
JSON-Schema rendering of the swagger: ``"type": ["string", "null"]``, ``"$ref": "#/$defs/…"``
and ``enum`` lists on apiVersion/kind); they are turned back into the OpenAPI v3 form the
apiserver serves: plain types, ``#/components/schemas/`` references, a reference with sibling
keywords wrapped in ``allOf``, IntOrString and Quantity as ``oneOf``.

Custom resources get the schema apiextensions-apiserver builds from a CRD version's
``openAPIV3Schema``: apiVersion, kind and an ObjectMeta ``metadata`` injected, the
group-version-kind extension, and a ``<Kind>List`` type.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from setpoint.cluster.openapi.defaults import with_defaults
from setpoint.cluster.openapi.enums import with_enums
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions, openapi_type

REF_PREFIX = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
LIST_META = META + "ListMeta"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#resources")
KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds")
OBJECT_META_DOC = ("Standard object's metadata. More info: https://git.k8s.io/community/"
                   "contributors/devel/sig-architecture/api-conventions.md#metadata")
LIST_META_DOC = ("Standard list metadata. More info: https://git.k8s.io/community/"
                 "contributors/devel/sig-architecture/api-conventions.md#metadata")

# Descriptions the JSON-Schema rendering dropped together with the Go types' custom schemas.
# (v2 says the same of them: v2_schemas.py)
INT_OR_STRING_DOC = ("IntOrString is a type that can hold an int32 or a string.  When used "
                     "in JSON or YAML marshalling and unmarshalling, it produces or consumes "
                     "the inner type.  This allows you to have, for example, a JSON field "
                     "that can accept a name or number.")
QUANTITY_DOC = ("Quantity is a fixed-point representation of a number. It provides "
                "convenient marshaling/unmarshaling in JSON and YAML, in addition to "
                "String() and AsInt64() accessors.")
_SPECIAL: dict[str, Obj] = {
    INT_OR_STRING: {
        "description": INT_OR_STRING_DOC,
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    QUANTITY: {
        "description": QUANTITY_DOC,
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
}


def ref(name: str) -> Obj:
    return {"$ref": REF_PREFIX + name}


def ref_with(name: str, **siblings: Any) -> Obj:
    """A reference carrying sibling keywords, in the ``allOf`` spelling OpenAPI 3.0 needs."""
    if not siblings:
        return ref(name)
    return {"allOf": [ref(name)], **siblings}


# -- built-in definitions -----------------------------------------------------------------

def builtin_schema(name: str) -> Obj:
    """The OpenAPI v3 form of the built-in definition ``name``."""
    special = _SPECIAL.get(name)
    if special is not None:
        return copy.deepcopy(special)
    return with_defaults(name, with_enums(name, _convert_schema(definitions().raw[name])))


def _convert(node: Any, prop: str | None = None) -> Any:
    return _convert_schema(node, prop) if isinstance(node, Mapping) else node


def _convert_schema(node: Mapping[str, Any], prop: str | None = None) -> Obj:
    out: Obj = {}
    target = node.get("$ref")
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            value = openapi_type(value)
        elif key == "enum" and prop in ("apiVersion", "kind"):
            continue  # the JSON-Schema rendering pins these; the served documents do not
        elif key == "properties":
            value = {k: _convert(v, k) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            value = _convert(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            value = [_convert(v) for v in value]
        out[key] = value
    if target is not None:
        return ref_with(target.rsplit("/", 1)[-1], **out)
    return out


def refs_in(schema: Any, prefix: str = REF_PREFIX) -> Iterable[str]:
    """The names of every schema ``schema`` references (``$ref``s under ``prefix``)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            target = node.get("$ref")
            if isinstance(target, str) and target.startswith(prefix):
                yield target[len(prefix):]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def closure(roots: Iterable[str], extra: Mapping[str, Obj] | None = None, *,
            builtin: Callable[[str], Obj] | None = None,
            prefix: str = REF_PREFIX) -> dict[str, Obj]:
    """``roots`` and every built-in schema they reach, sorted by name.

    ``extra`` holds schemas that are not built-in (a custom resource's); they are included
    and their references followed too. ``builtin`` renders a built-in schema (OpenAPI v3 by
    default) and ``prefix`` is where its references point.
    """
    render = builtin or builtin_schema
    out: dict[str, Obj] = dict(extra or {})
    pending = list(roots)
    for schema in list(out.values()):
        pending.extend(refs_in(schema, prefix))
    known = definitions().raw
    while pending:
        name = pending.pop()
        if name in out or (name not in known and name not in _SPECIAL):
            continue
        out[name] = render(name)
        pending.extend(refs_in(out[name], prefix))
    return dict(sorted(out.items()))


def builtin_name(group: str, version: str, kind: str) -> str | None:
    return definitions().name_for_kind(group, version, kind)


# -- custom resources ---------------------------------------------------------------------

def custom_schema_name(group: str, version: str, kind: str) -> str:
    """The REST-friendly name apiextensions gives a custom kind: reversed group, version, kind.

    ``stable.example.com/v1/CronTab`` is ``com.example.stable.v1.CronTab``.
    """
    return ".".join([*reversed(group.split(".")), version, kind])


def crd_version(crd: Mapping[str, Any], version: str) -> Mapping[str, Any]:
    v: Mapping[str, Any]
    for v in crd.get("spec", {}).get("versions") or ():
        if v.get("name") == version:
            return v
    return {}


def crd_schemas(crd: Mapping[str, Any], version: str) -> dict[str, Obj]:
    """The object and list schemas of one version of a CRD, keyed by schema name."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    group, kind = spec.get("group", ""), names.get("kind", "")
    list_kind = names.get("listKind") or f"{kind}List"
    plural = names.get("plural", "")
    name = custom_schema_name(group, version, kind)
    raw = (crd_version(crd, version).get("schema") or {}).get("openAPIV3Schema")
    if raw is None:
        raw = (spec.get("validation") or {}).get("openAPIV3Schema")
    obj: Obj = _embed_resources(copy.deepcopy(dict(raw))) if raw else {}
    if raw:
        props = obj.setdefault("properties", {})
        props["apiVersion"] = {"description": API_VERSION_DOC, "type": "string"}
        props["kind"] = {"description": KIND_DOC, "type": "string"}
        props["metadata"] = ref_with(OBJECT_META, description=OBJECT_META_DOC)
        obj["properties"] = dict(sorted(props.items()))
        obj.setdefault("type", "object")
    obj["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    listing: Obj = {
        "description": f"{list_kind} is a list of {kind}",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {
                "description": f"List of {plural}. More info: https://git.k8s.io/community/"
                               "contributors/devel/api-conventions.md",
                "items": ref(name), "type": "array"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": ref_with(LIST_META, description=LIST_META_DOC),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind,
                                             "version": version}],
    }
    return {name: obj, custom_schema_name(group, version, list_kind): listing}


# builder.go addEmbeddedProperties: the TypeMeta fields' own descriptions (not the root's)
EMBEDDED_API_VERSION_DOC = (
    "apiVersion defines the versioned schema of this representation of an object. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
    "#resources")
EMBEDDED_KIND_DOC = (
    "kind is a string value representing the type of this object. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
    "#types-kinds")


def _embed_resources(node: Obj) -> Obj:
    """Give x-kubernetes-embedded-resource objects their apiVersion/kind/metadata fields as
    apiextensions-apiserver's builder.go addEmbeddedProperties does for OpenAPI v3: described
    TypeMeta strings, an ObjectMeta reference, and kind and apiVersion required."""
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _embed_resources(node[key])
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key) or ():
            if isinstance(sub, dict):
                _embed_resources(sub)
    for sub in (node.get("properties") or {}).values():
        if isinstance(sub, dict):
            _embed_resources(sub)
    if node.get("x-kubernetes-embedded-resource"):
        props = node.setdefault("properties", {})
        props["apiVersion"] = {"description": EMBEDDED_API_VERSION_DOC, "type": "string"}
        props["kind"] = {"description": EMBEDDED_KIND_DOC, "type": "string"}
        props["metadata"] = ref_with(OBJECT_META, description=OBJECT_META_DOC)
        required = node.setdefault("required", [])
        for key in ("kind", "apiVersion"):
            if key not in required:
                required.append(key)
    return node
