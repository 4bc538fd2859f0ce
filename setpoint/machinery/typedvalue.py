"""Typed values: how a schema shapes an object into field paths, as structured-merge-diff's
``typed`` package does (``TypedValue.ToFieldSet``, the schema atom of a node, the path
element of an associative list's item).

A type reference is a ``Schema`` or ``None``; ``None`` is structured-merge-diff's "deduced"
type, used for kinds without a schema and under x-kubernetes-preserve-unknown-fields: maps
are granular with every key an element, lists are atomic.
"""

from __future__ import annotations

import json
from typing import Any

from setpoint.machinery.fieldpath import (
    MEMBER,
    FieldSet,
    Node,
    Path,
    PathElement,
    element_string,
    field,
    field_name,
    index,
    key,
    path_string,
    string_key,
    value,
)
from setpoint.machinery.gofmt import format_v, go_interface, go_type

TypeRef = Any  # Schema | None; Any keeps this module free of a schema import cycle

SCALAR, MAP, LIST = "scalar", "map", "list"
_NO_ELEMENT: Any = object()
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class SchemaError(Exception):
    """An object does not fit its schema; ``path`` says where."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path_string(path)}: {message}" if path else message)
        self.path = path
        self.message = message


class Shape:
    """What structured-merge-diff's schema atom says about one node."""

    __slots__ = ("atomic", "element", "fields", "key_defaults", "keys", "kind", "other_fields")

    def __init__(self, kind: str, *, fields: dict[str, TypeRef] | None = None,
                 element: TypeRef = None, atomic: bool = False, keys: tuple[str, ...] = (),
                 key_defaults: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.fields = fields or {}
        self.element = element
        self.atomic = atomic
        self.keys = keys
        self.key_defaults = key_defaults or {}
        # the type of a map's fields not in ``fields``: ``child_type``, precomputed for the
        # walks that look it up per field
        self.other_fields: TypeRef = None if element is _NO_ELEMENT else element


_DEDUCED_MAP = Shape(MAP, element=None)
_ATOMIC_LIST = Shape(LIST, element=None, atomic=True)
_SCALAR = Shape(SCALAR)
_shape_cache: dict[tuple[int, bool], tuple[Any, Shape | None]] = {}


def resolve(tr: TypeRef, v: Any = None, *, resource: bool = False) -> Shape:
    """The shape of a value of type ``tr``; deduced types take their shape from ``v``."""
    shape = _schema_shape(tr, resource) if tr is not None else None
    if shape is not None:
        return shape
    if isinstance(v, dict):
        return _DEDUCED_MAP
    if isinstance(v, list):
        return _ATOMIC_LIST
    return _SCALAR


def _schema_shape(schema: Any, resource: bool) -> Shape | None:
    raw = schema.raw
    cache_key = (id(raw), resource)
    hit = _shape_cache.get(cache_key)
    if hit is not None and hit[0] is raw:
        return hit[1]
    shape = _build_shape(schema, resource or schema.embedded_resource)
    _shape_cache[cache_key] = (raw, shape)  # holding raw keeps its id from being reused
    return shape


def _build_shape(schema: Any, resource: bool) -> Shape | None:
    t = schema.type
    if schema.int_or_string or t in ("string", "integer", "number", "boolean"):
        return _SCALAR
    if t == "array":
        lt = schema.list_type
        element = schema.element()
        if lt not in ("set", "map"):
            return Shape(LIST, element=element, atomic=True)
        keys = schema.list_map_keys if lt == "map" else ()
        return Shape(LIST, element=element, keys=keys, key_defaults=_key_defaults(element, keys))
    if t == "object" or resource:
        fields: dict[str, TypeRef] = dict(schema.properties)
        if resource:
            _add_resource_fields(fields)
        extra = schema.additional_properties
        if extra is not None:
            element = extra
        elif schema.preserve_unknown_fields or not fields:
            element = None
        else:
            element = _NO_ELEMENT
        return Shape(MAP, fields=fields, element=element, atomic=schema.map_type == "atomic")
    return None


def _add_resource_fields(fields: dict[str, TypeRef]) -> None:
    """Custom resources and embedded resources always carry typed apiVersion/kind/metadata."""
    from setpoint.machinery.schema import Schema, definitions

    for name in ("apiVersion", "kind"):
        fields.setdefault(name, Schema({"type": "string"}))
    meta = fields.get("metadata")
    if meta is None or not meta.properties:
        fields["metadata"] = definitions().get(_OBJECT_META)


def _key_defaults(element: TypeRef, keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if element is None:
        return out
    for k in keys:
        prop = element.field(k)
        if prop is None:
            continue
        if "default" in prop.raw:
            out[k] = prop.raw["default"]
        elif k == "protocol" and ('Defaults to "TCP"' in prop.description
                                  or "Default is TCP" in prop.description):
            # the built-in definitions we load lost their defaults; this is the one list key
            # that has one (container and service ports)
            out[k] = "TCP"
    return out


def child_type(shape: Shape, pe: PathElement) -> TypeRef:
    """The type of the child ``pe`` of a node of ``shape`` (``None`` when deduced)."""
    if shape.kind == MAP:
        if pe.startswith("f:"):
            return shape.fields.get(pe[2:], shape.other_fields)
        return shape.other_fields
    if shape.kind == LIST:
        return shape.element
    return None


def item_element(shape: Shape, item: Any, path: Path = ()) -> PathElement:
    """The path element of an item of an associative list (``k:`` or ``v:``)."""
    if shape.keys:
        # structured-merge-diff's wording (typed/helpers.go), Go's %q included
        if item is None:
            raise SchemaError(path, "associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise SchemaError(path, "associative list with keys may not have non-map elements")
        if len(shape.keys) == 1:
            name = shape.keys[0]
            v = item.get(name)
            if v.__class__ is str:  # (most keys: a name, a type, a uid)
                return string_key(name, v)
        parts = []
        for k in shape.keys:
            if k in item:
                parts.append((k, item[k]))
            elif k in shape.key_defaults:
                parts.append((k, shape.key_defaults[k]))
            else:
                raise SchemaError(path, f"associative list with keys has an element that omits "
                                        f"key field {json.dumps(k)} (and doesn't have default "
                                        f"value)")
        return key(parts)
    if isinstance(item, dict):
        raise SchemaError(path, "associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise SchemaError(path, "not supported: associative list with lists as elements")
    if item is None:
        raise SchemaError(path, "associative list without keys has an element that's an "
                                "explicit null")
    return value(item)


def fieldset_of(schema: TypeRef, obj: Any, *, strict: bool = False,
                typed: bool = False) -> FieldSet:
    """Every leaf field and list/map item of ``obj`` (structured-merge-diff's ``ToFieldSet``).

    With ``strict``, fields the schema does not declare and duplicate list keys raise
    ``SchemaError`` (what apply demands of a configuration); otherwise they are tracked as
    deduced fields and the first duplicate wins. With ``typed``, an associative list item
    without its keys raises (what ``ObjectToTyped`` with ``AllowDuplicates`` demands of a
    live object); otherwise, and unless ``strict``, it is skipped.
    """
    root: Node = {}
    _fill(schema, obj, root, (), strict, resource=True, typed=typed)
    return FieldSet(root)


def _fill(tr: TypeRef, v: Any, node: Node, path: Path, strict: bool,
          resource: bool = False, typed: bool = False) -> bool:
    """Adds the paths beneath ``v`` to ``node``; True when ``v`` itself is a leaf."""
    shape = resolve(tr, v, resource=resource)
    if strict and v is not None and tr is not None:
        _check_value_type(tr, shape, v, path)
        if shape.atomic:  # (owned whole, but its contents are validated all the same)
            _check_atomic_contents(shape, v, path)
    if shape.kind == SCALAR or shape.atomic:
        return True
    if shape.kind == MAP:
        if not isinstance(v, dict):
            return v is not None
        for k, cv in v.items():
            declared = k in shape.fields
            pe = field(k)
            if declared:
                ctr = shape.fields[k]
            elif shape.element is _NO_ELEMENT:
                if strict:
                    raise SchemaError((*path, pe), "field not declared in schema")
                ctr = None
            else:
                ctr = shape.element
            child = node.get(pe) or {}
            leaf = _fill(ctr, cv, child, (*path, pe), strict, typed=typed)
            if leaf or not declared or cv is None or (isinstance(cv, dict) and not cv):
                child[MEMBER] = {}
            if child:
                node[pe] = child
        return False
    if not isinstance(v, list):
        return v is not None
    seen: set[str] = set()
    for i, item in enumerate(v):
        try:
            pe = item_element(shape, item, path)
        except SchemaError as e:
            if strict or typed:  # typed/validate.go's visitListItems wording
                raise SchemaError(path, f"element {i}: {e.message}") from None
            continue
        if pe in seen:
            if strict:
                raise SchemaError(path, f"duplicate entries for key {element_string(pe)}")
            continue
        seen.add(pe)
        child = {}
        _fill(shape.element, item, child, (*path, pe), strict, typed=typed)
        child[MEMBER] = {}
        node[pe] = child
    return False


_NUMERIC = ("integer", "number")


def _check_value_type(tr: Any, shape: Shape, v: Any, path: Path) -> None:
    """structured-merge-diff's validation of a value against its atom (typed/validate.go
    ``validateScalar``, value/ ``mapValue`` and ``listValue``), in its words: the value is
    a ``*valueUnstructured`` holding what sigs.k8s.io/yaml decoded (numbers as float64),
    printed with ``%#v`` for strings, ``%T`` for numbers and ``%v`` otherwise."""
    if shape.kind == MAP:
        if not isinstance(v, dict):
            raise SchemaError(path, f"expected map, got &{{{format_v(_as_decoded(v))}}}")
        return
    if shape.kind == LIST:
        if not isinstance(v, list):
            raise SchemaError(path, f"expected list, got &{{{format_v(_as_decoded(v))}}}")
        return
    t = getattr(tr, "type", None)
    if getattr(tr, "int_or_string", False) or t is None:
        if isinstance(v, dict | list):  # (an untyped scalar takes any scalar)
            raise SchemaError(path, f"expected any scalar, got &{{{format_v(_as_decoded(v))}}}")
        return
    if t == "string" and not isinstance(v, str):
        raise SchemaError(path, "expected string, got &value.valueUnstructured{Value:"
                                f"{go_interface(_as_decoded(v))}}}")
    if t in _NUMERIC and (isinstance(v, bool) or not isinstance(v, int | float)):
        raise SchemaError(path, f"expected numeric (int or float), got {go_type(v)}")
    if t == "boolean" and not isinstance(v, bool):
        raise SchemaError(path, f"expected boolean, got &{{{format_v(_as_decoded(v))}}}")


def _check_atomic_contents(shape: Shape, v: Any, path: Path) -> None:
    """The value checks beneath an atomic map or list (typed/validate.go walks them too)."""
    if shape.kind == MAP and isinstance(v, dict):
        for k, cv in v.items():
            ctr = shape.fields.get(k, shape.other_fields)
            if cv is not None and ctr is not None:
                child = resolve(ctr, cv)
                _check_value_type(ctr, child, cv, (*path, field(k)))
                _check_atomic_contents(child, cv, (*path, field(k)))
    elif shape.kind == LIST and isinstance(v, list) and shape.element is not None:
        for i, item in enumerate(v):
            if item is not None:
                child = resolve(shape.element, item)
                _check_value_type(shape.element, child, item, (*path, index(i)))
                _check_atomic_contents(child, item, (*path, index(i)))


def _as_decoded(v: Any) -> Any:
    """``v`` as encoding/json decodes it into ``interface{}``: every number a float64."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, dict):
        return {k: _as_decoded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_decoded(x) for x in v]
    return v


def ensure_named_fields_are_members(s: FieldSet, schema: TypeRef) -> FieldSet:
    """``s`` plus every declared struct field that has descendants in ``s``."""
    return FieldSet(_ensure(s.root, schema, True))


def _ensure(node: Node, tr: TypeRef, resource: bool = False) -> Node:
    shape = resolve(tr, {} if tr is None else None, resource=resource)
    out: Node = {}
    for pe, child in node.items():
        if pe == MEMBER:
            out[MEMBER] = {}
            continue
        c = _ensure(child, child_type(shape, pe))
        name = field_name(pe)
        if shape.kind == MAP and name is not None and name in shape.fields:
            c[MEMBER] = {}
        out[pe] = c
    return out
