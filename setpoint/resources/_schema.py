"""Pydantic JSON schema -> structural OpenAPI v3 schema, as a CRD needs it.

Kubernetes accepts only *structural* schemas: every node has a type (or says it is an
int-or-string or keeps unknown fields), ``$ref`` does not exist, ``anyOf``/``allOf`` only
validate and never declare types, properties and additionalProperties exclude each other,
and defaults are pruned and valid. Pydantic writes JSON Schema 2020-12 with ``$defs``,
``anyOf`` for unions and numeric ``exclusiveMinimum``; this module rewrites it:

- ``$ref`` is inlined (a model that contains itself is an error: CRDs cannot recurse);
- ``X | None`` becomes ``X``: the field is simply optional. It is ``nullable`` only when
  null is a meaningful value (a field without default, an item of a list or a map value);
- ``int | str`` becomes ``x-kubernetes-int-or-string``; other unions are an error;
- ``dict[str, X]`` is a map; ``dict[str, Any]`` and ``Any`` keep unknown fields;
- ``Literal``/``Enum`` become ``enum``; ``set[X]`` a list of type ``set``;
- built-in types (``setpoint.resources.models``) come from the Kubernetes definitions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from setpoint.resources._builtin_schema import definition_for_model, structural_definition
from setpoint.resources._model import DEFINITION_KEY

__all__ = ["SchemaError", "prune_default", "structural_schema"]

# the formats kube-apiserver validates; others would be dropped with a warning
SUPPORTED_FORMATS = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid",
    "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor",
    "rgbcolor", "byte", "password", "date", "datetime", "date-time",
    "int32", "int64", "float", "double",
})
_COPIED = (
    "description", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "minItems", "maxItems", "multipleOf", "minProperties", "maxProperties", "nullable",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-validations",
)
_IGNORED = frozenset({"title", "examples", "$schema", "readOnly", "writeOnly", "deprecated",
                      "$defs", "type", "properties", "required", "items",
                      "additionalProperties", "default", "format", "const", "uniqueItems",
                      "exclusiveMinimum", "exclusiveMaximum", "x-kubernetes-int-or-string"})


class SchemaError(TypeError):
    """A Python type that a structural schema cannot express; says where and why."""


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a pydantic model (wire names, inlined)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return _Converter(raw.get("$defs") or {}).node(raw, model.__name__, allow_null=False)


class _Converter:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.stack: list[str] = []

    def node(self, s: Mapping[str, Any], path: str, allow_null: bool) -> dict[str, Any]:
        """Convert one node; ``allow_null`` says whether a null alternative is kept."""
        if DEFINITION_KEY in s:
            module, _, name = s[DEFINITION_KEY].rpartition(".")
            base = structural_definition(definition_for_model(module, name))
            return self._finish(base, s, path)
        if "$ref" in s:
            return self._finish(self._ref(s["$ref"], path, allow_null), s, path)
        all_of = s.get("allOf")
        if isinstance(all_of, list):
            if len(all_of) != 1:
                raise SchemaError(f"{path}: allOf of several schemas is not supported")
            return self._finish(self.node(all_of[0], path, allow_null), s, path)
        for key in ("anyOf", "oneOf"):
            if key in s:
                return self._finish(self._union(s[key], path, allow_null), s, path)
        return self._finish(self._plain(s, path), s, path)

    def _ref(self, ref: str, path: str, allow_null: bool) -> dict[str, Any]:
        name = ref.rsplit("/", 1)[-1]
        if name in self.stack:
            raise SchemaError(f"{path}: {name} contains itself; a CRD schema cannot recurse")
        self.stack.append(name)
        try:
            return self.node(self.defs[name], path, allow_null)
        finally:
            self.stack.pop()

    def _union(self, alternatives: list[Any], path: str, allow_null: bool) -> dict[str, Any]:
        options = [a for a in alternatives if a.get("type") != "null"]
        has_null = len(options) < len(alternatives)
        if len(options) == 1:
            out = self.node(options[0], path, allow_null)
        elif {_plain_type(a) for a in options} == {"integer", "string"} and len(options) == 2:
            out = {"x-kubernetes-int-or-string": True}
            for a in options:  # constraints of either side still validate
                for key in ("pattern", "minimum", "maximum", "minLength", "maxLength"):
                    if key in a:
                        out[key] = a[key]
            out = _int_or_string(out)
        else:
            kinds = ", ".join(str(_plain_type(a) or a.get("$ref", "?")) for a in options)
            # pydantic writes a Decimal as this union, which the class never spelled
            decimal = (" (a Decimal is one: use float, or Quantity for amounts)"
                       if kinds == "number, string" else "")
            raise SchemaError(
                f"{path}: a union of {kinds}{decimal} cannot be expressed in a structural "
                "schema; use one type, IntOrString, or Any with PreserveUnknownFields"
            )
        if has_null and allow_null:
            out["nullable"] = True
        return out

    def _plain(self, s: Mapping[str, Any], path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        t = s.get("type")
        if isinstance(t, list):
            raise SchemaError(f"{path}: multiple types {t} are not structural")
        if "prefixItems" in s:
            raise SchemaError(f"{path}: tuples are not supported; use a list or a model")
        if s.get("x-kubernetes-int-or-string"):
            return _int_or_string({})
        if t is not None:
            out["type"] = t
        if "const" in s and "enum" not in s:
            out["enum"] = [s["const"]]
        props = s.get("properties")
        extra = s.get("additionalProperties")
        if isinstance(props, Mapping):
            required = list(s.get("required") or ())
            out["type"] = "object"
            out["properties"] = {
                k: self.node(v, f"{path}.{k}", allow_null=k in required)
                for k, v in props.items()
            }
            if required:
                out["required"] = required
            if extra is True:
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(extra, Mapping) and extra:
            out["type"] = "object"
            out["additionalProperties"] = self.node(extra, f"{path}[*]", allow_null=True)
        elif t == "object" or extra is True or extra == {}:
            out["type"] = "object"
            out["x-kubernetes-preserve-unknown-fields"] = True
        items = s.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.node(items, f"{path}[*]", allow_null=True)
        elif t == "array":
            out["items"] = {"x-kubernetes-preserve-unknown-fields": True}
        if s.get("uniqueItems") and "x-kubernetes-list-type" not in s:
            out["x-kubernetes-list-type"] = "set"
        if not out:
            out["x-kubernetes-preserve-unknown-fields"] = True  # Any
        return out

    def _finish(self, base: dict[str, Any], s: Mapping[str, Any], path: str) -> dict[str, Any]:
        """Apply the keywords of ``s`` (constraints, docs, markers, default) over ``base``."""
        out = copy.deepcopy(base)
        fmt = s.get("format")
        if fmt in SUPPORTED_FORMATS:
            out["format"] = fmt
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            value = s.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
                out[key] = True
        for key in _COPIED:
            if key not in s:
                continue
            if key == "x-kubernetes-validations":
                rules = [*out.get(key, []), *s[key]]
                out[key] = [r for i, r in enumerate(rules) if r not in rules[:i]]
            else:
                out[key] = copy.deepcopy(s[key])
        if s.get("x-kubernetes-int-or-string"):
            out = _int_or_string(out)
        for key in s:
            if key not in _IGNORED and key not in _COPIED and key not in (
                "$ref", "anyOf", "oneOf", "allOf", DEFINITION_KEY, "prefixItems",
            ):
                raise SchemaError(f"{path}: JSON schema keyword {key!r} has no CRD equivalent")
        if "default" in s:
            value = s["default"]
            if value is not None or out.get("nullable"):
                out["default"] = prune_default(value, out)
        return _ordered(out)


def _plain_type(s: Mapping[str, Any]) -> str | None:
    t = s.get("type")
    return t if isinstance(t, str) else None


def _int_or_string(out: dict[str, Any]) -> dict[str, Any]:
    out.pop("type", None)
    out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    out["x-kubernetes-int-or-string"] = True
    return out


_ORDER = ("description", "type", "format", "anyOf")


def _ordered(out: dict[str, Any]) -> dict[str, Any]:
    head = {k: out[k] for k in _ORDER if k in out}
    return {**head, **{k: v for k, v in out.items() if k not in head}}


def prune_default(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` without the fields ``schema`` would prune, and nulls where not allowed."""
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            known = schema.get("properties") or {}
            return {k: prune_default(v, known.get(k, {"x-kubernetes-preserve-unknown-fields":
                                                       True})) for k, v in value.items()}
        props = schema.get("properties")
        if isinstance(props, Mapping):
            return {
                k: prune_default(v, props[k]) for k, v in value.items()
                if k in props and (v is not None or props[k].get("nullable"))
            }
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return {k: prune_default(v, extra) for k, v in value.items()}
        return {}
    if isinstance(value, list):
        items = schema.get("items")
        return [prune_default(v, items) for v in value] if isinstance(items, Mapping) else value
    return value
