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
  to ``{}``), see :func:`semantic_equal`; a member of a builtin type that is no pointer
  (``MinReadySeconds int32 `json:"minReadySeconds,omitempty"```) decodes from absent or
  ``null`` to its zero value, so ``0`` equals absent there, while a pointer one (``Privileged
  *bool``) absent is nil, unequal to ``false``: the schema cannot tell the two apart, the
  table of Go members can (``zeros``: a struct's definition name to its non-pointer builtin
  members' zero values, setpoint/cluster/registry/gomembers.py ``go_zeros``);
- a metav1.Time or MicroTime (``format: date-time``) is an instant: Semantic's registered
  equality is ``a.UTC() == b.UTC()``, at the precision it is serialized (whole seconds for
  Time, pkg/apis/meta/v1/time_proto.go keeps no nanoseconds; microseconds for MicroTime);
- a custom resource is ``map[string]interface{}``: every value sits in an interface, and an
  interface holding nil is unequal to one holding an empty slice or map, a missing key
  unequal to any value, an int64 unequal to a float64 or a bool (types first, in
  deepValueEqual), see :func:`unstructured_equal`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
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


ZeroTable = Callable[[str], Mapping[str, Any]]
"""A struct's definition name -> the zero value of each of its non-pointer builtin members."""
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"


def _no_zeros(definition: str) -> Mapping[str, Any]:
    return {}


def semantic_equal(a: Any, b: Any, schema: Schema | None, zeros: ZeroTable = _no_zeros,
                   definition: str | None = None) -> bool:
    """``Semantic.DeepEqual`` of two values of a built-in kind described by ``schema`` (None
    where the schema says nothing: compared as unstructured); ``zeros`` tells a struct's
    non-pointer builtin members, ``definition`` names the struct ``schema`` is when it is no
    ``$ref`` (a kind's own definition)."""
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
        return all(semantic_equal(x, y, items, zeros) for x, y in zip(a, b, strict=True))
    if kind == "string" and schema.raw.get("format") == "date-time":
        return _times_equal(a, b, micro=schema.ref == _MICRO_TIME)
    if kind != "object":
        return unstructured_equal(a, b)
    properties = schema.properties
    if properties:  # a struct: absent is a nil pointer, unequal to one set to {}
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return unstructured_equal(a, b)
        name = schema.ref or definition
        members = zeros(name) if name is not None else {}
        for k in a.keys() | b.keys():
            x, y = a.get(k), b.get(k)
            if k in members:  # no pointer: absent and null decode to the zero value
                zero = members[k]
                x, y = zero if x is None else x, zero if y is None else y
            if not semantic_equal(x, y, properties.get(k), zeros):
                return False
        return True
    element = schema.additional_properties
    if element is None:
        return unstructured_equal(a, b)
    if _nil_or_empty(a, dict) and _nil_or_empty(b, dict):
        return True
    if not (isinstance(a, dict) and isinstance(b, dict)) or a.keys() != b.keys():
        return False
    return all(semantic_equal(v, b[k], element, zeros) for k, v in a.items())


def _nil_or_empty(value: Any, container: type) -> bool:
    return value is None or (isinstance(value, container) and not value)


def _times_equal(a: Any, b: Any, *, micro: bool) -> bool:
    """Two times as instants at their type's serialized precision (``null`` is the zero
    time, a pointer's nil alike); text that is no RFC 3339 time compares as text."""
    x, y = _instant(a, micro), _instant(b, micro)
    if x is None or y is None:
        return unstructured_equal(a, b)
    return x == y


def _instant(value: Any, micro: bool) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed if micro else parsed.replace(microsecond=0)


def _quantities_equal(a: Any, b: Any) -> bool:
    """The registered Quantity equality: ``1`` equals ``1000m``."""
    if a is None or b is None:
        return a is b
    try:
        return parse_quantity(str(a)).cmp(parse_quantity(str(b))) == 0
    except QuantityError:
        return unstructured_equal(a, b)


__all__ = ["ZeroTable", "semantic_equal", "unstructured_equal"]
