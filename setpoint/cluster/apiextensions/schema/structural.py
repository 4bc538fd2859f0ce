"""Structural schema rules for a CRD's ``openAPIV3Schema``.

Mirrors ``apiextensions-apiserver/pkg/apiserver/schema`` (``ValidateStructural``: invariants
and completeness) and the per-node OpenAPI checks of
``ValidateCustomResourceDefinitionOpenAPISchema``
(forbidden keywords, list/map types, metadata restrictions, x-kubernetes-validations fields).
Every function returns the causes under the schema path it was given, e.g.
``spec.validation.openAPIV3Schema.properties[spec].type``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from setpoint.machinery.errors import Cause

from . import fielderrors as fe
from .goregexp import GoRegexpError, compile_go

OPENAPI_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
META_FIELDS = {"metadata", "kind", "apiVersion"}
SUPPORTED_RULE_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid",
                          "FieldValueRequired"]
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]
_ROOT_LEVEL, _ITEM_LEVEL, _FIELD_LEVEL = range(3)
# keywords a value validation (allOf/anyOf/oneOf/not) must not carry, by reason wording
_NESTED_FORBIDDEN = [
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
]
_ALLOWED_AT_ROOT_WITH_STATUS = {
    "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "multipleOf", "required", "items", "properties", "externalDocs", "example",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations",
}


def _truthy(raw: Mapping[str, Any], name: str) -> bool:
    value = raw.get(name)
    return bool(value) and value not in ({}, [])


def _stype(raw: Mapping[str, Any]) -> str:
    t = raw.get("type")
    return t if isinstance(t, str) else ""


def _schema_children(raw: Mapping[str, Any]) -> dict[str, Any]:
    props = raw.get("properties")
    return props if isinstance(props, dict) else {}


def _additional(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    ap = raw.get("additionalProperties")
    return ap if isinstance(ap, Mapping) else None


# -- ValidateStructural -------------------------------------------------------------------------

def validate_structural(raw: Mapping[str, Any], path: str) -> list[Cause]:
    """The invariants and completeness of a structural schema (``ValidateStructural``),
    sorted by their ``field: message`` text as ``ValidateStructuralWithOptions`` sorts them
    (apiextensions v0.32 pkg/apiserver/schema/validation.go)."""
    errs = _invariants(raw, _ROOT_LEVEL, path)
    errs += _completeness_of(raw, raw, path, path)
    return sorted(errs, key=lambda c: f"{c.field}: {c.message}")


def _invariants(s: Mapping[str, Any] | None, lvl: int, path: str) -> list[Cause]:
    if s is None:
        return []
    errs: list[Cause] = []
    stype = _stype(s)
    items = s.get("items")
    if stype == "array" and items is None:
        errs.append(fe.required(fe.child(path, "items"), "must be specified"))
    if isinstance(items, Mapping):
        errs += _invariants(items, _ITEM_LEVEL, fe.child(path, "items"))
    for name, prop in _schema_children(s).items():
        if isinstance(prop, Mapping):
            errs += _invariants(prop, _FIELD_LEVEL, fe.key(fe.child(path, "properties"), name))
    if "additionalProperties" in s and s["additionalProperties"] is not None:
        if lvl == _ROOT_LEVEL:
            errs.append(fe.forbidden(fe.child(path, "additionalProperties"),
                                     "must not be used at the root"))
        ap = _additional(s)
        if ap is not None:
            errs += _invariants(ap, _FIELD_LEVEL, fe.child(path, "additionalProperties"))

    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        errs.append(fe.invalid(fe.child(path, "x-kubernetes-preserve-unknown-fields"), True,
                               "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(fe.invalid(fe.child(path, "x-kubernetes-embedded-resource"), True,
                               "must be false if x-kubernetes-int-or-string is true"))

    any_of = s.get("anyOf")
    skip_any_of = _is_int_or_string_any_of(any_of)
    all_of = s.get("allOf")
    skip_first_all_of_any_of = (isinstance(all_of, list) and bool(all_of)
                                and isinstance(all_of[0], Mapping)
                                and _is_int_or_string_any_of(all_of[0].get("anyOf")))
    errs += _value_validation(s, skip_any_of, skip_first_all_of_any_of, lvl, path)

    check_metadata = lvl == _ROOT_LEVEL or embedded
    if embedded and stype != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        errs.append(fe.required(fe.child(path, "type"), detail) if not stype
                    else fe.invalid(fe.child(path, "type"), stype, detail))
    elif not stype and not int_or_string and not preserve:
        detail = {_ROOT_LEVEL: "must not be empty at the root",
                  _ITEM_LEVEL: "must not be empty for specified array items",
                  _FIELD_LEVEL: "must not be empty for specified object fields"}[lvl]
        errs.append(fe.required(fe.child(path, "type"), detail))
    if embedded and s.get("additionalProperties") is not None:
        errs.append(fe.forbidden(fe.child(path, "additionalProperties"),
                                 "must not be used if x-kubernetes-embedded-resource is set"))
    if lvl == _ROOT_LEVEL and stype and stype != "object":
        errs.append(fe.invalid(fe.child(path, "type"), stype, "must be object at the root"))

    props = _schema_children(s)
    for meta_key in ("kind", "apiVersion"):
        sub = props.get(meta_key)
        if isinstance(sub, Mapping) and check_metadata and _stype(sub) != "string":
            errs.append(fe.invalid(fe.child(fe.key(fe.child(path, "properties"), meta_key), "type"),
                                   _stype(sub), "must be string"))
    metadata = props.get("metadata")
    if isinstance(metadata, Mapping):
        errs += _metadata_invariants(metadata, check_metadata, lvl,
                                     fe.key(fe.child(path, "properties"), "metadata"))
    if embedded and not preserve and not props:
        errs.append(fe.required(
            fe.child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without "
            "x-kubernetes-preserve-unknown-fields"))
    return errs


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and [dict(x) if isinstance(x, Mapping) else x
                                         for x in any_of] == _INT_OR_STRING_ANY_OF


def _metadata_invariants(s: Mapping[str, Any], check_metadata: bool, lvl: int,
                         path: str) -> list[Cause]:
    errs = []
    if check_metadata and _stype(s) != "object":
        errs.append(fe.invalid(fe.child(path, "type"), _stype(s), "must be object"))
    if lvl == _ROOT_LEVEL:
        # only name and generateName may be restricted; anything else is implicitly specified
        rest = {k: v for k, v in s.items() if k not in ("type", "default")}
        props = rest.get("properties")
        if isinstance(props, Mapping) and props and set(props) <= {"name", "generateName"}:
            rest.pop("properties")
        if any(v not in (None, False, "", [], {}) for v in rest.values()):
            errs.append(fe.forbidden(path, "must not specify anything other than name and "
                                           "generateName, but metadata is implicitly specified"))
    return errs


def _value_validation(v: Mapping[str, Any], skip_any_of: bool, skip_first_all_of_any_of: bool,
                      lvl: int, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if not skip_any_of:
        for i, sub in enumerate(v.get("anyOf") or []):
            errs += _nested(sub, False, lvl, fe.index(fe.child(path, "anyOf"), i))
    for i, sub in enumerate(v.get("allOf") or []):
        errs += _nested(sub, skip_first_all_of_any_of and i == 0, lvl,
                        fe.index(fe.child(path, "allOf"), i))
    for i, sub in enumerate(v.get("oneOf") or []):
        errs += _nested(sub, False, lvl, fe.index(fe.child(path, "oneOf"), i))
    if isinstance(v.get("not"), Mapping):
        errs += _nested(v["not"], False, lvl, fe.child(path, "not"))
    pattern = v.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            compile_go(pattern)
        except GoRegexpError as exc:
            errs.append(fe.invalid(fe.child(path, "pattern"), pattern,
                                   f"must be a valid regular expression, but isn't: {exc}"))
    return errs


def _nested(v: Any, skip_any_of: bool, lvl: int, path: str) -> list[Cause]:
    if not isinstance(v, Mapping):
        return []
    errs = _value_validation(v, skip_any_of, False, lvl, path)
    if isinstance(v.get("items"), Mapping):
        errs += _nested(v["items"], False, lvl, fe.child(path, "items"))
    for name, prop in _schema_children(v).items():
        errs += _nested(prop, False, _FIELD_LEVEL, fe.key(fe.child(path, "properties"), name))
    for keyword, detail in _NESTED_FORBIDDEN:
        if keyword == "default":
            if v.get("default") is not None:
                errs.append(fe.forbidden(fe.child(path, keyword), detail))
        elif _truthy(v, keyword):
            errs.append(fe.forbidden(fe.child(path, keyword), detail))
    if "additionalProperties" in v:
        errs.append(fe.forbidden(fe.child(path, "additionalProperties"),
                                 "must be undefined to be structural"))
    if "metadata" in _schema_children(v):
        errs.append(fe.forbidden(fe.key(fe.child(path, "properties"), "metadata"),
                                 "must not be specified in a nested context"))
    return errs


def _completeness_of(v: Mapping[str, Any], s: Mapping[str, Any] | None, s_path: str,
                     v_path: str) -> list[Cause]:
    errs: list[Cause] = []
    if isinstance(v.get("not"), Mapping):
        errs += _nested_completeness(v["not"], s, s_path, fe.child(v_path, "not"))
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(v.get(junctor) or []):
            if isinstance(sub, Mapping):
                errs += _nested_completeness(sub, s, s_path, fe.index(fe.child(v_path, junctor), i))
    # recurse into the structural part, whose own value validations must be complete too
    if v is s and s is not None:
        if isinstance(s.get("items"), Mapping):
            errs += _completeness_of(s["items"], s["items"], fe.child(s_path, "items"),
                                     fe.child(s_path, "items"))
        for name, prop in _schema_children(s).items():
            if isinstance(prop, Mapping):
                p = fe.key(fe.child(s_path, "properties"), name)
                errs += _completeness_of(prop, prop, p, p)
        ap = _additional(s)
        if ap is not None:
            p = fe.child(s_path, "additionalProperties")
            errs += _completeness_of(ap, ap, p, p)
    return errs


def _nested_completeness(v: Mapping[str, Any], s: Mapping[str, Any] | None, s_path: str,
                         v_path: str) -> list[Cause]:
    if s is None:
        return [fe.required(s_path, f"because it is defined in {v_path}")]
    # nested junctors are checked against the same structural node
    errs = _completeness_of(v, s, s_path, v_path)
    if isinstance(v.get("items"), Mapping):
        items = s.get("items") if isinstance(s.get("items"), Mapping) else None
        errs += _nested_completeness(v["items"], items, fe.child(s_path, "items"),
                                     fe.child(v_path, "items"))
    s_props = _schema_children(s)
    for name, prop in _schema_children(v).items():
        if not isinstance(prop, Mapping):
            continue
        sp = fe.key(fe.child(s_path, "properties"), name)
        vp = fe.key(fe.child(v_path, "properties"), name)
        if name not in s_props:
            errs.append(fe.required(sp, f"because it is defined in {vp}"))
        else:
            errs += _nested_completeness(prop, s_props[name], sp, vp)
    return errs


# -- per-node OpenAPI checks ----------------------------------------------------------------------

@dataclass(frozen=True)
class NodeContext:
    """What the walk knows about a node's position (specStandardValidatorV3's state)."""

    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_resource_meta: bool = False
    uncorrelatable_path: str | None = None
    require_atomic_set_type: bool = True
    require_map_list_keys_validation: bool = True
    # the old CRD's rules and messageExpressions (validation.go preexistingExpressions):
    # what an update keeps needs no new syntax check (cel._cel_go_syntax)
    preexisting_expressions: frozenset[str] = frozenset()

    def forbid_defaults(self, reason: str) -> NodeContext:
        return replace(self, allow_defaults=False, disallow_defaults_reason=reason)

    def forbid_old_self(self, path: str) -> NodeContext:
        return self if self.uncorrelatable_path is not None else replace(
            self, uncorrelatable_path=path)


def root_status_restrictions(raw: Mapping[str, Any], path: str) -> list[Cause]:
    """With a status subresource only some keywords may sit at the schema root."""
    for k, value in raw.items():
        if value in (None, False, "", [], {}, 0):
            continue
        if k == "type":
            if value != "object":
                return [fe.invalid(fe.child(path, "type"), value,
                                   'only "object" is allowed as the type at the root of the '
                                   "schema if the status subresource is enabled")]
            continue
        if k not in _ALLOWED_AT_ROOT_WITH_STATUS:
            return [fe.invalid(path, "object", "only [Description Type Format Title Maximum "
                               "ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength "
                               "Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
                               "Properties ExternalDocs Example XPreserveUnknownFields "
                               "XValidations] fields are allowed at the root of the schema if "
                               "the status subresource is enabled")]
    return []


def node_checks(s: Mapping[str, Any], path: str, ctx: NodeContext) -> list[Cause]:
    """The checks of one schema node (``specStandardValidatorV3.validate`` and friends)."""
    errs: list[Cause] = []
    stype = s.get("type")
    if isinstance(stype, str) and stype and stype not in OPENAPI_TYPES:
        errs.append(fe.not_supported(fe.child(path, "type"), stype, OPENAPI_TYPES))
    if s.get("default") is not None and not ctx.allow_defaults:
        detail = "must not be set"
        if ctx.disallow_defaults_reason:
            detail += " " + ctx.disallow_defaults_reason
        errs.append(fe.forbidden(fe.child(path, "default"), detail))
    for keyword, detail in (("id", "id is not supported"),
                            ("additionalItems", "additionalItems is not supported"),
                            ("patternProperties", "patternProperties is not supported"),
                            ("definitions", "definitions is not supported"),
                            ("dependencies", "dependencies is not supported"),
                            ("$ref", "$ref is not supported")):
        if s.get(keyword) not in (None, "", {}):
            errs.append(fe.forbidden(fe.child(path, keyword), detail))
    if stype == "null":
        errs.append(fe.forbidden(fe.child(path, "type"),
                                 "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        errs.append(fe.forbidden(fe.child(path, "items"),
                                 "items must be a schema object and not an array"))
    if ctx.inside_resource_meta and s.get("x-kubernetes-embedded-resource"):
        errs.append(fe.forbidden(fe.child(path, "x-kubernetes-embedded-resource"),
                                 "must not be used inside of resource meta"))
    if s.get("uniqueItems") is True:
        errs.append(fe.forbidden(fe.child(path, "uniqueItems"), "uniqueItems cannot be set to "
                                 "true since the runtime complexity becomes quadratic"))
    ap = s.get("additionalProperties")
    if ap is not None and _schema_children(s) and (ap is False or isinstance(ap, Mapping)):
        errs.append(fe.forbidden(fe.child(path, "additionalProperties"),
                                 "additionalProperties and properties are mutual exclusive"))
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(fe.invalid(fe.child(path, "x-kubernetes-preserve-unknown-fields"), False,
                               "must be true or undefined"))
    errs += _map_and_list_type_checks(s, path, ctx)
    errs += _rule_field_checks(s, path)
    return errs


def _map_and_list_type_checks(s: Mapping[str, Any], path: str, ctx: NodeContext) -> list[Cause]:
    errs: list[Cause] = []
    stype = _stype(s)
    map_type = s.get("x-kubernetes-map-type")
    list_type = s.get("x-kubernetes-list-type")
    map_keys = s.get("x-kubernetes-list-map-keys") or []
    items = s.get("items") if isinstance(s.get("items"), Mapping) else None
    if map_type is not None and stype != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        errs.append(fe.required(fe.child(path, "type"), detail) if not stype
                    else fe.invalid(fe.child(path, "type"), stype, detail))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(fe.not_supported(fe.child(path, "x-kubernetes-map-type"), map_type,
                                     ["atomic", "granular"]))
    if list_type is not None and stype != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        errs.append(fe.required(fe.child(path, "type"), detail) if not stype
                    else fe.invalid(fe.child(path, "type"), stype, detail))
    elif ctx.require_atomic_set_type and list_type == "set" and items is not None:
        item_type = _stype(items)
        if item_type == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            errs.append(fe.invalid(fe.child(fe.child(path, "items"), "x-kubernetes-list-type"),
                                   items.get("x-kubernetes-list-type"),
                                   _SET_ITEMS_ATOMIC))
        if item_type == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errs.append(fe.invalid(fe.child(fe.child(path, "items"), "x-kubernetes-map-type"),
                                   items.get("x-kubernetes-list-type"),
                                   _SET_ITEMS_ATOMIC))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(fe.not_supported(fe.child(path, "x-kubernetes-list-type"), list_type,
                                     ["atomic", "set", "map"]))
    if map_keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errs.append(fe.required(fe.child(path, "x-kubernetes-list-type"), detail))
        elif list_type != "map":
            errs.append(fe.invalid(fe.child(path, "x-kubernetes-list-type"), list_type, detail))
    if list_type == "map":
        if not map_keys:
            errs.append(fe.required(fe.child(path, "x-kubernetes-list-map-keys"),
                                    "must not be empty if x-kubernetes-list-type is map"))
        if s.get("items") is None:
            errs.append(fe.required(fe.child(path, "items"),
                                    "must have a schema if x-kubernetes-list-type is map"))
        elif items is None:
            errs.append(fe.invalid(fe.child(path, "items"), s.get("items"),
                                   _MAP_ONE_SCHEMA))
        elif _stype(items) != "object":
            errs.append(fe.invalid(fe.child(fe.child(path, "items"), "type"), _stype(items),
                                   _MAP_ITEMS_OBJECT))
        else:
            seen: set[str] = set()
            item_props = _schema_children(items)
            for k in map_keys:
                if k in item_props:
                    if _stype(item_props[k]) in ("array", "object"):
                        errs.append(fe.invalid(
                            fe.child(fe.key(fe.child(fe.child(path, "items"), "properties"), k),
                                     "type"), _stype(items),
                            _MAP_KEY_SCALAR))
                else:
                    errs.append(fe.invalid(fe.child(path, "x-kubernetes-list-map-keys"), map_keys,
                                           "entries must all be names of item properties"))
                if k in seen:
                    errs.append(fe.invalid(fe.child(path, "x-kubernetes-list-map-keys"), map_keys,
                                           "must not contain duplicate entries"))
                seen.add(k)
    if ctx.require_map_list_keys_validation and items is not None and list_type in ("set", "map"):
        if items.get("nullable"):
            errs.append(fe.forbidden(fe.child(fe.child(path, "items"), "nullable"),
                                     _NOT_NULLABLE + list_type))
        if list_type == "map":
            required = set(items.get("required") or [])
            item_props = _schema_children(items)
            for k in map_keys:
                prop = item_props.get(k)
                if not isinstance(prop, Mapping):
                    continue
                kp = fe.key(fe.child(fe.child(path, "items"), "properties"), k)
                if k not in required and prop.get("default") is None:
                    errs.append(fe.required(fe.child(kp, "default"),
                                            "this property is in x-kubernetes-list-map-keys, so "
                                            "it must have a default or be a required property"))
                if prop.get("nullable"):
                    errs.append(fe.forbidden(fe.child(kp, "nullable"), _KEY_NOT_NULLABLE))
    return errs


_SET_ITEMS_ATOMIC = "must be atomic as item of a list with x-kubernetes-list-type=set"
_MAP_KEY_SCALAR = "must be a scalar type if parent array's x-kubernetes-list-type is map"
_MAP_ONE_SCHEMA = "must only have a single schema if x-kubernetes-list-type is map"
_MAP_ITEMS_OBJECT = "must be object if parent array's x-kubernetes-list-type is map"
_NOT_NULLABLE = "cannot be nullable when x-kubernetes-list-type is "
_KEY_NOT_NULLABLE = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
_NEWLINES = re.compile(r"[\n\r]+")


def _rule_field_checks(s: Mapping[str, Any], path: str) -> list[Cause]:
    """The static checks of x-kubernetes-validations entries (not their CEL compilation)."""
    from .fieldpath import valid_field_path  # local: fieldpath imports nothing of ours back

    errs: list[Cause] = []
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        rp = fe.index(fe.child(path, "x-kubernetes-validations"), i)
        text = str(rule.get("rule") or "")
        message = rule.get("message")
        msg = str(message or "")
        trimmed_msg = msg.strip()
        if not text.strip():
            errs.append(fe.required(fe.child(rp, "rule"), "rule is not specified"))
        elif msg and not trimmed_msg:
            errs.append(fe.invalid(fe.child(rp, "message"), msg,
                                   "message must be non-empty if specified"))
        elif _NEWLINES.search(trimmed_msg):
            errs.append(fe.invalid(fe.child(rp, "message"), msg,
                                   "message must not contain line breaks"))
        elif _NEWLINES.search(text.strip()) and not trimmed_msg:
            errs.append(fe.required(fe.child(rp, "message"),
                                    "message must be specified if rule contains line breaks"))
        msg_expr = str(rule.get("messageExpression") or "")
        if msg_expr and not msg_expr.strip():
            errs.append(fe.required(fe.child(rp, "messageExpression"),
                                    "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in SUPPORTED_RULE_REASONS:
            errs.append(fe.not_supported(fe.child(rp, "reason"), reason, SUPPORTED_RULE_REASONS))
        fp = rule.get("fieldPath")
        if fp:
            if not str(fp).strip():
                errs.append(fe.invalid(fe.child(rp, "fieldPath"), fp,
                                       "fieldPath must be non-empty if specified"))
            if _NEWLINES.search(str(fp)):
                errs.append(fe.invalid(fe.child(rp, "fieldPath"), fp,
                                       "fieldPath must not contain line breaks"))
            if valid_field_path(str(fp), s) is None:
                errs.append(fe.invalid(fe.child(rp, "fieldPath"), fp,
                                       "fieldPath must be a valid path"))
    return errs
