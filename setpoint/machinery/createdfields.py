"""A create's ``fieldsV1``, remembered by the shape of the object created.

``fieldcompare.created_fields_v1`` walks a new object against its kind's zero value. What the
walk gives depends on the object's map keys, on the type of each scalar, on whether a scalar
equals the zero value's scalar at its place, and on the whole of every list (associative
lists are keyed by their items' values, sets own their values). It does not depend on any
other scalar value: the ``data`` of a ConfigMap or the labels' values change nothing in its
``fieldsV1``. Creates of one kind mostly come in a few shapes (an operator's or a
controller's objects), so the walk's answer is kept per shape and the walk done once.

The shape key keeps what the walk reads: every map key in order, every list as its JSON,
every scalar as its type and truthiness. Truthiness decides equality with the zero value's
scalars only when those are ``""``, ``0``, ``False`` or ``None``, which the Go zero value
of a built-in kind always holds (``managedfields._zero_struct``); for any other zero (a
custom resource's holds its apiVersion and kind) nothing is remembered.
"""

from __future__ import annotations

from typing import Any

import orjson

from setpoint.machinery.fieldcompare import created_fields_v1
from setpoint.machinery.fieldpath import FieldSet
from setpoint.machinery.typedvalue import TypeRef

# (schema, zero, ignored, stripped) by their ids -> (those objects, {shape key: fieldsV1
# JSON}); holding the objects keeps their ids from being reused while the entry lives
_remembered: dict[tuple[int, int, int, int], tuple[tuple[Any, ...], dict[Any, bytes]]] = {}
MAX_CONTEXTS = 64
MAX_SHAPES = 512  # per context: past this the shapes are forgotten and learnt again
_TRIVIAL_TYPES = (str, int, float, bool, type(None))


def remembered_created_fields_v1(schema: TypeRef, zero: dict[str, Any], new: dict[str, Any],
                                 ignored: FieldSet, stripped: FieldSet) -> dict[str, Any]:
    """``created_fields_v1(schema, zero, new, ignored, stripped)``, the same dict, key order
    included; a new dict every call (the caller stores it in the object it writes)."""
    context = (id(schema), id(zero), id(ignored), id(stripped))
    hit = _remembered.get(context)
    if hit is None or hit[0][0] is not schema or hit[0][1] is not zero \
            or hit[0][2] is not ignored or hit[0][3] is not stripped:
        if not _zero_scalars_trivial(zero):
            return created_fields_v1(schema, zero, new, ignored, stripped)
        if len(_remembered) >= MAX_CONTEXTS:
            _remembered.clear()
        hit = ((schema, zero, ignored, stripped), {})
        _remembered[context] = hit
    shapes = hit[1]
    try:
        key = _shape(new)
    except _Unremembered:
        return created_fields_v1(schema, zero, new, ignored, stripped)
    encoded = shapes.get(key)
    if encoded is not None:
        return orjson.loads(encoded)  # type: ignore[no-any-return]
    fields_v1 = created_fields_v1(schema, zero, new, ignored, stripped)  # (SchemaError: kept
    if len(shapes) >= MAX_SHAPES:                                         # for no shape)
        shapes.clear()
    shapes[key] = orjson.dumps(fields_v1)
    return fields_v1


class _Unremembered(Exception):
    """A value the shape key does not describe (not a plain JSON value)."""


_END = object()  # closes a map in the flat key


def _shape(new: dict[str, Any]) -> tuple[Any, ...]:
    """The shape key: flat, as building it is most of what a remembered create costs. After
    a key comes its value's truthiness (a string), ``dict``, its map's members and ``_END``,
    ``list`` and its JSON, or another scalar's type and truthiness; keys are strings, so
    no two shapes give one key."""
    out: list[Any] = []
    _members(new, out)
    return tuple(out)


def _members(m: dict[str, Any], out: list[Any]) -> None:
    for k, v in m.items():
        t = type(v)
        if type(k) is not str:
            raise _Unremembered
        if t is str:
            out.append(k)
            out.append(not v)
        elif t is dict:
            out += (k, dict)
            _members(v, out)
            out.append(_END)
        elif t is int or t is float or t is bool or v is None:
            out += (k, t, not v)
        elif t is list:
            try:
                encoded = orjson.dumps(v)
            except TypeError:  # (not JSON: an int past 64 bits, a non-string key...)
                raise _Unremembered from None
            if b"null" in encoded:  # orjson writes NaN and infinities (from YAML) as null too
                raise _Unremembered
            out += (k, list, encoded)
        else:
            raise _Unremembered


def _zero_scalars_trivial(zero: Any) -> bool:
    """Every scalar of ``zero`` is ``""``, ``0``, ``False`` or ``None``: then whether a new
    scalar equals it follows from the new one's type and truthiness."""
    if isinstance(zero, dict):
        return all(_zero_scalars_trivial(v) for v in zero.values())
    if isinstance(zero, list):
        return all(_zero_scalars_trivial(v) for v in zero)
    return isinstance(zero, _TRIVIAL_TYPES) and not zero
