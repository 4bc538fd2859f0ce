"""OpenAPI v3 value validation of custom resources, worded like ``kube-openapi``.

``validate_value`` walks a decoded JSON value along a structural schema and reports what
``apiservervalidation.ValidateCustomResource`` plus the list-type check would: type, format,
enum, bounds, lengths, counts, pattern, multipleOf, required, nullable and junctors (set/map
list uniqueness is its own pass: listtype.py). On update it ratchets like Kubernetes: a
subtree equal to its correlated old value reports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.machinery.errors import Cause

from . import fielderrors as fe
from .formats import format_ok
from .goregexp import search_go

MISSING: Any = object()


def json_type(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _name(path: str) -> str:
    return path or "."


def _in_body(path: str, text: str) -> str:
    return f"{path} in body {text}" if path else text


def _num(v: Any) -> str:
    return fe.go_float(float(v)) if isinstance(v, int | float) and not isinstance(v, bool) \
        else str(v)


def _type_matches(expected: str, value: Any) -> bool:
    actual = json_type(value)
    if actual == expected:
        return True
    if expected == "number" and actual == "integer":
        return True
    # kube-openapi's IsFloat64AJSONInteger: whole and exactly representable (|x| <= 2^53)
    return expected == "integer" and actual == "number" and float(value).is_integer() \
        and abs(float(value)) <= 2**53


def validate_value(schema: Mapping[str, Any], value: Any, path: str = "",
                   old: Any = MISSING) -> list[Cause]:
    """Schema errors of ``value`` at ``path``; ``old`` is the correlated old value on update."""
    if old is not MISSING and old == value and json_type(old) == json_type(value):
        return []
    errs: list[Cause] = []
    stype = schema.get("type") if isinstance(schema.get("type"), str) else ""
    if value is None:
        if stype and not schema.get("nullable"):
            errs.append(fe.type_invalid(path, "null",
                                        _in_body(path, f'must be of type {stype}: "null"')))
        errs += _enum(schema, value, path)
        return errs
    if stype and not _type_matches(stype, value):
        actual = json_type(value)
        return [fe.type_invalid(path, actual,
                                _in_body(path, f"must be of type {stype}: {fe.go_quote(actual)}"))]
    if not stype and schema.get("x-kubernetes-int-or-string") and "anyOf" not in schema \
            and "allOf" not in schema and json_type(value) not in ("integer", "string"):
        actual = json_type(value)
        return [fe.type_invalid(path, actual, _in_body(
            path, f"must be of type integer,string: {fe.go_quote(actual)}"))]
    errs += _enum(schema, value, path)
    if isinstance(value, str):
        errs += _string(schema, value, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        errs += _number(schema, value, path)
    elif isinstance(value, list):
        errs += _array(schema, value, path, old)
    elif isinstance(value, dict):
        errs += _object(schema, value, path, old)
    errs += _junctors(schema, value, path)
    return errs


def _enum(schema: Mapping[str, Any], value: Any, path: str) -> list[Cause]:
    enum = schema.get("enum")
    if not isinstance(enum, list) or not enum:
        return []
    for allowed in enum:
        if allowed == value and json_type(allowed) in (json_type(value), "integer", "number") \
                and isinstance(allowed, bool) == isinstance(value, bool):
            return []
    shown = [a if isinstance(a, str) else _json(a) for a in enum]
    return [fe.not_supported(path, value, shown)]


def _json(v: Any) -> str:
    import json
    return json.dumps(v, separators=(",", ":"))


def _string(schema: Mapping[str, Any], value: str, path: str) -> list[Cause]:
    # like go-openapi's string validator: the first failing bound wins; format is separate
    errs: list[Cause] = []
    max_length = schema.get("maxLength")
    min_length = schema.get("minLength")
    pattern = schema.get("pattern")
    if isinstance(max_length, int) and len(value) > max_length:
        errs.append(fe.too_long(path, max_length))
    elif isinstance(min_length, int) and len(value) < min_length:
        errs.append(fe.invalid(path, value,
                               _in_body(path, f"should be at least {min_length} chars long")))
    elif isinstance(pattern, str) and pattern and not search_go(pattern, value):
        errs.append(fe.invalid(path, value, _in_body(path, f"should match '{pattern}'")))
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt and schema.get("type") == "string" \
            and not format_ok(fmt, value):
        errs.append(fe.type_invalid(path, value, _in_body(
            path, f"must be of type {fmt}: {fe.go_quote(value)}")))
    return errs


def _number(schema: Mapping[str, Any], value: float, path: str) -> list[Cause]:
    # like go-openapi's number validator: multipleOf, maximum, minimum; the first failure wins
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and multiple > 0 \
            and not float(value / multiple).is_integer():
        return [fe.invalid(path, value, _in_body(
            path, f"should be a multiple of {_num(multiple)}"))]
    maximum = schema.get("maximum")
    if isinstance(maximum, int | float):
        if schema.get("exclusiveMaximum") and value >= maximum:
            return [fe.invalid(path, value, _in_body(path, f"should be less than {_num(maximum)}"))]
        if value > maximum:
            return [fe.invalid(path, value, _in_body(
                path, f"should be less than or equal to {_num(maximum)}"))]
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float):
        if schema.get("exclusiveMinimum") and value <= minimum:
            return [fe.invalid(path, value, _in_body(
                path, f"should be greater than {_num(minimum)}"))]
        if value < minimum:
            return [fe.invalid(path, value, _in_body(
                path, f"should be greater than or equal to {_num(minimum)}"))]
    return []


def _array(schema: Mapping[str, Any], value: list[Any], path: str, old: Any) -> list[Cause]:
    errs: list[Cause] = []
    max_items = schema.get("maxItems")
    if isinstance(max_items, int) and len(value) > max_items:
        errs.append(fe.too_many(path, len(value), max_items))
    min_items = schema.get("minItems")
    if isinstance(min_items, int) and len(value) < min_items:
        errs.append(fe.invalid(path, value, _in_body(
            path, f"should have at least {min_items} items")))
    if schema.get("uniqueItems") and any(value[i] in value[:i] for i in range(len(value))):
        errs.append(fe.invalid(path, value, _in_body(path, "shouldn't contain duplicates")))
    items = schema.get("items")
    list_type = schema.get("x-kubernetes-list-type")
    map_keys = list(schema.get("x-kubernetes-list-map-keys") or [])
    old_list = old if isinstance(old, list) else None
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            errs += validate_value(items, item, fe.index(path, i),
                                   _correlate_item(list_type, map_keys, item, old_list))
    return errs


def _map_key(keys: list[str], item: Any) -> tuple[Any, ...] | None:
    if not isinstance(item, dict):
        return None
    return tuple((k in item, repr(item.get(k))) for k in keys)


def _correlate_item(list_type: Any, keys: list[str], item: Any, old_list: list[Any] | None
                    ) -> Any:
    if old_list is None:
        return MISSING
    if list_type == "map" and keys:
        wanted = _map_key(keys, item)
        for o in old_list:
            if _map_key(keys, o) == wanted:
                return o
    elif list_type == "set" and item in old_list:
        return item
    return MISSING


def _object(schema: Mapping[str, Any], value: dict[str, Any], path: str,
            old: Any) -> list[Cause]:
    errs: list[Cause] = []
    for name in schema.get("required") or []:
        if name not in value:
            errs.append(fe.required(fe.child(path, name)))
    max_props = schema.get("maxProperties")
    if isinstance(max_props, int) and len(value) > max_props:
        errs.append(fe.too_many(path, len(value), max_props))
    min_props = schema.get("minProperties")
    if isinstance(min_props, int) and len(value) < min_props:
        errs.append(fe.invalid(path, value, _in_body(
            path, f"should have at least {min_props} properties")))
    props = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    old_map = old if isinstance(old, dict) else {}
    for k, v in value.items():
        sub = props.get(k)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if isinstance(sub, Mapping):
            errs += validate_value(sub, v, fe.child(path, k), old_map.get(k, MISSING))
    return errs


def _junctors(schema: Mapping[str, Any], value: Any, path: str) -> list[Cause]:
    errs: list[Cause] = []
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        results = [validate_value(s, value, path) for s in any_of if isinstance(s, Mapping)]
        if all(results):
            errs.append(fe.invalid(path, "", _in_body(
                path, "must validate at least one schema (anyOf)")))
            fewest: list[Cause] = min(results, key=len)
            errs += fewest
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        results = [validate_value(s, value, path) for s in one_of if isinstance(s, Mapping)]
        if sum(1 for r in results if not r) != 1:
            errs.append(fe.invalid(path, "", _in_body(
                path, "must validate one and only one schema (oneOf)")))
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        results = [validate_value(s, value, path) for s in all_of if isinstance(s, Mapping)]
        failed = [r for r in results if r]
        if failed:
            for r in failed:
                errs += r
            errs.append(fe.invalid(path, "", _in_body(
                path, "must validate all the schemas (allOf)")))
    not_schema = schema.get("not")
    if isinstance(not_schema, Mapping) and not validate_value(not_schema, value, path):
        errs.append(fe.invalid(path, "", _in_body(path, "must not validate the schema (not)")))
    return errs
