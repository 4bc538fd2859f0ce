"""The members a built-in object always has once Go has decoded and encoded it.

kube-apiserver decodes a body into the kind's Go struct and encodes the struct it stores, so
what JSON lacks comes back as Go's ``encoding/json`` writes it: a non-pointer struct member
always (``omitempty`` never omits a struct: a Deployment's ``status: {}``, an EndpointSlice
endpoint's ``conditions: {}``), a builtin member that is not ``omitempty`` as its zero value
(a StatefulSet's ``serviceName: ""``, a VolumeAttachment's ``attached: false``), a
non-pointer metav1.Time or MicroTime as ``null`` when zero (an Event's ``eventTime``, a
template's ``creationTimestamp``), each inside the structs it belongs to. An object stored
as protobuf (every built-in kind kube-apiserver keeps: the storage codec of k8s.io/apiserver
pkg/server/storage/storage_codec.go encodes ``application/vnd.kubernetes.protobuf``, which has
no way to tell a nil slice or map from an empty one) reads back with a slice or map member that
is not ``omitempty`` as ``null`` when it was absent or empty (an aggregated ClusterRole's
``rules``, an HPA's ``status.currentMetrics``): Go decodes no entries to nil, and
``encoding/json`` writes nil as ``null``. defaulter-gen's
``+default=`` tags fill the same members with their tag's value (a ServicePort's
``protocol: TCP``).

openapi-gen records all but the times as the OpenAPI v3 ``default`` of each member
(k8s.io/kube-openapi pkg/generators/openapi.go ``mustEnforceDefault``), so one table,
``gomembers.json``, written by tools/openapi_defaults.py from the Go sources of k8s.io/api
v0.32.0 and its siblings, serves both the v3 documents and the writes here.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions

_DATA = Path(__file__).with_name("gomembers.json")
_REF_PREFIXES = ("#/$defs/", "#/definitions/")
_NO_DEFAULT = object()
NULL_WHEN_ZERO = "x-go-null-when-zero"  # (tools/openapi_defaults.py marks them with it)
NULL_WHEN_EMPTY = "x-go-null-when-empty"  # a slice or map without omitempty (same tool)
GO_ZERO = "x-go-zero"  # a non-pointer builtin member: its zero value (same tool)
_SCALARS: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,),
                                         "integer": (int,), "number": (int, float)}


@functools.cache
def member_defaults() -> dict[str, dict[str, dict[str, Any]]]:
    """Each definition's members' ``default`` (and its items' or values'), by member name."""
    # (orjson: half the stdlib's time for these 200 KB, read before the server serves)
    table: dict[str, dict[str, dict[str, Any]]] = orjson.loads(_DATA.read_bytes())
    return table


@functools.cache
def go_zeros(definition: str) -> dict[str, Any]:
    """The zero value of each member of ``definition`` that is a builtin and no pointer (Go
    decodes it absent or ``null`` to that value): machinery.equality's ``ZeroTable``."""
    return {name: entry[GO_ZERO] for name, entry in member_defaults().get(definition, {}).items()
            if GO_ZERO in entry}


class _Plan(NamedTuple):
    """What ``fill`` does for one definition: the members to give a value when absent (a
    struct's ``{}`` or a builtin's value), then those to descend into, by shape."""

    values: tuple[tuple[str, Any], ...]
    nulls: tuple[str, ...]  # the non-pointer times: written as null when zero
    empties: tuple[str, ...]  # slices and maps without omitempty: null when stored empty
    objects: tuple[tuple[str, str], ...]
    arrays: tuple[tuple[str, str], ...]
    maps: tuple[tuple[str, str], ...]

    def __bool__(self) -> bool:
        return bool(self.values or self.nulls or self.empties or self.objects or self.arrays
                    or self.maps)


