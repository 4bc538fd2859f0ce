"""``apiequality.Semantic.DeepEqual`` over the JSON form of an object.

kube-apiserver's strategies decide whether a spec changed (PrepareForUpdate's generation) and
whether an immutable field moved (ValidateImmutableField) with
k8s.io/apimachinery pkg/api/equality/semantic.go ``Semantic.DeepEqual``: the forked
reflect.DeepEqual of third_party/forked/golang/reflect/deep_equal.go with
``equateNilAndEmpty`` (an empty slice or map equals a nil one) and the registered
equalities (a Quantity by its value, ``a.Cmp(b) == 0``).

What Go compares is the decoded value, so the two forms differ:

- a built-in kind is a typed struct: its OpenAPI schema tells a slice or map (absent, null
  and empty are all nil-or-empty, equal) from a struct (a pointer one absent is nil, unequal
  to ``{}``), see :func:`semantic_equal`;
- a custom resource is ``map[string]interface{}``: every value sits in an interface, and an
  interface holding nil is unequal to one holding an empty slice or map, a missing key
  unequal to any value, an int64 unequal to a float64 or a bool (types first, in
  deepValueEqual), see :func:`unstructured_equal`.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.quantity import QuantityError, parse_quantity
from setpoint.machinery.schema import Schema


def unstructured_equal(a: Any, b: Any) -> bool:
    """``Semantic.DeepEqual`` of two values of an unstructured object: JSON equality where
    a value's Go type counts (``true`` is not ``1``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(unstructured_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(unstructured_equal(x, y) for x, y in zip(a, b,
                                                                                 strict=True))
    return bool(a == b)


def semantic_equal(a: Any, b: Any, schema: Schema | None) -> bool:
    """``Semantic.DeepEqual`` of two values of a built-in kind described by ``schema`` (None
    where the schema says nothing: compared as unstructured)."""
    if schema is None or schema.type is None:
        if schema is not None and schema.raw.get("format") == "quantity":
            return _quantities_equal(a, b)
        return unstructured_equal(a, b)
    kind = schema.type
    if kind == "array":
        if _nil_or_empty(a, list) and _nil_or_empty(b, list):
            return True
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return False
        items = schema.items
        return all(semantic_equal(x, y, items) for x, y in zip(a, b, strict=True))
    if kind != "object":
        return unstructured_equal(a, b)
    properties = schema.properties
    if properties:  # a struct: absent is a nil pointer, unequal to one set to {}
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return unstructured_equal(a, b)
        return all(semantic_equal(a.get(k), b.get(k), properties.get(k))
                   for k in a.keys() | b.keys())
    element = schema.additional_properties
    if element is None:
        return unstructured_equal(a, b)
    if _nil_or_empty(a, dict) and _nil_or_empty(b, dict):
        return True
    if not (isinstance(a, dict) and isinstance(b, dict)) or a.keys() != b.keys():
        return False
    return all(semantic_equal(v, b[k], element) for k, v in a.items())


def _nil_or_empty(value: Any, container: type) -> bool:
    return value is None or (isinstance(value, container) and not value)


def _quantities_equal(a: Any, b: Any) -> bool:
    """The registered Quantity equality: ``1`` equals ``1000m``."""
    if a is None or b is None:
        return a is b
    try:
        return parse_quantity(str(a)).cmp(parse_quantity(str(b))) == 0
    except QuantityError:
        return unstructured_equal(a, b)


__all__ = ["semantic_equal", "unstructured_equal"]