def _ref(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if ref is None:
        for part in schema.get("allOf") or ():
            ref = part.get("$ref") if isinstance(part, dict) else None
            if ref:
                break
    if not isinstance(ref, str):
        return None
    for prefix in _REF_PREFIXES:
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return None


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def _fits(default: Any, schema: dict[str, Any], child: str | None) -> bool:
    """Whether ``default`` is a value of ``schema``: a struct's ``{}`` only for a reference to
    an object (not metav1.Duration, a struct Go writes as a string), a builtin's value only
    of its own JSON type."""
    if isinstance(default, dict):
        target = definitions().raw.get(child or "")
        return default == {} and target is not None and "object" in _types(target)
    return any(isinstance(default, py) and not (py is int and isinstance(default, bool))
               for name in _types(schema) for py in _SCALARS.get(name, ()))


_in_progress: set[str] = set()


def _has_work(definition: str) -> bool:
    # a definition that (indirectly) holds itself counts as having work: its plan is still
    # being made, and descending into it finds out per object
    return definition in _in_progress or bool(_plan(definition))


@functools.cache
def _plan(definition: str) -> _Plan:
    """The plan of ``definition``, made once."""
    _in_progress.add(definition)
    try:
        raw = definitions().raw.get(definition) or {}
        defaults = member_defaults().get(definition, {})
        values: list[tuple[str, Any]] = []
        nulls: list[str] = []
        empties: list[str] = []
        by_shape: dict[str, list[tuple[str, str]]] = {"object": [], "array": [], "map": []}
        for name, schema in (raw.get("properties") or {}).items():
            if not isinstance(schema, dict):
                continue
            child, shape = _ref(schema), "object"
            if child is None and isinstance(schema.get("items"), dict):
                child, shape = _ref(schema["items"]), "array"
            elif child is None and isinstance(schema.get("additionalProperties"), dict):
                child, shape = _ref(schema["additionalProperties"]), "map"
            entry = defaults.get(name) or {}
            default = entry.get("default", _NO_DEFAULT)
            if entry.get(NULL_WHEN_ZERO):
                nulls.append(name)
            if entry.get(NULL_WHEN_EMPTY):
                empties.append(name)
            if shape == "object" and default is not _NO_DEFAULT and _fits(default, schema,
                                                                          child):
                values.append((name, default))
            if child is not None and _has_work(child):
                by_shape[shape].append((name, child))
        return _Plan(tuple(values), tuple(nulls), tuple(empties), tuple(by_shape["object"]),
                     tuple(by_shape["array"]), tuple(by_shape["map"]))
    finally:
        _in_progress.discard(definition)


def fill(obj: Obj, definition: str, protobuf: bool = False, *,
         decoded: bool = False) -> None:
    """Give ``obj``, an object of ``definition``, the members Go would write though they are
    absent or null (in place; nested structs, list items and map values included); with
    ``protobuf`` (an object that is stored), also the ``null`` of its empty slices and maps
    that are not ``omitempty``; with ``decoded`` (an object just decoded into the Go struct,
    not yet stored), the ``null`` of those that are absent, an empty one kept as it came
    (a non-nil empty slice: encoding/json writes ``[]``)."""
    values, nulls, empties, objects, arrays, maps = _plan(definition)
    for name, default in values:
        if obj.get(name) is None:
            obj[name] = {} if default.__class__ is dict else default
    for name in nulls:
        if name not in obj:
            obj[name] = None
    if protobuf:
        for name in empties:
            if not obj.get(name):  # absent, [], {} or null: no entries in the protobuf
                obj[name] = None
    elif decoded:
        for name in empties:
            if name not in obj:
                obj[name] = None
    for name, child in objects:
        value = obj.get(name)
        if value.__class__ is dict:
            fill(value, child, protobuf, decoded=decoded)
    for name, child in arrays:
        items = obj.get(name)
        if items.__class__ is list:
            for item in items:
                if item.__class__ is dict:
                    fill(item, child, protobuf, decoded=decoded)
    for name, child in maps:
        entries = obj.get(name)
        if entries.__class__ is dict:
            for item in entries.values():
                if item.__class__ is dict:
                    fill(item, child, protobuf, decoded=decoded)


def keep_sent_empties(sent: Any, decoded: Any, definition: str) -> None:
    """Put back into ``decoded`` (in place) the empty slices and maps that are not
    ``omitempty`` which ``sent`` had and typed decoding left out: decoding into the Go struct
    makes them non-nil empty ones, which ``encoding/json`` writes as ``[]`` / ``{}`` until
    storage's protobuf round trip makes them nil."""
    if sent.__class__ is not dict or decoded.__class__ is not dict:
        return
    _, _, empties, objects, arrays, maps = _plan(definition)
    for name in empties:
        value = sent.get(name)
        if (value == [] or value == {}) and name not in decoded:
            decoded[name] = value.__class__()
    for name, child in objects:
        keep_sent_empties(sent.get(name), decoded.get(name), child)
    for name, child in arrays:
        items, out = sent.get(name), decoded.get(name)
        if items.__class__ is list and out.__class__ is list and len(items) == len(out):
            for item, item_out in zip(items, out, strict=True):
                keep_sent_empties(item, item_out, child)
    for name, child in maps:
        entries, out = sent.get(name), decoded.get(name)
        if entries.__class__ is dict and out.__class__ is dict:
            for key, item_out in out.items():
                keep_sent_empties(entries.get(key), item_out, child)


def keep_sent_empties_of_kind(group: str, version: str, kind: str, sent: Any,
                              decoded: Obj) -> None:
    """``keep_sent_empties`` for an object of a built-in kind."""
    definition = definitions().name_for_kind(group, version, kind)
    if definition is not None:
        keep_sent_empties(sent, decoded, definition)


def fill_kind(group: str, version: str, kind: str, obj: Obj, protobuf: bool = False, *,
              decoded: bool = False) -> None:
    """``fill`` for an object of a built-in kind (nothing for a kind without a definition);
    ``protobuf`` for an object of a kind the apiserver stores, as it is stored; ``decoded``
    for one as it was decoded."""
    definition = definitions().name_for_kind(group, version, kind)
    if definition is not None:
        fill(obj, definition, protobuf, decoded=decoded)


def fill_member(group: str, version: str, kind: str, obj: Obj, member: str) -> None:
    """``fill`` for one member of a stored object of a built-in kind: what a strategy set
    after the object was decoded (a status it reset)."""
    definition = definitions().name_for_kind(group, version, kind)
    if definition is None:
        return
    values, _, empties, objects, _, _ = _plan(definition)
    if obj.get(member) is None:
        for name, default in values:
            if name == member:
                obj[member] = {} if default.__class__ is dict else default
    if member in empties and not obj.get(member):
        obj[member] = None
    value = obj.get(member)
    for name, child in objects:
        if name == member and value.__class__ is dict:
            fill(value, child, protobuf=True)


__all__ = ["GO_ZERO", "NULL_WHEN_EMPTY", "NULL_WHEN_ZERO", "fill", "fill_kind", "fill_member",
           "go_zeros", "keep_sent_empties", "keep_sent_empties_of_kind", "member_defaults"]
